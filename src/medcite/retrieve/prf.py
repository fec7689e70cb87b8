"""Pseudo-relevance feedback on BM25: Rocchio and RM3 query expansion over the top-k feedback documents.

- :class:`Rocchio` — Rocchio (1971), "Relevance feedback in information retrieval", in the form Anserini
  runs it (Dalhousie 2025 applies "A Rocchio expansion step [12]" without naming a toolkit): query and
  feedback documents as L2-normalised term-frequency vectors, ``q' = alpha * q + beta * mean(d in R)``, the
  ``fb_terms`` heaviest feedback terms kept. No negative feedback (gamma = 0).
- :class:`RM3` — relevance model 3 (Lavrenko & Croft 2001; Abdul-Jaleel et al., UMass at TREC 2004):
  ``P(w|R) ∝ sum_d P(w|d) * score(d)`` over the feedback documents, the ``fb_terms`` best terms
  renormalised, then interpolated with the query's maximum-likelihood model:
  ``lambda * P(w|q) + (1 - lambda) * P(w|R)`` (Anserini's defaults: 10 docs, 10 terms, lambda 0.5).

Text is analysed like the BM25 index analyses it (:func:`analyzer_for`: split on non-alphanumerics,
drop long tokens, lowercase, the same stop words, the same stemmer), so counts are per index term. The
expanded query is returned as weights over *surface* words (the most frequent word seen for each index
term), which the index analyses back to the same terms.

``clean`` (Dalhousie 2025, §III-B2a: "A Rocchio expansion step [12] is applied, and the reformulated query is
cleaned again with `llama-3-70b`. A BM25 index is then queried with this reformulated query"): the expansion
terms are shown to an LLM with the query (prompt ``rocchio_clean``) and BM25 searches the LLM's cleaned
keyword query instead of the weighted one (the expanded query when the LLM answers nothing readable).

The sparse backends weigh a query term by how often it occurs in the query text (a bag of words, as
Anserini's BagOfWords query), not by explicit weights. :meth:`WeightedQuery.as_text` therefore renders
weights by repetition: the heaviest term appears ``resolution`` times and every other term
``max(1, round(resolution * w / w_max))`` times. This quantises the weights (to 1/resolution of the
maximum) and keeps every kept term at least once: an approximation of the weighted query the papers ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..errors import ConfigError
from ..types import Hit
from .base import Retriever, RetrieverConfig
from .expansion import RM3, Analyzer, Rocchio, TermFilter, WeightedQuery, analyzer_for

__all__ = ["RM3", "Analyzer", "PRFConfig", "PRFRetriever", "Rocchio", "TermFilter", "WeightedQuery", "analyzer_for"]

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..corpus.store import DocumentStore
    from ..llm.base import LLM

log = logging.getLogger(__name__)


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
    clean: bool = Field(
        False, description="Dalhousie 2025: an LLM (`llm`) cleans the expanded query (prompt rocchio_clean) and "
        "BM25 searches the cleaned keyword query instead of the weighted expansion."
    )
    llm: str | None = Field(None, description="LLM of the clean-up, an entry of `llms` (None: the default `llm`).")
    format_reminder: bool = Field(
        True, description="medcite's safety net: a clean-up reply with no keyword query is asked again once with the "
        "prompt 'format_reminder' before the expansion is searched as it is. Dalhousie's presets turn it off."
    )

    def llm_names(self) -> set[str | None]:
        return {self.llm} if self.clean else set()


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
        index_cfg = ctx.index_config(cfg.index)
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
        cleaner = None
        if cfg.clean:
            cleaner = llm_cleaner(ctx.llm(cfg.llm, purpose=f"the clean-up of the {cfg.backend!r} expansion"),
                                  cfg.format_reminder)
        return cls(sparse, ctx.store, expander, cfg.fb_docs, cfg.resolution, name=cfg.backend, cleaner=cleaner)

    def __init__(
        self,
        base: Retriever,
        store: DocumentStore,
        method: Rocchio | RM3,
        fb_docs: int = 10,
        resolution: int = 5,
        name: str | None = None,
        cleaner: Callable[[str, WeightedQuery], str] | None = None,
    ) -> None:
        self.base = base
        self.store = store
        self.method = method
        self.fb_docs = fb_docs
        self.resolution = resolution
        self.name = name or f"{getattr(base, 'name', 'bm25')}+{method.name}"
        self.cleaner = cleaner

    def expand(self, query: str) -> WeightedQuery:
        first: list[Hit] = self.base.search(query, self.fb_docs)
        articles = self.store.get_many([h.pmid for h in first])
        docs = [(articles[h.pmid].text, h.score) for h in first if h.pmid in articles]
        return self.method.expand(query, docs)

    def search(self, query: str, k: int) -> list[Hit]:
        weighted = self.expand(query)
        expanded = weighted.as_text(self.resolution)
        if self.cleaner is not None and weighted.weights:
            expanded = self.cleaner(query, weighted) or expanded
        log.debug("%s expanded %r to %r", self.name, query, expanded)
        if not expanded:
            return []
        hits: list[Hit] = self.base.search(expanded, k)
        return hits

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]


def llm_cleaner(llm: LLM, format_reminder: bool = True) -> Callable[[str, WeightedQuery], str]:
    """The LLM clean-up of an expanded query (``clean``): the query and its expansion terms, heaviest first, in
    prompt ``rocchio_clean``; the answer's first line is the cleaned query ('' when none is readable, after one
    format reminder when ``format_reminder``: :mod:`medcite.llm.format_retry`)."""
    from ..llm.base import reject
    from ..llm.format_retry import complete_in_form
    from ..llm.prompts import render
    from ..llm.reply_parsers import parse_keyword_rewrite
    from ..llm.trace import trace_context

    def clean(query: str, weighted: WeightedQuery) -> str:
        from ..errors import LLMError

        terms = [w for w, v in weighted.weights.items() if v > 0]
        try:
            with trace_context(stage="rocchio_clean"):
                reply = complete_in_form(llm, render("rocchio_clean", query=query, expansion=", ".join(terms)),
                                         lambda text: bool(parse_keyword_rewrite(text)),
                                         problem="it holds no keyword query",
                                         form="as the cleaned keyword query on one line",
                                         remind=format_reminder).completion
        except LLMError as exc:  # the server keeps failing: search the expansion as it is, as without an LLM
            log.warning("the Rocchio clean-up failed (%s): the expanded query is searched", exc.message)
            return ""
        cleaned = parse_keyword_rewrite(reply.text)
        if not cleaned:
            log.warning("no cleaned query could be read from %r: the expanded query is searched", reply.text[:200])
            reject(llm, reply, "no cleaned query could be read")
        return cleaned

    return clean
