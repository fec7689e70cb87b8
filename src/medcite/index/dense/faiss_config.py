"""The settings of the FAISS vector index backend (``faiss``): layout, build and search options.

They sit below the backend (:mod:`.faiss_backend`) and its build code (:mod:`.build`, :mod:`.chunks`), which
all read them.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ...io import JSONObject
from ..base import IndexConfig
from .encoders import EncoderConfig, EncoderField


class FaissConfig(IndexConfig):
    """A dense index in FAISS (flat, HNSW or IVF-PQ with exact re-rank), in a folder under the store."""

    kind: ClassVar[str] = "vector"
    runtime_fields: ClassVar[frozenset[str]] = frozenset(
        {"nprobe", "rerank", "ef_search", "threads", "chunk_size", "compact_ratio"}
    )

    backend: Literal["faiss"] = "faiss"
    encoder: EncoderField = Field(
        default_factory=lambda: _default_encoder(),
        description="The encoder of the articles (and queries): 'minilm' (packaged, offline), 'minilm-onnx' "
        "(no torch), 'medcpt', a Hugging Face name or folder, or a full encoder config.",
    )
    index_type: Literal["flat", "hnsw", "ivfpq"] = Field(
        "flat", description="FAISS layout: 'flat' (exact), 'hnsw' (graph), 'ivfpq' (compressed + re-rank)."
    )
    nlist: int = Field(0, ge=0, description="IVF-PQ coarse cells; 0 = about 4*sqrt(N), fewer when small.")
    pq_m: int = Field(0, ge=0, description="IVF-PQ sub-quantizers (bytes/vector); 0 = divisor of dim <= 64.")
    pq_nbits: int = Field(8, ge=4, le=12, description="IVF-PQ bits per sub-quantizer (fewer if tiny corpus).")
    nprobe: int = Field(32, ge=1, description="IVF-PQ cells visited per query.")
    rerank: int = Field(
        256, ge=1, description="IVF-PQ shortlist re-scored exactly from the on-disk vectors (at least k)."
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW neighbours per node.")
    ef_construction: int = Field(80, ge=8, description="HNSW build-time search depth.")
    ef_search: int = Field(128, ge=1, description="HNSW query-time search depth (at least k).")
    train_size: int = Field(0, ge=0, description="IVF-PQ training sample; 0 = min(N, max(64*nlist, 50000)).")
    chunk_size: int = Field(10000, ge=1, description="Articles per build chunk (memory bound, resume unit).")
    vector_dtype: Literal["float16", "float32"] = Field(
        "float16", description="On-disk dtype of the full vectors used for exact re-rank and re-layouts."
    )
    compact_ratio: float = Field(
        0.25, gt=0, le=1, description="Rebuild the index from stored vectors once this share of rows is dead."
    )
    threads: int = Field(0, ge=0, description="FAISS threads; 0 = all cores (1 is faster on a busy machine).")

    def model_names(self) -> list[str]:
        return self.encoder.model_names()

    def identity(self) -> JSONObject:
        """Only the encoder (and the store the folder sits in) decide what the index holds."""
        assert isinstance(self.encoder, EncoderConfig)
        return {"backend": self.backend, "encoder": self.encoder.identity()}


def _default_encoder() -> EncoderConfig:
    from ... import registry

    cfg = registry.validate_config("encoder", "minilm")
    assert isinstance(cfg, EncoderConfig)
    return cfg
