"""Extractive ideal answers: score the snippets' sentences, then select, order and trim them.

BioASQ ideal answers reuse snippet sentences (the first gold snippet alone scores ROUGE-2 F1 ~0.44 against
them on held-back questions; the best choice of snippet sentences ~0.69). The gap is closed by *learning*
which sentences they reuse: each candidate sentence gets the features below, a scorer trained by ``medcite
train ideal`` (labels: ROUGE-2 overlap of the sentence with the gold ideal answers) scores it, and the answer
is assembled by maximal marginal relevance (Carbonell & Goldstein 1998): the best sentence first (the one
that answers the question), then further sentences while their score stays within ``keep_ratio`` of the
best, none too similar to one already taken, within ``max_words`` words.

Features of a sentence (``FEATURES``): where it is (snippet rank, position in its snippet, title or not), how
long, how often the snippets repeat it, how close it is to the question (TF-IDF cosine, shared words and,
with an encoder, MiniLM cosine), how central it is among the snippets (mean and max similarity to the
others), surface cues (numbers, p-values, first-person study talk, conclusions) and the question type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..evidence.sentences import split_spans
from ..evidence.tfidf_mmr import tfidf_vectors
from ..io import write_json
from ..types import QUESTION_TYPES, Snippet

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


def candidates(snippets: Sequence[Snippet]) -> list[Candidate]:
    """The distinct sentences of the snippets in snippet order (a repeated sentence counts its copies)."""
    first: dict[str, int] = {}
    out: list[Candidate] = []
    copies: list[int] = []
    for i, s in enumerate(snippets):
        spans = split_spans(s.text) or [(0, len(s.text))]
        for j, (a, b) in enumerate(spans):
            text = strip_label(" ".join(s.text[a:b].split()))
            if len(words(text)) < 2:
                continue
            key = text.lower()
            if key in first:
                copies[first[key]] += 1
                continue
            first[key] = len(out)
            out.append(Candidate(text, i, j, len(spans), s.begin_section == "title"))
            copies.append(1)
    return [Candidate(c.text, c.snippet, c.position, c.of, c.title, n) for c, n in zip(out, copies, strict=True)]


def snippet_candidates(snippets: Sequence[Snippet]) -> list[Candidate]:
    """The distinct snippets as whole candidates (structured-abstract label stripped, copies counted).

    On held-back BioASQ questions the best single *snippet* reaches ROUGE-2 F1 0.67 against the ideal answers
    and the best single sentence 0.66, but a learned scorer picks whole snippets far better (0.48 against
    0.43 for sentences; docs/QA.md): a snippet is the unit the experts who wrote the ideal answer chose.
    """
    at: dict[str, int] = {}
    out: list[Candidate] = []
    for i, s in enumerate(snippets):
        text = strip_label(" ".join(s.text.split()))
        if len(words(text)) < 2:
            continue
        key = text.lower()
        if key in at:
            c = out[at[key]]
            out[at[key]] = Candidate(c.text, c.snippet, 0, 1, c.title, c.copies + 1)
            continue
        at[key] = len(out)
        out.append(Candidate(text, i, 0, 1, s.begin_section == "title"))
    return out


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


def assemble(cands: Sequence[Candidate], scores: Sequence[float] | np.ndarray, sim: np.ndarray, *, max_words: int = 200,
             keep_ratio: float = 1.0, max_sentences: int = 10, lam: float = 0.7, max_overlap: float = 0.6
             ) -> list[int]:
    """Indices of the chosen sentences, in answer order: the best-scoring one first, then by MMR
    (``lam * score - (1 - lam) * max similarity to those chosen``) among sentences scoring at least
    ``keep_ratio`` times the best (scores shifted to be positive) and at most ``max_overlap`` similar to a
    chosen one, while the words fit in ``max_words``. A lead sentence longer than the cap is still chosen
    (:func:`join_capped` trims it)."""
    n = len(cands)
    if not n:
        return []
    s = np.asarray(scores, dtype=np.float64)
    s = (s - s.min()) / (s.max() - s.min()) if s.max() > s.min() else np.ones(n)
    lead = int(np.argmax(s))
    chosen, used = [lead], len(cands[lead].text.split())
    floor = keep_ratio * s[lead]
    rest = [i for i in range(n) if i != lead and s[i] >= floor]
    while rest and len(chosen) < max_sentences:
        best, best_val = -1, -np.inf
        for i in rest:
            redundancy = max(sim[i, j] for j in chosen)
            if redundancy > max_overlap or used + len(cands[i].text.split()) > max_words:
                continue
            val = lam * s[i] - (1 - lam) * redundancy
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        chosen.append(best)
        used += len(cands[best].text.split())
        rest.remove(best)
    return chosen


def join_capped(texts: Sequence[str], max_words: int) -> str:
    """The sentences joined by spaces, cut to ``max_words`` words (a cut sentence ends with '...')."""
    out: list[str] = []
    for t in texts:
        w = t.split()
        room = max_words - len(out)
        if room <= 0:
            break
        if len(w) > room:
            out.extend(w[:room])
            out[-1] = out[-1].rstrip(".,;:") + "..."
            break
        out.extend(w)
    return " ".join(out)


HEAD_FILE = "ideal_head.json"
BOOSTER_FILE = "ideal_lgbm.txt"
FORMAT = "medcite-ideal-scorer/1"


@dataclass
class IdealScorer:
    """A LightGBM regressor (Ke et al. 2017) from ``features`` of a candidate to its ROUGE-2 F1 against the
    gold ideal answers, with the candidate unit and the assembly settings it was tuned with."""

    booster: Any  # lightgbm.Booster
    features: tuple[str, ...]
    unit: str = "snippet"
    meta: dict[str, Any] = field(default_factory=dict)

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of :func:`features`' output."""
        if not len(x):
            return np.zeros(0)
        cols = [FEATURES.index(f) for f in self.features]
        return np.asarray(self.booster.predict(x[:, cols], num_threads=1), dtype=np.float64)

    def save(self, folder: Path) -> None:
        self.booster.save_model(str(folder / BOOSTER_FILE))
        write_json(folder / HEAD_FILE, {"format": FORMAT, "feature_version": FEATURE_VERSION,
                                         "features": list(self.features), "unit": self.unit,
                                         "booster": BOOSTER_FILE, **({"meta": self.meta} if self.meta else {})})

    @classmethod
    def load(cls, folder: Path) -> IdealScorer:
        from ..registry import require
        from ..trained_models import make_command
        from .models import read_head

        data = read_head(folder, HEAD_FILE, FORMAT, "ideal", FEATURE_VERSION)
        lgb = require("lightgbm", "qa", "the ideal-answer sentence scorer")
        try:
            feats = tuple(str(f) for f in data["features"])
            unknown = [f for f in feats if f not in FEATURES]
            if unknown or data.get("unit") not in ("snippet", "sentence"):
                raise ValueError(f"unknown features {unknown} or unit {data.get('unit')!r}")
            booster = lgb.Booster(model_file=str(folder / BOOSTER_FILE))
            if booster.num_feature() != len(feats):
                raise ValueError(f"the booster reads {booster.num_feature()} features, the head lists {len(feats)}")
        except (KeyError, TypeError, ValueError, lgb.basic.LightGBMError) as exc:
            raise ConfigError(f"{folder} is not a readable ideal-answer scorer ({exc})",
                              hint=f"retrain it with `{make_command('medcite-ideal')}`") from None
        return cls(booster, feats, str(data["unit"]), data.get("meta") or {})
