"""The settings of the two Milvus index backends (``milvus-bm25``, ``milvus-dense``).

They sit below the collection's layout (:mod:`.layout`), which names the fields the settings' Milvus indexes
become, and below the backends (:mod:`.bm25_backend`, :mod:`.dense_backend`) and the engine switch
(:mod:`.engine`) that make them.
"""

from __future__ import annotations

from typing import ClassVar, Literal, NoReturn

from pydantic import Field, field_validator

from ... import registry
from ...errors import ConfigError
from ...io import JSONObject
from ...set_option import set_line
from ..base import IndexConfig
from ..dense.encoders import EncoderConfig, EncoderField
from ..sparse.base import SparseConfig


class MilvusBM25Config(SparseConfig):
    """BM25 by Milvus's full-text search function, on the server of ``index.milvus``."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"heap_mb", "threads"})

    backend: Literal["milvus-bm25"] = "milvus-bm25"
    k1: float = Field(1.2, gt=0, description="BM25 k1 (Milvus index parameter bm25_k1; tantivy's 1.2 by default).")
    b: float = Field(0.75, ge=0, le=1, description="BM25 b (Milvus index parameter bm25_b; tantivy's 0.75 by default).")
    fields: list[Literal["contents"]] = Field(
        default_factory=lambda: ["contents"],  # type: ignore[arg-type,return-value]
        description="Scored fields: Milvus indexes 'contents' (title + abstract as one field) only.",
    )

    @field_validator("stemmer")
    @classmethod
    def _stemmers(cls, value: str) -> str:
        if value == "porter":
            raise ValueError("Milvus's stemmer filter is Snowball ('english'), it has no Porter (1980) stemmer: "
                             "use stemmer 'english' or 'none'")
        return value


def _default_encoder() -> EncoderConfig:
    cfg = registry.validate_config("encoder", "minilm")
    assert isinstance(cfg, EncoderConfig)
    return cfg


class MilvusDenseConfig(IndexConfig):
    """A vector field of the store's Milvus collection, encoded with ``encoder``."""

    kind: ClassVar[str] = "vector"
    runtime_fields: ClassVar[frozenset[str]] = frozenset({"ef_search", "nprobe"})

    backend: Literal["milvus-dense"] = "milvus-dense"
    encoder: EncoderField = Field(
        default_factory=_default_encoder,
        description="The encoder of the articles (and queries): 'minilm' (packaged, offline), 'minilm-onnx', "
        "'medcpt', a Hugging Face name or folder, or a full encoder config.",
    )
    index_type: Literal["flat", "hnsw", "ivf_flat", "ivf_pq"] = Field(
        "hnsw", description="Milvus index of the field: 'flat' (exact), 'hnsw' (graph), 'ivf_flat', 'ivf_pq'."
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW neighbours per node (Milvus M).")
    ef_construction: int = Field(80, ge=8, description="HNSW build-time search depth (Milvus efConstruction).")
    ef_search: int = Field(128, ge=1, description="HNSW query-time search depth (Milvus ef; at least k).")
    nlist: int = Field(1024, ge=1, description="IVF cells (Milvus nlist).")
    nprobe: int = Field(32, ge=1, description="IVF cells visited per query (Milvus nprobe).")
    pq_m: int = Field(0, ge=0, description="IVF-PQ sub-quantizers; 0 = a divisor of dim near dim/4.")

    def model_names(self) -> list[str]:
        return self.encoder.model_names()

    def identity(self) -> JSONObject:
        """The encoder's vector space and the index layout (search-time options left out)."""
        data = self.model_dump(mode="json", exclude={"encoder", *self.runtime_fields})
        return {**data, "encoder": self.encoder.identity()}

    def build_params(self, dim: int) -> JSONObject:
        if self.index_type == "hnsw":
            return {"M": self.hnsw_m, "efConstruction": self.ef_construction}
        if self.index_type == "ivf_flat":
            return {"nlist": self.nlist}
        if self.index_type == "ivf_pq":
            m = self.pq_m or max(d for d in range(1, max(dim // 4, 1) + 1) if dim % d == 0)
            return {"nlist": self.nlist, "m": m, "nbits": 8}
        return {}

    def search_params(self, k: int) -> JSONObject:
        params: JSONObject = {}
        if self.index_type == "hnsw":
            params = {"ef": max(self.ef_search, k)}
        elif self.index_type.startswith("ivf"):
            params = {"nprobe": self.nprobe}
        return {"metric_type": "IP", "params": params}


def raise_unknown(backend: str) -> NoReturn:
    raise ConfigError(f"a {backend} index must be an entry of the settings' `indexes`",
                      hint=f"name it under `indexes` (e.g. {set_line('indexes.bm25.backend', 'milvus-bm25')})")
