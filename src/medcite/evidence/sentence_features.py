"""Features of a candidate answer sentence, shared by the ideal-answer scorer (:mod:`medcite.qa.ideal`) and the
answer-sentence evidence selector (:mod:`medcite.evidence.answer_features`).

Features of a sentence (``FEATURES``): where it is (snippet rank, position in its snippet, title or not), how
long, how often the snippets repeat it, how close it is to the question (TF-IDF cosine, shared words and,
with an encoder, MiniLM cosine), how central it is among the snippets (mean and max similarity to the
others), surface cues (numbers, p-values, first-person study talk, conclusions) and the question type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..types import QUESTION_TYPES
from .tfidf_mmr import tfidf_vectors

#: a sentence encoder: texts -> L2-normalised rows
TextEncoder = Callable[[Sequence[str]], np.ndarray]

_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(
    "a an the of in on for to and or is are was were be been by with as at from that this these those which what "
    "who whom whose how why when where does do did can could should would may might will has have had it its "
    "their there than not no any all some such into about between within via per".split())
_NUMBER = re.compile(r"\d")
_PVALUE = re.compile(r"\b[pP]\s*[<=>≤]|\b95\s*%|\bCI\b|\bOR\b|\bHR\b|\bRR\b")
_STUDY = re.compile(r"\b(we|our|us|here)\b", re.IGNORECASE)
_CONCLUDE = re.compile(r"^(in conclusion|conclusions?|in summary|taken together|overall|thus|therefore|these "
                       r"(data|results|findings))\b", re.IGNORECASE)
_DEFINE = re.compile(r"\b(is|are) (a|an|the)\b", re.IGNORECASE)
# a structured abstract's part label at the start of a sentence ("CONCLUSIONS:", "Results -"): never part of
# an answer
_LABEL_WORD = (r"(?:background|introduction|objectives?|aims?|purpose|methods?|methodology|materials|results?|"
               r"conclusions?|interpretation|findings|significance|context|design|setting|summary|discussion)")
_LABEL = re.compile(rf"^\s*{_LABEL_WORD}(?:\s*(?:and|&|/|,)\s*{_LABEL_WORD})*\s*[:\-\u2013]\s+(?=\S)",
                    re.IGNORECASE)

LEXICAL = ("snippet_rank", "snippet_rank_rel", "first_snippet", "position", "first_in_snippet", "last_in_snippet",
           "sentences_in_snippet", "title", "words", "copies", "near_copies", "snippets", "candidates",
           "tfidf_question", "tfidf_question_rank", "question_words_covered", "sentence_words_in_question",
           "tfidf_centrality", "tfidf_max_other", "tfidf_centrality_rank", "numbers", "p_values", "study_talk",
           "conclusion_cue", "definition_cue", "bigram_consensus", "bigram_shared", "bigram_consensus_rank",
           "word_consensus", "word_consensus_rank", "question_bigrams", "words_rank",
           *(f"type_{t}" for t in QUESTION_TYPES))
DENSE = ("dense_question", "dense_question_rank", "dense_centrality", "dense_max_other", "dense_centrality_rank")
FEATURES = LEXICAL + DENSE
#: the version of :func:`features`' code, stored in every scorer trained on it; bump it whenever a feature's
#: definition changes (the shipped scorer's test fails until it is rebuilt: tests/unit/test_shipped_models.py)
FEATURE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """A distinct snippet sentence: its first occurrence (snippet index and position) and repeat count."""

    text: str
    snippet: int
    position: int
    of: int
    title: bool
    copies: int = 1


def strip_label(text: str) -> str:
    """``text`` without a leading structured-abstract label ("CONCLUSIONS: ..." -> "...")."""
    return _LABEL.sub("", text, count=1)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP and len(w) > 1}


def _rank(values: np.ndarray) -> np.ndarray:
    """0 for the largest value, 1 for the next, ..., divided by the count (ties: first first)."""
    order = np.argsort(-values, kind="stable")
    r = np.empty(len(values))
    r[order] = np.arange(len(values))
    return r / max(1, len(values))


def consensus(cands: Sequence[Candidate]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sentence: the mean number of *other* sentences (copies counted) that share each of its word
    bigrams, the share of its bigrams found elsewhere, and the same mean for its content words. Ideal answers
    are written from the snippets, so what several snippets say is what they tend to say (a centroid
    summariser's signal, Radev et al. 2004, on bigrams as ROUGE-2 counts them)."""
    grams = [set(zip(ws, ws[1:], strict=False)) for ws in (words(c.text) for c in cands)]
    unis = [content_words(c.text) for c in cands]
    df: dict[tuple[str, str], int] = {}
    uf: dict[str, int] = {}
    for c, g, u in zip(cands, grams, unis, strict=True):
        for b in g:
            df[b] = df.get(b, 0) + c.copies
        for w in u:
            uf[w] = uf.get(w, 0) + c.copies
    n = len(cands)
    mean_b, shared, mean_u = np.zeros(n), np.zeros(n), np.zeros(n)
    for k, (g, u) in enumerate(zip(grams, unis, strict=True)):
        if g:
            others = [df[b] - 1 for b in g]  # the sentence itself counts once among its copies
            mean_b[k] = float(np.mean(others))
            shared[k] = float(np.mean([o > 0 for o in others]))
        if u:
            mean_u[k] = float(np.mean([uf[w] - 1 for w in u]))
    return mean_b, shared, mean_u


