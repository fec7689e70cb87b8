"""The retrieval pipeline: query set -> first-stage branches per sub-query -> fuse or pool -> rerank -> top-k.

Built from :class:`~medcite.config.Settings` through the one construction path (:class:`.context.Context`):
``retrieve.queries`` (registry stage ``querygen``), ``retrieve.branches`` (stage ``retriever``, each
searching a named index of ``indexes``) and ``rerank``. The indexes live under the document store, one
folder per index content::

    <store>/indexes/tantivy-<hash>/     (medcite.index.sparse)
    <store>/indexes/faiss-<hash>/       (medcite.index.dense)

They are built on first use and brought up to date with the store's changes on later ones, so
``medcite search --preset NAME --corpus STORE`` works on a freshly ingested store.

A *run* is one (branch, sub-query) pair: its hits carry the branch name ``"<branch>/<qid>"`` (e.g.
``bm25/q0``, ``dense/q2``). Runs merge by RRF, weighted sum or pooling (:mod:`medcite.retrieve.fusion`,
:mod:`medcite.retrieve.pooling`). With a reranker, either the fused list is reranked against the question
(a :class:`~medcite.rerank.base.VariantReranker` such as MedCPT also reads the query variants), or
(``retrieve.rerank_per_query``, CLaC 2025) each sub-query's candidates are reranked against that
sub-query and pooled by the best reranker score. ``retrieve.branch_rerank`` (CLaC 2025 runs C and D) runs such a
per-sub-query reranker first, pools its survivors, and hands the pool to ``rerank``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Settings
from ..context import ModelCache
from ..corpus.store import DocumentStore
from ..design.base import Labeller, label_map
from ..design.weigh import keep_matching
from ..errors import ConfigError, InputError
from ..progress import progress
from ..rerank.base import VariantReranker
from ..retrieve.base import QuerySet, Retriever, query_key
from ..retrieve.fusion import normalise, rrf, weighted_sum
from ..retrieve.pooling import pool
from ..settings_base import MAX_HITS
from ..types import Article, Hit, Query, StudyDesign, Topic, ranked
from .context import Context

log = logging.getLogger(__name__)


@dataclass
class Retrieved:
    """What retrieval produced for one topic.

    ``rankings`` maps a stage name to its ranking (``retrieval``: fused first stage; ``rerank`` when a
    reranker ran), which callers write as ``<stage>.trec``; ``final`` is the last stage cut to
    ``retrieve.keep``; ``runs`` holds every (branch, sub-query) run by its branch name; ``notes`` say what did not
    go as configured (a generator left out, a branch that searched the question instead of its stages' queries),
    for the run directory.
    """

    topic: Topic
    queries: list[Query]
    rankings: dict[str, list[Hit]]
    final: list[Hit]
    runs: dict[str, list[Hit]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def rerank_query(topic: Topic, kind: str) -> str:
    """The text a reranker reads for ``topic``: the question, or question + narrative + topic (CLaC 2024)."""
    if kind == "question":
        return topic.question
    parts = [topic.question, topic.narrative or "", topic.topic or ""]
    return " ".join(p.strip() for p in parts if p and p.strip())


class RetrievalPipeline:
    """Query set, first-stage branches, fusion/pooling and optional reranking for one document store."""

    def __init__(
        self,
        settings: Settings,
        store: DocumentStore,
        query_set: QuerySet,
        retrievers: Mapping[str, Retriever],
        reranker: Any = None,
        *,
        context: Context | None = None,
        owns_store: bool = False,
        branch_reranker: Any = None,
        labeller: Labeller | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.query_set = query_set
        self.retrievers = dict(retrievers)
        self.reranker = reranker
        self.branch_reranker = branch_reranker
        if branch_reranker is None and settings.retrieve.branch_rerank is not None:
            raise ConfigError("retrieve.branch_rerank is set but no per-branch reranker was given")
        self.context = context
        self._owns_store = owns_store
        if labeller is None and settings.design.filters:
            raise ConfigError("design.only or design.humans filters the runs but no study-design labeller was given")
        self.labeller = labeller
        missing = [b.name for b in settings.retrieve.branches if b.name not in self.retrievers]
        if missing:
            raise ConfigError(f"no retriever given for branch(es) {', '.join(missing)}")
        if not settings.retrieve.branches:
            raise ConfigError("retrieve.branches is empty", hint='name at least one, e.g. [{"name": "bm25"}]')

    @classmethod
    def from_settings(
        cls, settings: Settings, store_path: str | Path | None = None, *, store: DocumentStore | None = None,
        context: Context | None = None, models: ModelCache | None = None,
    ) -> RetrievalPipeline:
        """Open the store, build or reuse the indexes the branches need, and build every stage from settings.

        ``context``: build within a pipeline's context (its LLMs, indexes and models are shared); else one is
        made here and closed by :meth:`close` (``models`` may share loaded models between pipelines).
        """
        from ..trained_models import check_present

        check_present(settings)  # a missing trained model stops here, before any index is built
        owns_store = store is None
        if store is None:
            if store_path is None:
                raise ConfigError("give a document store (store_path or store)")
            store = DocumentStore.open(store_path)
        owns_context = context is None
        ctx = context or Context(settings, store, models=models)
        try:
            if len(store) == 0:
                raise ConfigError(
                    f"the document store at {store.path} is empty", hint="ingest PubMed files first: medcite ingest"
                )
            query_set = QuerySet([ctx.build("querygen", q) for q in settings.retrieve.queries])
            retrievers = {b.name: ctx.build("retriever", b) for b in settings.retrieve.branches}
            reranker = ctx.build("rerank", settings.rerank)
            per_branch = settings.retrieve.branch_rerank
            branch_reranker = ctx.build("rerank", per_branch) if per_branch is not None else None
            labeller = ctx.build("design", settings.design)
        except BaseException:
            if owns_context:
                ctx.close()
            if owns_store:
                store.close()
            raise
        return cls(settings, store, query_set, retrievers, reranker, context=ctx if owns_context else None,
                   owns_store=owns_store, branch_reranker=branch_reranker, labeller=labeller)

    # -- one topic ---------------------------------------------------------------------------------
    def plan(self, topic: Topic, queries: Sequence[Query]) -> tuple[list[Query], dict[str, list[Query]], list[str]]:
        """Which queries each branch searches: those of the stages it selects (``queries``; a query belongs to every
        stage that produced its text). A branch whose stages produced nothing searches the question instead, and a
        note says so; the question joins the query set (stage ``fallback``) when no query there is the question.
        Returns (the query set, branch name -> its queries, the notes)."""
        queries = list(queries)
        question = " ".join(topic.question.split()) or rerank_query(topic, "full")
        plan: dict[str, list[Query]] = {}
        notes: list[str] = []
        for branch in self.settings.retrieve.branches:
            mine = [q for q in queries if branch.queries is None or q.belongs_to(branch.queries)]
            if not mine:
                asked = next((q for q in queries if query_key(q.text) == query_key(question)), None)
                if asked is None:
                    asked = Query(f"q{len(queries)}", question, "fallback")
                    queries.append(asked)
                mine = [asked]
                have = sorted({s for q in queries for s in q.stages if s != "fallback"})
                note = (f"branch {branch.name}: its query stages {branch.queries} produced no query (the query set "
                        f"has {have}); it searched the question ({asked.id}) instead")
                notes.append(note)
                log.warning("topic %s: %s", topic.id, note)
            plan[branch.name] = mine
        return queries, plan, notes

    def _runs(self, plan: Mapping[str, Sequence[Query]]) -> dict[str, list[Hit]]:
        runs: dict[str, list[Hit]] = {}
        for branch in self.settings.retrieve.branches:
            k = branch.k or self.settings.retrieve.k
            mine = plan.get(branch.name, [])
            filtered = self.settings.design.filters
            depth = min(MAX_HITS, k * self.settings.design.depth) if filtered else k
            results = self.retrievers[branch.name].search_many([q.text for q in mine], depth)
            if filtered:
                results = self._designs_only(results, k)
            drop = self._retracted(results)
            for query, hits in zip(mine, results, strict=True):
                name = f"{branch.name}/{query.id}"
                if drop:  # ranks close up over the dropped articles
                    hits = [Hit(h.pmid, h.score, r, h.branches) for r, h in
                            enumerate((h for h in hits if h.pmid not in drop), start=1)]
                runs[name] = [Hit(h.pmid, h.score, h.rank, frozenset({name})) for h in hits]
        return runs

    def _designs_only(self, results: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]:
        """Each run cut to its first ``k`` hits whose article passes ``design.only`` / ``design.humans`` (labelled as
        read from the store)."""
        cfg = self.settings.design
        articles = self.store.get_many(list(dict.fromkeys(h.pmid for hits in results for h in hits)))
        designs = self.designs(articles)
        kept = [keep_matching(hits, designs, cfg.only, cfg.humans, k) for hits in results]
        log.info("study-design filter (%s%s): kept %d of %d hits", ", ".join(cfg.only) or "any design",
                 ", human studies" if cfg.humans else "", sum(map(len, kept)), sum(map(len, results)))
        return kept

    def designs(self, articles: Mapping[str, Article]) -> dict[str, StudyDesign]:
        """PMID -> study design of ``articles`` (the settings' labeller; none without one)."""
        return label_map(self.labeller, articles) if self.labeller is not None else {}

    def _retracted(self, results: Sequence[Sequence[Hit]]) -> set[str]:
        """PMIDs of retracted articles among ``results`` (none when ``retrieve.allow_retracted``): dropped from
        the first-stage runs, so that no later stage (rerank, evidence, answer) ever sees them."""
        if self.settings.retrieve.allow_retracted:
            return set()
        drop = self.store.retracted({h.pmid for hits in results for h in hits})
        if drop:
            log.info("dropped %d retracted article(s) from the rankings: %s (keep them with --allow-retracted)",
                     len(drop), ", ".join(sorted(drop)))
        return drop

    def combine(self, runs: Mapping[str, Sequence[Hit]]) -> list[Hit]:
        """Merge runs (keyed ``<branch>/<qid>``) with the configured fusion method."""
        cfg = self.settings.retrieve
        weight: dict[str, float] = {b.name: b.weight for b in cfg.branches}
        names = list(runs)
        weights = [weight.get(n.split("/", 1)[0], 1.0) for n in names]
        lists = [runs[n] for n in names]
        if cfg.fusion == "rrf" and len(lists) == 1:
            # one run fuses to its own order: keep the retriever's scores (BM25, cosine), which say more than
            # 1/(k + rank) to whoever reads them (`medcite search --preset bm25`, retrieval.trec)
            return ranked(lists[0])
        if cfg.fusion == "rrf":
            return rrf(lists, k=cfg.rrf_k, weights=weights)
        if cfg.fusion == "wsum":
            return weighted_sum(lists, weights, norm=cfg.norm)
        return pool({n: normalise(runs[n], cfg.norm) for n in names})

    def _rerank(self, query: str, hits: Sequence[Hit], k: int, reranker: Any = None) -> list[Hit]:
        if not hits:
            return []
        articles = self.store.get_many([h.pmid for h in hits])
        found = {h.pmid: h.branches for h in hits}
        out: list[Hit] = (reranker or self.reranker).rerank(query, hits, articles, k)
        # the reranker gives new scores; the branches that found each document stay with it
        return [Hit(h.pmid, h.score, h.rank, h.branches | found.get(h.pmid, frozenset())) for h in out]

    def _rerank_variants(self, topic: Topic, queries: Sequence[Query], hits: Sequence[Hit], k: int) -> list[Hit]:
        """The question first, then every other query of the set, the topic and the narrative (MedCPT averages
        their vectors, as CLaC 2025's dense runs do)."""
        if not hits:
            return []
        extra = [t for t in (topic.topic, topic.narrative) if t and t.strip()]
        texts = list(dict.fromkeys([topic.question, *(q.text for q in queries), *extra]))
        articles = self.store.get_many([h.pmid for h in hits])
        found = {h.pmid: h.branches for h in hits}
        out: list[Hit] = self.reranker.rerank_variants(texts, hits, articles, k)
        return [Hit(h.pmid, h.score, h.rank, h.branches | found.get(h.pmid, frozenset())) for h in out]

    def retrieve(self, topic: Topic, *, query_set: QuerySet | None = None, keep: int | None = None) -> Retrieved:
        """Run the whole retrieval stage for one topic. ``query_set`` replaces the settings' query set for this call
        and ``keep`` both ``rerank.k`` and ``retrieve.keep`` (CLaC 2024 Task A's contradiction path: the question
        and its decomposition, the best 30 after ColBERT)."""
        cfg = self.settings.retrieve
        query_set, wanted = query_set or self.query_set, keep
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if not " ".join(part or "" for part in (topic.question, topic.topic, topic.narrative)).strip():
            raise InputError(f"topic {topic.id} has an empty question: there is nothing to search for",
                             hint="give the question text, e.g. medcite ask \"Do statins lower LDL cholesterol?\" "
                             "--corpus STORE; in a topics file, fill in each topic's question")
        queries, plan, notes = self.plan(topic, query_set.generate(topic))
        notes = [*query_set.notes, *notes]
        t1 = time.perf_counter()
        timings["querygen"] = t1 - t0
        runs = self._runs(plan)
        if self.branch_reranker is not None:
            # CLaC 2025 runs C/D: each sub-query's candidates reranked against it and cut to m, then pooled
            keep = cfg.branch_rerank.k  # type: ignore[union-attr]
            fused = pool({f"branch-rerank/{q.id}": self._rerank(
                q.text, self.combine({n: r for n, r in runs.items() if n.endswith(f"/{q.id}")}), keep,
                self.branch_reranker) for q in queries})
        else:
            fused = self.combine(runs)
        t2 = time.perf_counter()
        timings["first_stage"] = t2 - t1
        rankings = {"retrieval": fused}
        last = fused
        if self.reranker is not None:
            k = wanted or self.settings.rerank.k
            if cfg.rerank_per_query:
                per_query = {
                    f"rerank/{q.id}": self._rerank(
                        q.text, self.combine({n: r for n, r in runs.items() if n.endswith(f"/{q.id}")}), k
                    )
                    for q in queries
                }
                last = pool(per_query)
            elif isinstance(self.reranker, VariantReranker):
                last = self._rerank_variants(topic, queries, fused, k)
            else:
                last = self._rerank(rerank_query(topic, cfg.rerank_query), fused, k)
            rankings["rerank"] = last
            timings["rerank"] = time.perf_counter() - t2
        cut = wanted or cfg.keep
        final = last[:cut] if cut else list(last)
        return Retrieved(topic, queries, rankings, final, runs, timings, notes)

    def retrieve_many(self, topics: Iterable[Topic]) -> Iterator[Retrieved]:
        """:meth:`retrieve` for each topic, with a progress bar."""
        topics = list(topics)
        for topic in progress(topics, desc="retrieve", unit="topic"):
            yield self.retrieve(topic)

    def close(self) -> None:
        """Close the context this pipeline made (its indexes, LLMs and models) and the store it opened."""
        if self.context is not None:
            self.context.close()
        if self._owns_store:
            self.store.close()

