"""The systems of the retrieval benchmark: first-stage presets, rerankers over a fixed pool, IVF-PQ recall.

Every system is medcite's own code path: first stages run through
:class:`medcite.pipeline.RetrievalPipeline` built from a preset (indexes built or reused under
``<store>/indexes/``), rerankers are the ones the presets build (:func:`medcite.pipeline.build_stage`).
To score each (question, document) pair once, the ensembles read their members' scores from a cache filled
by the members themselves (:class:`CachedScores`); the ensembles' latency is timed separately on the
real, uncached ensemble.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from medcite.config import Settings, load_settings
from medcite.index.base import index_folder
from medcite.pipeline import RetrievalPipeline
from medcite.rerank.scoring import PointwiseReranker
from medcite.types import Article, Hit, Topic

log = logging.getLogger(__name__)

DEPTH = 100


def settings(preset: str, *overrides: str) -> Settings:
    """A preset with a first-stage depth of 100 and no final cut (every system returns its top 100), and
    FAISS on one thread (``indexes.dense.threads=1``: OpenMP threads spin on a busy shared machine)."""
    return load_settings(preset, [f"retrieve.k={DEPTH}", "indexes.dense.threads=1", *overrides])


def first_stage(cfg: Settings, store: Path, topics: Sequence[Topic]) -> tuple[dict[str, list[Hit]], list[float]]:
    """Run a preset's retrieval for each topic: ``({qid: top 100}, seconds per topic)``."""
    pipe = RetrievalPipeline.from_settings(cfg, store)
    run: dict[str, list[Hit]] = {}
    seconds: list[float] = []
    try:
        for topic in topics:
            t0 = time.perf_counter()
            got = pipe.retrieve(topic)
            seconds.append(time.perf_counter() - t0)
            run[topic.id] = got.final[:DEPTH]
    finally:
        pipe.close()
    return run, seconds


class CachedScores(PointwiseReranker):
    """A pointwise reranker whose scores are remembered per (query, PMID); misses go to ``inner``."""

    def __init__(self, inner: PointwiseReranker, name: str) -> None:
        super().__init__(DEPTH)
        self.inner = inner
        self.name = name
        self.cache: dict[tuple[str, str], float] = {}

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        todo = [a for a in articles if (query, a.pmid) not in self.cache]
        if todo:
            for a, s in zip(todo, self.inner.score(query, todo), strict=True):
                self.cache[(query, a.pmid)] = float(s)
        return [self.cache[(query, a.pmid)] for a in articles]


class StoredVectors:
    """The embedding reranker's encoder, reading document vectors from the dense index instead of
    re-encoding them (same model, same text: the vectors the index built), queries encoded live."""

    def __init__(self, encoder: Any, folder: Path) -> None:
        from medcite.index.dense import folder as fo

        self.encoder = encoder
        loaded = fo.load(folder)
        self.vectors = loaded.vectors
        self.row = {str(int(p)): i for i, p in enumerate(loaded.pmids) if loaded.live[i]}

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.encoder.encode_queries(list(texts)))

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        return np.asarray(self.vectors[[self.row[a.pmid] for a in articles]], dtype=np.float32)


def dense_folder(cfg: Settings, store: Path) -> Path:
    return index_folder(store, cfg.indexes["dense"])


def rerank_pool(
    reranker: Any, topics: Sequence[Topic], pool: Mapping[str, Sequence[Hit]], articles: Mapping[str, Article],
) -> tuple[dict[str, list[Hit]], list[float]]:
    """Rerank each topic's pool (its first-stage top 100) and time it per question."""
    run: dict[str, list[Hit]] = {}
    seconds: list[float] = []
    for topic in topics:
        hits = list(pool[topic.id])
        t0 = time.perf_counter()
        run[topic.id] = reranker.rerank(topic.question, hits, articles, DEPTH)
        seconds.append(time.perf_counter() - t0)
    return run, seconds


def ivfpq_recall(folder: Path, queries: np.ndarray, configs: Sequence[dict[str, int]], k: int = 10,
                 ) -> dict[str, Any]:
    """Recall@k of IVF-PQ (with and without the exact re-rank of its shortlist) against exact search,
    on the dense index's own stored vectors (real MiniLM embeddings), with the index's RAM per document.

    IVF-PQ: Jégou, Douze & Schmid 2011, "Product quantization for nearest neighbor search".
    """
    from medcite.index.dense import faiss_index as fx
    from medcite.index.dense import folder as fo
    from medcite.index.dense.faiss_backend import FaissConfig

    loaded = fo.load(folder)
    vectors = np.asarray(loaded.vectors, dtype=np.float32)
    n, dim = vectors.shape
    q = np.ascontiguousarray(queries, dtype=np.float32)
    exact = fx.new_index(fx.IndexParams("flat", dim))
    exact.add(vectors)
    _, truth = exact.search(q, k)
    live = np.ones(n, dtype=bool)
    out: dict[str, Any] = {"documents": n, "queries": len(q), "k": k, "layouts": []}
    for cfg in configs:
        ds = FaissConfig(index_type="ivfpq", nlist=cfg["nlist"], pq_m=cfg["pq_m"], pq_nbits=cfg.get("nbits", 8))
        params = fx.choose_params("ivfpq", dim, n, ds)
        index = fx.new_index(params)
        fx.train(index, vectors)
        index.add(vectors)
        ram = fx.memory_bytes(index)
        # per document: the PQ code plus its 8-byte id in the inverted list; the rest is fixed (codebooks)
        per_doc = int(index.code_size) + 8
        row = {"nlist": params.nlist, "pq_m": params.pq_m, "pq_nbits": params.pq_nbits,
               "index_bytes": ram, "bytes_per_doc_marginal": per_doc,
               "fixed_bytes": ram - per_doc * n, "results": []}
        for nprobe in cfg.get("nprobe", (8, 32)):
            for shortlist in (0, *cfg.get("rerank", (100, 256))):
                if shortlist:
                    _, rows = fx.search(index, params, q, k, vectors=vectors, live=live, nprobe=nprobe,
                                        rerank=shortlist)
                else:
                    index.nprobe = min(nprobe, params.nlist)
                    _, rows = index.search(q, k)
                recall = float(np.mean([len(set(r[r >= 0]) & set(t)) / k for r, t in zip(rows, truth, strict=True)]))
                row["results"].append({"nprobe": nprobe, "rerank": shortlist, "recall@10": round(recall, 4)})
        out["layouts"].append(row)
    return out
