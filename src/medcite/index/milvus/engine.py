"""``index.backend=milvus``: the engine that moves every named index (and the hybrid branches) to a Milvus
server, registered as the ``milvus`` engine (:mod:`medcite.index.engine`).

Each sparse entry of ``indexes`` becomes ``milvus-bm25`` and each vector entry ``milvus-dense``, keeping the
options both engines share (analysis, encoder, layout); an option Milvus cannot honour is refused with the
reason. With ``index.milvus.hybrid = "server"`` and RRF fusion, plain ``bm25`` and ``dense`` branches of
equal weight, budget and queries become one ``milvus-hybrid`` branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from ... import registry
from ...errors import ConfigError
from ...settings_base import BackendConfig
from ..base import IndexConfig
from ..engine import Served

if TYPE_CHECKING:
    from ...config import Settings

__all__ = ["MilvusEngine"]

#: index backend kind -> the Milvus backend that serves an index of that kind
_MILVUS_BACKENDS = {"sparse": "milvus-bm25", "vector": "milvus-dense"}
#: options an embedded index carries over to its Milvus stand-in when it set them (the rest take Milvus defaults)
_CARRIED = {"sparse": ("stemmer", "stopwords", "k1", "b", "fields"),
            "vector": ("encoder", "index_type", "hnsw_m", "ef_construction", "ef_search", "nlist", "nprobe")}


@runtime_checkable
class _Branch(Protocol):
    """What the hybrid switch reads of a retrieval branch (a retriever config, :mod:`medcite.retrieve.base`)."""

    backend: str
    index: str
    k: int | None
    weight: float
    queries: list[str] | None


class MilvusEngine:
    """Serves every named index from one collection of the Milvus server ``index.milvus``."""

    build_command: ClassVar[str | None] = "medcite index milvus"
    options_section: ClassVar[str | None] = "milvus"

    @classmethod
    def serve(cls, settings: Settings) -> Served:
        indexes = _to_milvus(settings.indexes)
        return Served(indexes, _hybrid_branches(settings, indexes))


def _to_milvus(named: Mapping[str, BackendConfig]) -> dict[str, BackendConfig]:
    """The named indexes moved to their Milvus backends (entries already on Milvus, or of no kind, stay)."""
    indexes: dict[str, BackendConfig] = {}
    for name, cfg in named.items():
        kind = cfg.kind if isinstance(cfg, IndexConfig) else ""
        target = _MILVUS_BACKENDS.get(kind)
        if target is None or cfg.backend.startswith("milvus"):
            indexes[name] = cfg
            continue
        kept = cfg.model_dump(mode="json", include=set(cfg.model_fields_set) | {"encoder"})
        carried = {k: v for k, v in kept.items() if k in _CARRIED[kind]}
        if carried.get("index_type") == "ivfpq":
            carried["index_type"] = "ivf_pq"
        try:
            indexes[name] = registry.validate_config("index", {"backend": target, **carried})
        except ConfigError as exc:
            raise ConfigError(f"index {name!r} cannot move to Milvus (index.backend=milvus): {exc.message}",
                              hint=exc.hint) from None
    return indexes


def _hybrid_branches(settings: Settings, indexes: Mapping[str, BackendConfig]) -> list[BackendConfig]:
    """Plain ``bm25`` and ``dense`` branches fused by RRF, of equal weight, budget and queries, become one
    ``milvus-hybrid`` branch (the server runs both searches and their RRF) when ``index.milvus.hybrid`` is
    'server'. With several sub-queries the server fuses each sub-query's two runs, then medcite fuses the
    sub-queries' runs by RRF as before."""
    r = settings.retrieve
    branches: list[BackendConfig] = list(r.branches)
    if settings.index.milvus.hybrid != "server" or r.fusion != "rrf":
        return branches
    chosen = [b for b in branches if isinstance(b, _Branch) and b.backend in ("bm25", "dense")
              and (on := indexes.get(b.index)) is not None and on.backend.startswith("milvus")]
    sparse = [b for b in chosen if b.backend == "bm25"]
    dense = [b for b in chosen if b.backend == "dense"]
    same = {(b.weight, b.k, tuple(b.queries) if b.queries is not None else None) for b in chosen}
    if len(sparse) != 1 or not dense or len(same) != 1:
        return branches
    first = branches.index(chosen[0])
    hybrid = registry.validate_config("retriever", {
        "backend": "milvus-hybrid", "label": "hybrid", "index": sparse[0].index,
        "vector_indexes": [b.index for b in dense], "rrf_k": r.rrf_k, "k": chosen[0].k,
        "weight": chosen[0].weight, "queries": chosen[0].queries,
    })
    rest = [b for b in branches if b not in chosen]
    rest.insert(first, hybrid)
    return rest
