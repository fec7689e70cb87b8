"""Factoid and list answers: candidate entities chunked from the snippets, then ranked.

No noun-chunk or biomedical NER model installs from PyPI without fetching weights at run time (spaCy and
scispaCy models are hosted elsewhere; the PyPI re-uploads are unofficial copies), so candidates come from a
documented pattern-based chunker: a snippet is tokenised (keeping ``G1P[8]``, ``CNV-RF``, ``28.1``, ``IL-6``
whole), cut into chunks at punctuation, stop words, common verbs and lower-case words sharing a stem with a question
word, and every 1-4 token span of a chunk that
neither starts nor ends with a weak word is a candidate. A span whose words are all in the question is
dropped (an answer rarely repeats the question).

Ranking: ``frequency`` counts the snippets that contain the candidate (the baseline; ties: the longer, then
the earlier); a trained ranker (``medcite train entities``) scores ``FEATURES`` of each candidate: frequency,
shape (capitals, digits, hyphens: gene- and drug-like tokens), length, overlap with and distance to the
question's words, whether it follows or precedes the question's answer-type word ("which *gene*" ->
"the BRCA1 gene"), whether it sits in an enumeration (lists), and which question type asks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..types import Snippet

_TOKEN = re.compile(r"[A-Za-z0-9α-ωΑ-Ω](?:[\w\-/+.'\[\]α-ωΑ-Ω]*[\w\]α-ωΑ-Ω+])?|[^\w\s]")
_BREAK_PUNCT = set(",;:.()!?\"{}<>=")
STOP = frozenset("""a an the of in on for to and or is are was were be been being by with as at from that this these
those which what who whom whose how why when where does do did can could should would may might will has have had
it its their there than not no any all some such into about between within via per also both each either neither
other others more most less least very well only after before during while upon over under against among through
whereas however thus therefore here we our us they them he she his her i you your one two three several many
much few using used use based including include includes included shown show shows showed found find finds
reported report reports known called termed named associated related involved caused cause causes due like
type types patients patient study studies results result role effect effects case cases""".split())
_WEAK_EDGE = re.compile(r"^(?:\w+ly|\w+ing|\w+ed)$", re.IGNORECASE)
_FOCUS = re.compile(r"\b(?:which|what|name|list)\s+(?:(?:are|is|the|of|a|an|kind|type|types)\s+)*([a-z][\w-]*)",
                    re.IGNORECASE)

FEATURES = ("snippets_with", "snippets_with_rel", "occurrences", "tokens", "chars", "capitals", "digits",
            "hyphen_or_bracket", "all_lower", "mixed_case_token", "first_snippet", "first_position",
            "question_overlap", "near_question", "near_focus", "in_enumeration", "is_maximal", "longest_rank",
            "freq_rank", "type_factoid", "type_list")


@dataclass
class Entity:
    """A candidate answer: its surface form (first seen) and where it occurs."""

    text: str
    key: str
    snippets: set[int] = field(default_factory=set)
    occurrences: int = 0
    first: tuple[int, int] = (10**9, 10**9)  # (snippet, token)
    near_question: int = 0
    near_focus: int = 0
    in_enumeration: int = 0


def normalize(text: str) -> str:
    """Lower case, whitespace collapsed, outer punctuation dropped: how answers are compared."""
    return " ".join(text.lower().split()).strip(" .,;:'\"()")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def focus_word(question: str) -> str | None:
    """The answer-type word of a question: "Which *gene* ...", "What *drug* ...", "List *inhibitors* ..."."""
    m = _FOCUS.search(question)
    if not m:
        return None
    word = m.group(1).lower()
    return None if word in STOP else word.rstrip("s") or word


def _stem(word: str) -> str:
    return word.lower()[:5]


def _chunks(toks: Sequence[str], q_stems: frozenset[str] = frozenset()) -> list[list[tuple[int, str]]]:
    """Runs of tokens between breaks: punctuation, stop words, and lower-case words sharing a 5-letter stem
    with a question word ("Which drugs *inhibit* X?" -> "imatinib | inhibits | X")."""
    out: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    for i, t in enumerate(toks):
        if t in _BREAK_PUNCT or t.lower() in STOP or (len(t) == 1 and not t.isalnum()) \
                or (t.islower() and len(t) > 3 and _stem(t) in q_stems):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append((i, t))
    if cur:
        out.append(cur)
    return out


def extract(question: str, snippets: Sequence[Snippet], max_tokens: int = 4) -> list[Entity]:
    """Candidate entities of the snippets, in order of first occurrence."""
    q_words = {t.lower() for t in tokens(question)}
    q_stems = frozenset(_stem(w) for w in q_words if w.isalpha() and len(w) > 3 and w not in STOP)
    focus = focus_word(question)
    found: dict[str, Entity] = {}
    for si, s in enumerate(snippets):
        toks = tokens(s.text)
        lower = [t.lower() for t in toks]
        q_pos = [i for i, t in enumerate(lower) if t in q_words and t not in STOP]
        f_pos = [i for i, t in enumerate(lower) if focus and t.rstrip("s") == focus]
        for chunk in _chunks(toks, q_stems):
            for a in range(len(chunk)):
                for b in range(a, min(len(chunk), a + max_tokens)):
                    span = chunk[a: b + 1]
                    words = [t for _, t in span]
                    if _WEAK_EDGE.match(words[0]) or _WEAK_EDGE.match(words[-1]):
                        continue
                    if all(w.lower() in q_words for w in words) or (focus and words[-1].lower().rstrip("s") == focus
                                                                    and len(words) == 1):
                        continue
                    text = " ".join(words)
                    key = normalize(text)
                    if not key or key.isdigit() and len(key) < 2:
                        continue
                    e = found.setdefault(key, Entity(text, key))
                    start, end = span[0][0], span[-1][0]
                    e.snippets.add(si)
                    e.occurrences += 1
                    e.first = min(e.first, (si, start))
                    if any(abs(p - start) <= 5 or abs(p - end) <= 5 for p in q_pos):
                        e.near_question += 1
                    if any(0 < p - end <= 2 or 0 < start - p <= 3 for p in f_pos):
                        e.near_focus += 1
                    before = toks[start - 1] if start > 0 else ""
                    after = toks[end + 1] if end + 1 < len(toks) else ""
                    if before in (",", "and", "or") or after in (",", "and", "or"):
                        e.in_enumeration += 1
    return sorted(found.values(), key=lambda e: e.first)


def _within(short: str, long: str) -> bool:
    """``short`` is ``long`` or a run of its whole words."""
    return f" {short} " in f" {long} "


def features(question: str, qtype: str, entities: Sequence[Entity], n_snippets: int) -> np.ndarray:
    """One row of ``FEATURES`` per candidate."""
    if not entities:
        return np.zeros((0, len(FEATURES)), dtype=np.float32)
    q_words = {t.lower() for t in tokens(question)}
    keys = {e.key for e in entities}
    freq = np.array([len(e.snippets) for e in entities], dtype=np.float64)
    order = np.argsort(-freq, kind="stable")
    freq_rank = np.empty(len(entities))
    freq_rank[order] = np.arange(len(entities))
    rows = []
    for k, e in enumerate(entities):
        words = e.text.split()
        rows.append([
            len(e.snippets), len(e.snippets) / max(1, n_snippets), e.occurrences, len(words), len(e.text),
            sum(c.isupper() for c in e.text), sum(c.isdigit() for c in e.text),
            float(any(c in e.text for c in "-[]/")), float(e.text.islower()),
            float(any(any(c.isupper() for c in w[1:]) for w in words)), float(e.first[0] == 0), e.first[1],
            sum(w.lower() in q_words for w in words) / len(words), e.near_question / max(1, e.occurrences),
            e.near_focus, e.in_enumeration / max(1, e.occurrences),
            float(not any(k2 != e.key and _within(e.key, k2) for k2 in keys if len(k2) > len(e.key))),
            len(words) / 4.0,
            freq_rank[k] / len(entities), float(qtype == "factoid"), float(qtype == "list"),
        ])
    return np.asarray(rows, dtype=np.float32)


def frequency_scores(entities: Sequence[Entity]) -> np.ndarray:
    """The baseline: snippets containing the candidate, ties broken towards the longer, then the earlier."""
    n = len(entities)
    return np.array([len(e.snippets) + 0.01 * min(len(e.text.split()), 4) - 1e-6 * i
                     for i, e in enumerate(entities)], dtype=np.float64).reshape(n)


def ranked(entities: Sequence[Entity], scores: Sequence[float] | np.ndarray, k: int) -> list[str]:
    """The ``k`` best candidates' surface forms; a candidate contained in a better one is skipped."""
    out: list[str] = []
    keys: list[str] = []
    for i in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable"):
        e = entities[int(i)]
        if any(_within(e.key, k2) or _within(k2, e.key) for k2 in keys):
            continue
        out.append(e.text)
        keys.append(e.key)
        if len(out) == k:
            break
    return out
