"""Answer spans from the reader's span head: decoding per passage, then one ranked list of answers per question.

Decoding (per passage): every token pair (start, end) of the passage, ``end - start < max_tokens``, scores
P(start) * P(end) (the head's two independent sigmoids); a span must begin and end on word boundaries of the
passage text, and at most ``per_passage`` spans are kept, best first, none overlapping a better one.

Answers (per question): spans whose normalised text is equal are one answer; so are an abbreviation and its
definition found in the passages (Schwartz & Hearst 2003, the ``abbreviations`` package: "tumour necrosis factor
(TNF)") and forms that differ only in case, hyphens or a plural ``s``. An answer's score is the noisy-or of its
spans' probabilities (several passages naming it raise it); its surface form is its best-scored span, and
its synonyms are kept (BioASQ merges synonyms into one entity). Spans made only of question words or of common
words (``wordfreq`` Zipf >= 4.5, e.g. "patients", "inhibitor") are no answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .model import sigmoid

_WORD = re.compile(r"[^\W_]+")
_EDGE = " .,;:'\"()[]{}"


@dataclass
class SpanHit:
    """One decoded span: where it is (passage index, character offsets), its text and probability."""

    passage: int
    start: int
    end: int
    text: str
    p: float


@dataclass
class Answer:
    """One answer of a question: its surface form, its synonyms, its score and the spans that support it."""

    text: str
    key: str
    score: float
    synonyms: list[str] = field(default_factory=list)
    spans: list[SpanHit] = field(default_factory=list)

    @property
    def passages(self) -> list[int]:
        return sorted({s.passage for s in self.spans})


def normalise(text: str) -> str:
    """How answers are compared: lower case, hyphens and spaces folded, outer punctuation dropped, a plural
    ``s`` dropped from a last word of four letters or more."""
    words = " ".join(text.lower().replace("-", " ").split()).strip(_EDGE).split()
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def decode(text: str, start_logits: np.ndarray, end_logits: np.ndarray, offsets: Sequence[tuple[int, int]], *,
           passage: int = 0, max_tokens: int = 16, per_passage: int = 3, floor: float = 0.01) -> list[SpanHit]:
    """The best spans of one passage (see the module doc)."""
    ps, pe = sigmoid(np.asarray(start_logits, dtype=np.float64)), sigmoid(np.asarray(end_logits, dtype=np.float64))
    valid = [i for i, (a, b) in enumerate(offsets) if a >= 0 and b > a]
    starts = [i for i in valid if ps[i] >= floor and (offsets[i][0] == 0 or not text[offsets[i][0] - 1].isalnum())]
    ends = {i for i in valid if pe[i] >= floor and (offsets[i][1] >= len(text) or not text[offsets[i][1]].isalnum())}
    cands: list[tuple[float, int, int]] = []
    for i in starts:
        for j in range(i, min(len(offsets), i + max_tokens)):
            if j in ends:
                p = float(ps[i] * pe[j])
                if p >= floor:
                    cands.append((p, offsets[i][0], offsets[j][1]))
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    out: list[SpanHit] = []
    for p, a, b in cands:
        if any(a < h.end and h.start < b for h in out):
            continue
        span = text[a:b].strip(_EDGE)
        if not span:
            continue
        a = text.index(span, a)
        out.append(SpanHit(passage, a, a + len(span), span, p))
        if len(out) == per_passage:
            break
    return out


def _abbreviation_pairs(passages: Iterable[str]) -> list[tuple[str, str]]:
    from ..registry import require

    sh = require("abbreviations.schwartz_hearst", "qa", "merging an answer with its abbreviation")
    pairs: list[tuple[str, str]] = []
    for text in passages:
        try:
            found = sh.extract_abbreviation_definition_pairs(doc_text=text)
        except (ValueError, IndexError):  # the package's parser gives up on odd brackets
            continue
        pairs += [(str(k), str(v)) for k, v in found.items()]
    return pairs


def is_generic(text: str, question: str) -> bool:
    """A span that names nothing: only question words, or only common words (Zipf >= 4.5, lower case)."""
    from ..registry import require

    wordfreq = require("wordfreq", "qa", "telling common words from answers")
    words = _WORD.findall(text)
    if not words:
        return True
    q_words = {w.lower() for w in _WORD.findall(question)}
    if all(w.lower() in q_words for w in words):
        return True
    return all(w.islower() and wordfreq.zipf_frequency(w.lower(), "en") >= 4.5 for w in words)


def aggregate(hits: Sequence[SpanHit], passages: Sequence[str], question: str) -> list[Answer]:
    """One ranked list of answers from the spans of every passage (see the module doc)."""
    alias: dict[str, str] = {}
    for short, long in _abbreviation_pairs(passages):
        ks, kl = normalise(short), normalise(long)
        if ks and kl and ks != kl:
            alias[ks] = kl
    groups: dict[str, Answer] = {}
    for h in sorted(hits, key=lambda h: -h.p):
        if is_generic(h.text, question):
            continue
        key = normalise(h.text)
        key = alias.get(key, key)
        ans = groups.get(key)
        if ans is None:
            ans = groups[key] = Answer(h.text, key, 0.0)
        ans.spans.append(h)
        if h.text not in ans.synonyms:
            ans.synonyms.append(h.text)
    for ans in groups.values():
        ans.score = float(1.0 - np.prod([1.0 - min(s.p, 0.999999) for s in ans.spans]))
    return sorted(groups.values(), key=lambda a: (-a.score, a.spans[0].passage, a.spans[0].start))
