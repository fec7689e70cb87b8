"""Query expansion from feedback documents: Rocchio and RM3 over the BM25 index's analysed terms.

Shared by the pseudo-relevance-feedback retrievers (:mod:`medcite.retrieve.prf`, which describes the
methods) and the learning-to-rank features (:mod:`medcite.rerank.ltr_features`), so neither imports the
other's backend.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..index.sparse.base import SparseConfig

log = logging.getLogger(__name__)

Analyzer = Callable[[str], list[str]]

_SURFACE = re.compile(r"[^\W_]+")  # what tantivy's "simple" tokenizer and the bm25s backend split on
_DIGITS = re.compile(r"^\d+$")


def analyzer_for(settings: SparseConfig) -> Analyzer:
    """The BM25 index's analysis chain for one word or a text (same stop words and stemmer)."""
    from ..index.sparse.base import MAX_TOKEN_CHARS, stopword_list

    stop = frozenset(stopword_list(settings))
    stem: Callable[[str], str] = lambda w: w  # noqa: E731
    if settings.stemmer == "english":
        import tantivy

        builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw())
        built = builder.filter(tantivy.Filter.stemmer("english")).build()
        stem = lambda w: (built.analyze(w) or [w])[0]  # noqa: E731
    elif settings.stemmer == "porter":
        from ..registry import require

        stemmer_mod = require("Stemmer", "bm25s", "the 'porter' stemmer in pseudo-relevance feedback")
        porter = stemmer_mod.Stemmer("porter")
        stem = porter.stemWord

    @lru_cache(maxsize=200_000)
    def one(word: str) -> str | None:
        low = word.lower()
        if len(word) > MAX_TOKEN_CHARS or low in stop:
            return None
        return stem(low)

    def analyze(text: str) -> list[str]:
        return [t for t in (one(w) for w in _SURFACE.findall(text)) if t]

    analyze.one = one  # type: ignore[attr-defined]
    return analyze


@dataclass(frozen=True)
class WeightedQuery:
    """An expanded query: surface word -> weight (heaviest first)."""

    weights: dict[str, float]

    def as_text(self, resolution: int = 5) -> str:
        """The query as text for a bag-of-words backend, weights rendered by repetition (see module doc)."""
        if not self.weights:
            return ""
        top = max(self.weights.values())
        if top <= 0:
            return " ".join(self.weights)
        words: list[str] = []
        for word, w in self.weights.items():
            if w > 0:
                words.extend([word] * max(1, round(resolution * w / top)))
        return " ".join(words)


class _Vocabulary:
    """Counts index terms of texts and remembers the most frequent surface word of each term."""

    def __init__(self, analyzer: Analyzer) -> None:
        def first(word: str) -> str | None:
            terms = analyzer(word)
            return terms[0] if terms else None

        self.one: Callable[[str], str | None] = getattr(analyzer, "one", None) or first
        self.surface: dict[str, Counter[str]] = {}

    def counts(self, text: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for word in _SURFACE.findall(text):
            term = self.one(word)
            if term:
                out[term] += 1
                self.surface.setdefault(term, Counter())[word.lower()] += 1
        return out

    def word(self, term: str) -> str:
        return self.surface[term].most_common(1)[0][0]


class TermFilter:
    """Which feedback terms may expand a query, by Anserini's rules for RM3 and Rocchio: 2 to 20
    characters, not a number, and (when document frequencies are known) in at most ``max_df`` of the
    documents, which keeps common words ("which", "patients") out of the expansion.

    ``doc_freq(term)`` counts the documents holding an index term; sparse indexes that expose
    ``doc_freq`` provide it (see :class:`PRFRetriever`). Without it only the length/number rules apply.
    """

    def __init__(
        self, doc_freq: Callable[[str], int] | None = None, num_docs: int = 0, max_df: float = 0.1
    ) -> None:
        self.doc_freq = doc_freq if num_docs > 0 else None
        self.limit = max_df * num_docs

    def __call__(self, term: str) -> bool:
        if not 2 <= len(term) <= 20 or _DIGITS.match(term):
            return False
        return self.doc_freq is None or self.doc_freq(term) <= self.limit


def _l2(vec: Mapping[str, float]) -> dict[str, float]:
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {t: v / norm for t, v in vec.items()} if norm else dict(vec)


def _l1(vec: Mapping[str, float]) -> dict[str, float]:
    total = sum(vec.values())
    return {t: v / total for t, v in vec.items()} if total else dict(vec)


def _top(vec: Mapping[str, float], n: int) -> dict[str, float]:
    return dict(sorted(vec.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


class Rocchio:
    """Rocchio (1971) expansion, positive feedback only (``alpha`` on the query, ``beta`` on the docs)."""

    name = "rocchio"

    def __init__(
        self, analyzer: Analyzer, fb_terms: int = 10, alpha: float = 1.0, beta: float = 0.75,
        term_filter: Callable[[str], bool] | None = None,
    ) -> None:
        self.vocab = _Vocabulary(analyzer)
        self.fb_terms, self.alpha, self.beta = fb_terms, alpha, beta
        self.legal = term_filter or TermFilter()

    def expand(self, query: str, docs: Sequence[tuple[str, float]]) -> WeightedQuery:
        """``docs`` are (text, retrieval score) of the feedback documents, best first."""
        q = _l2(self.vocab.counts(query))
        mean: dict[str, float] = {}
        for text, _score in docs:
            for term, v in _l2(self.vocab.counts(text)).items():
                if self.legal(term):
                    mean[term] = mean.get(term, 0.0) + v / len(docs)
        feedback = _top(mean, self.fb_terms)
        weights = {t: self.alpha * v for t, v in q.items()}
        for term, v in feedback.items():
            weights[term] = weights.get(term, 0.0) + self.beta * v
        return WeightedQuery({self.vocab.word(t): w for t, w in _top(weights, len(weights)).items()})


class RM3:
    """RM3 (Abdul-Jaleel et al. 2004): relevance model from the feedback docs mixed with the query."""

    name = "rm3"

    def __init__(
        self, analyzer: Analyzer, fb_terms: int = 10, original_weight: float = 0.5,
        term_filter: Callable[[str], bool] | None = None,
    ) -> None:
        self.vocab = _Vocabulary(analyzer)
        self.fb_terms, self.original_weight = fb_terms, original_weight
        self.legal = term_filter or TermFilter()

    def expand(self, query: str, docs: Sequence[tuple[str, float]]) -> WeightedQuery:
        """``docs`` are (text, retrieval score) of the feedback documents; scores stand in for P(q|d)."""
        q = _l1(self.vocab.counts(query))
        rel: dict[str, float] = {}
        for text, score in docs:
            for term, p in _l1(self.vocab.counts(text)).items():
                if self.legal(term):
                    rel[term] = rel.get(term, 0.0) + p * score
        rel = _l1(_top(rel, self.fb_terms))
        lam = self.original_weight
        weights = {t: lam * v for t, v in q.items()}
        for term, v in rel.items():
            weights[term] = weights.get(term, 0.0) + (1 - lam) * v
        return WeightedQuery({self.vocab.word(t): w for t, w in _top(weights, len(weights)).items()})
