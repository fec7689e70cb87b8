"""The ``milvus-hybrid`` first-stage retriever: BM25 and dense kNN of one Milvus collection, fused by
reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) on the server, in one call per batch of
queries.

``index.backend=milvus`` turns a preset's plain ``bm25`` + ``dense`` branches fused by RRF into this branch
(``index.milvus.hybrid``, :mod:`medcite.index.milvus.engine`), so the ``hybrid`` preset and its relatives run
their fusion on the server. With one query per topic the ranking is the one medcite's own RRF gives (same k, ranks from
1); with several sub-queries each sub-query's two runs are fused on the server, then the sub-queries' runs in
medcite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..errors import ConfigError
from ..set_option import set_line
from ..types import Hit
from .base import RetrieverConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class MilvusHybridConfig(RetrieverConfig):
    """BM25 + dense kNN fused by RRF on the Milvus server."""

    backend: Literal["milvus-hybrid"] = "milvus-hybrid"
    index: str = Field("bm25", description="Name of the Milvus BM25 index (a 'milvus-bm25' entry of `indexes`).")
    vector_indexes: list[str] = Field(
        default_factory=lambda: ["dense"],
        description="Names of the Milvus vector indexes ('milvus-dense' entries of `indexes`) searched with it.",
        min_length=1,
    )
    rrf_k: float = Field(60, ge=0, description="RRF constant k of the server's RRFRanker (Cormack et al.: 60).")


class MilvusHybridRetriever:
    """Searches the BM25 field and the vector fields of one collection; the server fuses the runs."""

    Config = MilvusHybridConfig

    def __init__(self, sparse: Any, dense: list[Any], rrf_k: float, name: str = "milvus-hybrid") -> None:
        self.sparse = sparse
        self.dense = dense
        self.rrf_k = rrf_k
        self.name = name
        self.collection = sparse.collection

    @classmethod
    def from_config(cls, cfg: MilvusHybridConfig, ctx: BuildContext) -> MilvusHybridRetriever:
        from .bm25 import index_of_kind

        for name in (cfg.index, *cfg.vector_indexes):
            cfg_of = ctx.index_config(name)
            if cfg_of is not None and not str(cfg_of.backend).startswith("milvus"):
                raise ConfigError(
                    f"the {cfg.backend!r} branch fuses Milvus indexes, but index {name!r} is a {cfg_of.backend!r} one",
                    hint=f"serve the indexes from Milvus ({set_line('index.backend', 'milvus')}), or use 'bm25' and "
                    "'dense' branches with rrf fusion",
                )
        sparse = index_of_kind(ctx, cfg.index, "sparse", cfg.backend)
        dense = [index_of_kind(ctx, n, "vector", cfg.backend) for n in cfg.vector_indexes]
        return cls(sparse, dense, cfg.rrf_k, name=cfg.name)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries or k < 1:
            return [[] for _ in queries]
        # texts with no indexable word have no BM25 run: they get the dense runs fused without it
        has_terms = {i for i, q in enumerate(queries) if self.sparse.indexable(q)}
        out: list[list[Hit]] = [[] for _ in queries]
        vectors = [d.encoder.encode_queries(list(queries)) for d in self.dense]
        both = sorted(has_terms)
        alone = [i for i in range(len(queries)) if i not in has_terms]
        for rows, with_text in ((both, True), (alone, False)):
            if not rows:
                continue
            requests: list[tuple[str, Sequence[Any], dict[str, object]]] = []
            if with_text:
                requests.append((self.sparse.field, [queries[i] for i in rows], {"metric_type": "BM25"}))
            for d, vecs in zip(self.dense, vectors, strict=True):
                requests.append((d.field, [vecs[i].tolist() for i in rows], d.settings.search_params(k)))
            for i, hits in zip(rows, self.collection.hybrid(requests, k, self.rrf_k), strict=True):
                out[i] = hits
        return out
