"""The retrieval pipeline: query set -> first-stage branches per sub-query -> fuse or pool -> rerank -> top-k.

Wired from :class:`~medcite.config.Settings` (``retrieve``, ``index``, ``rerank``). The indexes it needs
live under the document store, one folder per index kind and index-shaping settings::

    <store>/indexes/bm25-<hash>/     (medcite.index.sparse)
    <store>/indexes/dense-<hash>/    (medcite.index.dense)

They are built on first use and brought up to date with the store's changes on later ones, so
``medcite search --preset NAME --corpus STORE`` works on a freshly ingested store.

A *run* is one (branch, sub-query) pair: its hits carry the branch name ``"<branch>/<qid>"`` (e.g.
``bm25/q0``, ``dense/q2``). Runs merge by RRF, weighted sum or pooling (:mod:`.fusion`,
:mod:`.pooling`). With a reranker, either the fused list is reranked against the question, or
(``retrieve.rerank_per_query``, CLaC 2025) each sub-query's candidates are reranked against that
sub-query and pooled by the best reranker score.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import registry
from ..config import DenseSettings, Settings, SparseSettings
from ..corpus.store import DocumentStore
from ..errors import ConfigError, MedciteError
from ..progress import progress
from ..types import Hit, Query, Topic
from .base import Retriever
from .fusion import normalise, rrf, weighted_sum
from .pooling import pool
from .queries import QuerySet

log = logging.getLogger(__name__)

INDEXES = "indexes"
# settings that change resources or search-time behaviour but not what an index holds
_SPARSE_RUNTIME = {"heap_mb", "threads"}
_DENSE_RUNTIME = {"device", "batch_size", "chunk_size", "nprobe", "ef_search", "rerank", "compact_ratio"}


@dataclass
class Retrieved:
    """What retrieval produced for one topic.

    ``rankings`` maps a stage name to its ranking (``retrieval``: fused first stage; ``rerank`` when a
    reranker ran), which callers write as ``<stage>.trec``; ``final`` is the last stage cut to
    ``retrieve.keep``; ``runs`` holds every (branch, sub-query) run by its branch name.
    """

    topic: Topic
    queries: list[Query]
    rankings: dict[str, list[Hit]]
    final: list[Hit]
    runs: dict[str, list[Hit]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def _digest(data: Mapping[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def index_folder(store_path: str | Path, kind: str, settings: SparseSettings | DenseSettings) -> Path:
    """``<store>/indexes/<kind>-<hash of the settings that shape the index>``.

    A dense index on a model folder (``models:NAME`` or a local path) also hashes the folder's content
    identity, so retraining a model under the same name gets a new index instead of a mismatch error.
    """
    runtime = _SPARSE_RUNTIME if kind == "bm25" else _DENSE_RUNTIME
    shaping = settings.model_dump(mode="json", exclude=runtime)
    if isinstance(settings, DenseSettings):
        models = {k: _folder_identity(shaping[k]) for k in ("encoder", "query_encoder") if shaping.get(k)}
        shaping.update({f"{k}_identity": v for k, v in models.items() if v})
    return Path(store_path) / INDEXES / f"{kind}-{_digest(shaping)}"


def _folder_identity(name: str) -> str | None:
    """The content identity of the model folder ``name`` refers to, or None for hub names and aliases."""
    from ..paths import resolve_models_ref

    try:
        folder = Path(resolve_models_ref(name, "medcite train encoder"))
    except ConfigError:
        return None  # a missing trained model: loading the encoder reports it
    if not (folder / "config.json").is_file():
        return None  # a hub name or alias (its index is named by the settings), or a missing model (error later)
    from ..index.dense.encoders import model_identity

    return model_identity(str(folder))


def ensure_sparse(store: DocumentStore, settings: SparseSettings) -> Any:
    """Build (or update) the store's BM25 index for these settings and open it."""
    from ..index.sparse.base import build_sparse, open_sparse

    folder = index_folder(store.path, "bm25", settings)
    log.info("BM25 index %s: building or updating from the store (seq %d)", folder, store.seq)
    report = build_sparse(store, folder, settings)
    if report.added or report.replaced or report.deleted:
        log.info("BM25 index %s: +%d ~%d -%d documents", folder, report.added, report.replaced, report.deleted)
    return open_sparse(folder, store)


