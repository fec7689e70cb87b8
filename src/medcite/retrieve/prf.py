"""Pseudo-relevance feedback on BM25: Rocchio and RM3 query expansion over the top-k feedback documents.

- :class:`Rocchio` — Rocchio (1971), "Relevance feedback in information retrieval", in the form Anserini
  runs it (and Dalhousie 2025 used through Pyserini's ``set_rocchio``): query and feedback documents as
  L2-normalised term-frequency vectors, ``q' = alpha * q + beta * mean(d in R)``, the ``fb_terms``
  heaviest feedback terms kept. No negative feedback (gamma = 0).
- :class:`RM3` — relevance model 3 (Lavrenko & Croft 2001; Abdul-Jaleel et al., UMass at TREC 2004):
  ``P(w|R) ∝ sum_d P(w|d) * score(d)`` over the feedback documents, the ``fb_terms`` best terms
  renormalised, then interpolated with the query's maximum-likelihood model:
  ``lambda * P(w|q) + (1 - lambda) * P(w|R)`` (Anserini's defaults: 10 docs, 10 terms, lambda 0.5).

Text is analysed like the BM25 index analyses it (:func:`analyzer_for`: split on non-alphanumerics,
drop long tokens, lowercase, the same stop words, the same stemmer), so counts are per index term. The
expanded query is returned as weights over *surface* words (the most frequent word seen for each index
term), which the index analyses back to the same terms.

The sparse backends weigh a query term by how often it occurs in the query text (a bag of words, as
Anserini's BagOfWords query), not by explicit weights. :meth:`WeightedQuery.as_text` therefore renders
weights by repetition: the heaviest term appears ``resolution`` times and every other term
``max(1, round(resolution * w / w_max))`` times. This quantises the weights (to 1/resolution of the
maximum) and keeps every kept term at least once: an approximation of the weighted query the papers ran.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..errors import ConfigError
from ..types import Hit
from .base import RetrieverConfig

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..corpus.store import DocumentStore
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


class PRFConfig(RetrieverConfig):
    """BM25 with pseudo-relevance feedback: ``bm25+rocchio`` (Dalhousie 2025) or ``bm25+rm3``."""

    backend: Literal["bm25+rocchio", "bm25+rm3"]
    index: str = Field("bm25", description="Name of the sparse index (an entry of `indexes`) to search.")
    fb_docs: int = Field(10, ge=1, description="Top documents of the first BM25 search used as feedback.")
    fb_terms: int = Field(10, ge=1, description="Expansion terms taken from the feedback documents.")
    alpha: float = Field(1.0, ge=0, description="Rocchio weight of the original query vector.")
    beta: float = Field(0.75, ge=0, description="Rocchio weight of the mean feedback-document vector.")
    original_weight: float = Field(
        0.5, ge=0, le=1, description="RM3 lambda: weight of the original query model against the feedback model."
    )
    resolution: int = Field(
        5, ge=1, le=50,
        description="Repetitions of the heaviest term when the weighted query is rendered as a bag of words.",
    )
    max_df: float = Field(
        0.1, gt=0, le=1,
        description="Skip feedback terms found in more than this share of the documents (Anserini's rule; "
        "applies when the sparse index reports document frequencies).",
    )


class PRFRetriever:
    """A retriever with pseudo-relevance feedback: search, expand from the top ``fb_docs``, search again.

    ``base`` is any first-stage retriever over the sparse index (``search(query, k) -> list[Hit]``);
    feedback texts (title + abstract) come from the document store.
    """

    Config = PRFConfig

    @classmethod
    def from_config(cls, cfg: PRFConfig, ctx: BuildContext) -> PRFRetriever:
        from ..index.sparse.base import SparseConfig
        from .bm25 import sparse_index

        sparse = sparse_index(ctx, cfg.index, cfg.backend)
        index_cfg = ctx.settings.indexes[cfg.index]
        if ctx.store is None or not isinstance(index_cfg, SparseConfig):
            raise ConfigError(f"the {cfg.backend!r} branch needs a document store and a sparse index")
        analyzer = analyzer_for(index_cfg)
        doc_freq = getattr(sparse, "doc_freq", None)
        if doc_freq is None:
            log.info("the sparse index reports no document frequencies: PRF keeps common feedback terms")
        legal = TermFilter(doc_freq, len(sparse) if doc_freq else 0, cfg.max_df)
        expander: Rocchio | RM3 = (
            Rocchio(analyzer, cfg.fb_terms, cfg.alpha, cfg.beta, legal)
            if cfg.backend == "bm25+rocchio"
            else RM3(analyzer, cfg.fb_terms, cfg.original_weight, legal)
        )
        return cls(sparse, ctx.store, expander, cfg.fb_docs, cfg.resolution, name=cfg.backend)

    def __init__(
        self,
        base: Any,
        store: DocumentStore,
        method: Rocchio | RM3,
        fb_docs: int = 10,
        resolution: int = 5,
        name: str | None = None,
    ) -> None:
        self.base = base
        self.store = store
        self.method = method
        self.fb_docs = fb_docs
        self.resolution = resolution
        self.name = name or f"{getattr(base, 'name', 'bm25')}+{method.name}"

    def expand(self, query: str) -> WeightedQuery:
        first: list[Hit] = self.base.search(query, self.fb_docs)  # type: ignore[attr-defined]
        articles = self.store.get_many([h.pmid for h in first])
        docs = [(articles[h.pmid].text, h.score) for h in first if h.pmid in articles]
        return self.method.expand(query, docs)

    def search(self, query: str, k: int) -> list[Hit]:
        expanded = self.expand(query).as_text(self.resolution)
        log.debug("%s expanded %r to %r", self.name, query, expanded)
        if not expanded:
            return []
        hits: list[Hit] = self.base.search(expanded, k)  # type: ignore[attr-defined]
        return hits

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]