def _centrality(sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(sim)
    if n < 2:
        return np.zeros(n), np.zeros(n)
    off = sim - np.eye(n) * sim.diagonal()
    return off.sum(1) / (n - 1), np.where(np.eye(n, dtype=bool), -np.inf, sim).max(1)


def similarity(question: str, cands: Sequence[Candidate], encoder: TextEncoder | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(TF-IDF cosine to the question, TF-IDF sentence-by-sentence cosine, and the same two by ``encoder``)."""
    texts = [c.text for c in cands]
    try:
        cand, qry = tfidf_vectors(texts, [question])
        to_q = np.asarray((cand @ qry.T).toarray()).ravel()  # type: ignore[attr-defined]
        sim = np.asarray((cand @ cand.T).toarray())  # type: ignore[attr-defined]
    except ValueError:  # only stop words
        to_q, sim = np.zeros(len(texts)), np.eye(len(texts))
    if encoder is None:
        return to_q, sim, None, None
    vecs = encoder([question, *texts])
    return to_q, sim, vecs[1:] @ vecs[0], vecs[1:] @ vecs[1:].T


def features(question: str, qtype: str, cands: Sequence[Candidate], sims: tuple[np.ndarray, np.ndarray,
             np.ndarray | None, np.ndarray | None]) -> np.ndarray:
    """One row of ``FEATURES`` per candidate (the dense columns are 0 without an encoder)."""
    n = len(cands)
    if not n:
        return np.zeros((0, len(FEATURES)), dtype=np.float32)
    to_q, sim, d_q, d_sim = sims
    q_words = content_words(question)
    n_snippets = max(c.snippet for c in cands) + 1
    cent, cmax = _centrality(sim)
    cons_b, cons_shared, cons_u = consensus(cands)
    qw = words(question)
    q_bigrams = set(zip(qw, qw[1:], strict=False))
    rows = []
    for k, c in enumerate(cands):
        cw = content_words(c.text)
        rows.append([
            c.snippet, c.snippet / n_snippets, float(c.snippet == 0), c.position, float(c.position == 0),
            float(c.position == c.of - 1), c.of, float(c.title), len(c.text.split()), c.copies,
            float((sim[k] > 0.8).sum() - 1), n_snippets, n, to_q[k], 0.0,
            len(cw & q_words) / max(1, len(q_words)), len(cw & q_words) / max(1, len(cw)), cent[k], cmax[k], 0.0,
            len(_NUMBER.findall(c.text)), len(_PVALUE.findall(c.text)), len(_STUDY.findall(c.text)),
            float(bool(_CONCLUDE.search(c.text))), float(bool(_DEFINE.search(c.text))),
            cons_b[k], cons_shared[k], 0.0, cons_u[k], 0.0,
            len(set(zip(ws := words(c.text), ws[1:], strict=False)) & q_bigrams) / max(1, len(q_bigrams)), 0.0,
            *(float(qtype == t) for t in QUESTION_TYPES),
        ])
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    x[:, : len(LEXICAL)] = np.asarray(rows, dtype=np.float64)
    x[:, LEXICAL.index("tfidf_question_rank")] = _rank(to_q)
    x[:, LEXICAL.index("tfidf_centrality_rank")] = _rank(cent)
    x[:, LEXICAL.index("bigram_consensus_rank")] = _rank(cons_b)
    x[:, LEXICAL.index("word_consensus_rank")] = _rank(cons_u)
    x[:, LEXICAL.index("words_rank")] = _rank(x[:, LEXICAL.index("words")])
    if d_q is not None and d_sim is not None:
        dcent, dmax = _centrality(d_sim)
        at = len(LEXICAL)
        x[:, at: at + 5] = np.column_stack([d_q, _rank(d_q), dcent, dmax, _rank(dcent)])
    return x.astype(np.float32)