def ensure_dense(store: DocumentStore, settings: DenseSettings) -> Any:
    """Build (or update) the store's dense index for these settings and open a retriever on it."""
    from ..index.dense.build import build_dense_index
    from ..index.dense.searcher import DenseRetriever

    folder = index_folder(store.path, "dense", settings)
    log.info("dense index %s: building or updating from the store (seq %d)", folder, store.seq)
    build_dense_index(store, folder, settings)
    return DenseRetriever(folder, settings=settings, name="dense")


def _prf(method: str) -> Callable[[Settings, DocumentStore, Any], Retriever]:
    def make(settings: Settings, store: DocumentStore, sparse: Any) -> Retriever:
        from .prf import RM3, PRFRetriever, Rocchio, TermFilter, analyzer_for

        prf = settings.retrieve.prf
        analyzer = analyzer_for(settings.index.sparse)
        doc_freq = getattr(sparse, "doc_freq", None)
        if doc_freq is None:
            log.info("the sparse index reports no document frequencies: PRF keeps common feedback terms")
        legal = TermFilter(doc_freq, len(sparse) if doc_freq else 0, prf.max_df)
        expander: Rocchio | RM3 = (
            Rocchio(analyzer, prf.fb_terms, prf.alpha, prf.beta, legal)
            if method == "rocchio"
            else RM3(analyzer, prf.fb_terms, prf.original_weight, legal)
        )
        return PRFRetriever(sparse, store, expander, prf.fb_docs, prf.resolution, name=f"bm25+{method}")

    return make


# branch name -> (index it needs, factory from (settings, store, index) to a retriever)
BRANCHES: dict[str, tuple[str, Callable[[Settings, DocumentStore, Any], Retriever]]] = {
    "bm25": ("bm25", lambda settings, store, index: index),
    "bm25+rocchio": ("bm25", _prf("rocchio")),
    "bm25+rm3": ("bm25", _prf("rm3")),
    "dense": ("dense", lambda settings, store, index: index),
}
INDEX_OPENERS: dict[str, Callable[[DocumentStore, Settings], Any]] = {
    "bm25": lambda store, settings: ensure_sparse(store, settings.index.sparse),
    "dense": lambda store, settings: ensure_dense(store, settings.index.dense),
}


def build_query_set(settings: Settings, llm: Any = None) -> QuerySet:
    """The generators of ``retrieve.queries``, built by name (registry stage ``querygen``).

    A generator with ``from_settings(settings)`` is built with it; one whose constructor takes an ``llm``
    (the LLM reformulator and decomposer) gets ``llm``, or one LLM made from ``settings.llm`` and shared
    by all of them; any other is built with no arguments.
    """
    gens = []
    for name in settings.retrieve.queries:
        factory = registry.load("querygen", name)
        if callable(getattr(factory, "from_settings", None)):
            gens.append(factory.from_settings(settings))
        elif "llm" in inspect.signature(factory).parameters:
            if llm is None:
                from ..llm.base import llm_enabled, make_llm

                llm = make_llm(settings)
                if not llm_enabled(llm):
                    raise ConfigError(
                        f"the query generator {name!r} needs a language model, but llm.backend is 'none'",
                        hint="choose one, e.g. --set llm.backend=local, or drop it from retrieve.queries",
                    )
            gens.append(factory(llm))
        else:
            gens.append(factory())
    return QuerySet(gens)


def build_reranker(settings: Settings) -> Any:
    """The reranker ``settings.rerank`` names, or None; ConfigError when it cannot be loaded here."""
    rerank = getattr(settings, "rerank", None)
    if rerank is None or getattr(rerank, "backend", "none") == "none":
        return None
    try:
        from ..rerank.factory import build_reranker as factory

        return factory(rerank)
    except ConfigError:
        raise
    except (MedciteError, ImportError, OSError) as exc:
        raise ConfigError(
            f"the reranker {rerank.backend!r} is not available here: {exc}",
            hint="install its extra and model, or run without reranking: --set rerank.backend=none",
        ) from exc


