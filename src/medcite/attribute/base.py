"""The stance stage: does a text support, contradict or not address a claim?

One protocol, backends by name (registry stage ``stance``): a sequence-classification model (medcite's
trained classifier, or an NLI cross-encoder by Hugging Face name), an LLM prompt, or ``none``. Model
backends score a claim against *passages* of the text — the whole text when it is short, and the
``sentences`` sentences that share the most words with the claim — and take the passage that speaks most
clearly (highest probability of supports or contradicts), so the verdict carries the span that decided
it. This is how long abstracts are handled: a classifier trained on short evidence passages reads one
passage at a time, and only the passages likely to bear on the claim (the cost stays a few model passes
per pair).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from ..evidence.sentences import article_sentences, split_spans
from ..settings_base import BackendConfig
from ..types import Article, Stance, StanceVerdict

LABELS = (Stance.SUPPORTS, Stance.CONTRADICTS, Stance.NEUTRAL)
#: passage = (section or None, start, end, text)
Passage = tuple[str | None, int, int, str]


class StanceConfig(BackendConfig):
    """Base of every stance backend's settings."""

    #: what judges in its place on a machine without a model it loads (a hub NLI model): medcite's trained stance
    #: classifier, shipped with medcite (``--offline``, :func:`medcite.presets.offline.offline_settings`)
    offline_stand_in: ClassVar[dict[str, object]] = {"backend": "classifier", "model": "models:medcite-reader"}
    #: the config it judges citations with when ``medcite eval biogen-b --judge`` names it (None: the run's stance
    #: settings when they name it, else its defaults, keeping where the run's stance stage runs)
    judge_spec: ClassVar[dict[str, object] | None] = None
    #: the field ``--judge BACKEND:VALUE`` sets
    judge_field: ClassVar[str] = "model"

    whole_text_chars: int = Field(
        1500, ge=0, description="Texts up to this many characters are also judged whole, besides sentence by "
        "sentence (0: sentences only)."
    )
    sentences: int = Field(
        3, ge=1, description="Sentences of a text judged one by one: those sharing the most words with the claim."
    )


@runtime_checkable
class StanceClassifier(Protocol):
    """Judges (claim, text) pairs; ``classify_articles`` judges a claim against title and abstract."""

    name: str

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[StanceVerdict]:
        """One verdict per (claim, evidence text) pair; spans index the evidence text."""
        ...

    def classify_articles(self, pairs: Sequence[tuple[str, Article]]) -> list[StanceVerdict]:
        """One verdict per (claim, article) pair; spans index the article's title or abstract."""
        ...


_WORDS = re.compile(r"[^\W_]{3,}")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(text)}


def closest(claim: str, passages: Sequence[Passage], n: int) -> list[Passage]:
    """The ``n`` passages sharing the most words with ``claim`` (ties: earlier first), in text order."""
    want = _words(claim)
    scored = sorted(range(len(passages)), key=lambda i: (-len(want & _words(passages[i][3])), i))[:n]
    return [passages[i] for i in sorted(scored)]


def text_passages(claim: str, text: str, whole_text_chars: int, sentences: int = 3) -> list[Passage]:
    """The whole text (when short enough) and its sentences closest to the claim."""
    spans = split_spans(text)
    out: list[Passage] = []
    if text.strip() and (len(text) <= whole_text_chars or not spans):
        out.append((None, 0, len(text), text))
    if len(spans) > 1 or not out:
        out.extend(closest(claim, [(None, s, e, text[s:e]) for s, e in spans], sentences))
    return out


def article_passages(claim: str, article: Article, whole_text_chars: int, sentences: int = 3) -> list[Passage]:
    """The abstract whole (when short enough) and the title and abstract sentences closest to the claim."""
    out: list[Passage] = []
    if article.abstract.strip() and len(article.abstract) <= whole_text_chars:
        out.append(("abstract", 0, len(article.abstract), article.abstract))
    spans = [(s.section, s.start, s.end, s.text) for s in article_sentences(article)]
    out.extend(closest(claim, spans, sentences))
    return out


def verdict_from(probs: np.ndarray, passages: Sequence[Passage]) -> StanceVerdict:
    """The verdict of the passage that speaks most clearly: highest P(supports) or P(contradicts).

    ``probs`` has one row per passage and columns (supports, contradicts, neutral). No passage: neutral.
    """
    if not len(passages):
        return StanceVerdict(Stance.NEUTRAL, (("supports", 0.0), ("contradicts", 0.0), ("neutral", 1.0)))
    best = int(np.argmax(probs[:, :2].max(axis=1)))
    row = probs[best]
    label = LABELS[int(np.argmax(row))]
    section, start, end, _ = passages[best]
    scores = tuple((lab.value, round(float(p), 6)) for lab, p in zip(LABELS, row, strict=True))
    return StanceVerdict(label, scores, start, end, section)


class PassageClassifier(ABC):
    """Base of model backends: subclasses implement :meth:`probabilities` for (claim, passage) pairs."""

    name = "passages"

    def __init__(self, whole_text_chars: int = 1500, sentences: int = 3) -> None:
        self.whole_text_chars = whole_text_chars
        self.sentences = sentences

    @abstractmethod
    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """Rows of (P(supports), P(contradicts), P(neutral)), one per pair."""

    def _judge(self, claims: Sequence[str], candidates: Sequence[list[Passage]]) -> list[StanceVerdict]:
        flat_claims = [c for c, ps in zip(claims, candidates, strict=True) for _ in ps]
        flat = [p[3] for ps in candidates for p in ps]
        probs = self.probabilities(flat_claims, flat) if flat else np.zeros((0, 3))
        out, at = [], 0
        for ps in candidates:
            out.append(verdict_from(probs[at: at + len(ps)], ps))
            at += len(ps)
        return out

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[StanceVerdict]:
        return self._judge([c for c, _ in pairs],
                           [text_passages(c, t, self.whole_text_chars, self.sentences) for c, t in pairs])

    def classify_articles(self, pairs: Sequence[tuple[str, Article]]) -> list[StanceVerdict]:
        return self._judge([c for c, _ in pairs],
                           [article_passages(c, a, self.whole_text_chars, self.sentences) for c, a in pairs])