class RetrievalPipeline:
    """Query set, first-stage branches, fusion/pooling and optional reranking for one document store."""

    def __init__(
        self,
        settings: Settings,
        store: DocumentStore,
        query_set: QuerySet,
        retrievers: Mapping[str, Retriever],
        reranker: Any = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.query_set = query_set
        self.retrievers = dict(retrievers)
        self.reranker = reranker
        missing = [b.name for b in settings.retrieve.branches if b.name not in self.retrievers]
        if missing:
            raise ConfigError(f"no retriever given for branch(es) {', '.join(missing)}")
        if not settings.retrieve.branches:
            raise ConfigError("retrieve.branches is empty", hint='name at least one, e.g. [{"name": "bm25"}]')

    @classmethod
    def from_settings(
        cls, settings: Settings, store_path: str | Path, *, store: DocumentStore | None = None, llm: Any = None
    ) -> RetrievalPipeline:
        """Open the store, build or reuse the indexes the branches need, and load the reranker.

        ``llm`` is shared by LLM query generators (default: one made from ``settings.llm`` when needed).
        """
        store = store or DocumentStore.open(store_path)
        if len(store) == 0:
            raise ConfigError(
                f"the document store at {store.path} is empty", hint="ingest PubMed files first: medcite ingest"
            )
        query_set = build_query_set(settings, llm)
        indexes: dict[str, Any] = {}
        retrievers: dict[str, Retriever] = {}
        for branch in settings.retrieve.branches:
            kind, make = BRANCHES[branch.name]
            if kind not in indexes:
                indexes[kind] = INDEX_OPENERS[kind](store, settings)
            retrievers[branch.name] = make(settings, store, indexes[kind])
        return cls(settings, store, query_set, retrievers, build_reranker(settings))

    # -- one topic ---------------------------------------------------------------------------------
    def _runs(self, queries: Sequence[Query]) -> dict[str, list[Hit]]:
        runs: dict[str, list[Hit]] = {}
        texts = [q.text for q in queries]
        for branch in self.settings.retrieve.branches:
            k = branch.k or self.settings.retrieve.k
            results = self.retrievers[branch.name].search_many(texts, k)
            for query, hits in zip(queries, results, strict=True):
                name = f"{branch.name}/{query.id}"
                runs[name] = [Hit(h.pmid, h.score, h.rank, frozenset({name})) for h in hits]
        return runs

    def combine(self, runs: Mapping[str, Sequence[Hit]]) -> list[Hit]:
        """Merge runs (keyed ``<branch>/<qid>``) with the configured fusion method."""
        cfg = self.settings.retrieve
        weight: dict[str, float] = {b.name: b.weight for b in cfg.branches}
        names = list(runs)
        weights = [weight.get(n.split("/", 1)[0], 1.0) for n in names]
        lists = [runs[n] for n in names]
        if cfg.fusion == "rrf":
            return rrf(lists, k=cfg.rrf_k, weights=weights)
        if cfg.fusion == "wsum":
            return weighted_sum(lists, weights, norm=cfg.norm)
        return pool({n: normalise(runs[n], cfg.norm) for n in names})

    def _rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        if not hits:
            return []
        articles = self.store.get_many([h.pmid for h in hits])
        found = {h.pmid: h.branches for h in hits}
        out: list[Hit] = self.reranker.rerank(query, hits, articles, k)
        # the reranker gives new scores; the branches that found each document stay with it
        return [Hit(h.pmid, h.score, h.rank, h.branches | found.get(h.pmid, frozenset())) for h in out]

    def retrieve(self, topic: Topic) -> Retrieved:
        """Run the whole retrieval stage for one topic."""
        cfg = self.settings.retrieve
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        queries = self.query_set.generate(topic)
        if not queries:
            raise ConfigError(
                f"the query generators {cfg.queries} produced no query for topic {topic.id}",
                hint="add 'original' to retrieve.queries",
            )
        t1 = time.perf_counter()
        timings["querygen"] = t1 - t0
        runs = self._runs(queries)
        fused = self.combine(runs)
        t2 = time.perf_counter()
        timings["first_stage"] = t2 - t1
        rankings = {"retrieval": fused}
        last = fused
        if self.reranker is not None:
            k = self.settings.rerank.k
            if cfg.rerank_per_query:
                per_query = {
                    f"rerank/{q.id}": self._rerank(
                        q.text, self.combine({n: r for n, r in runs.items() if n.endswith(f"/{q.id}")}), k
                    )
                    for q in queries
                }
                last = pool(per_query)
            else:
                last = self._rerank(topic.question, fused, k)
            rankings["rerank"] = last
            timings["rerank"] = time.perf_counter() - t2
        final = last[: cfg.keep] if cfg.keep else list(last)
        return Retrieved(topic, queries, rankings, final, runs, timings)

    def retrieve_many(self, topics: Iterable[Topic]) -> Iterator[Retrieved]:
        """:meth:`retrieve` for each topic, with a progress bar."""
        topics = list(topics)
        for topic in progress(topics, desc="retrieve", unit="topic"):
            yield self.retrieve(topic)

    def close(self) -> None:
        self.store.close()

