"""Dense kNN on a Milvus server (``milvus-dense``): a FLOAT_VECTOR field of the store's collection
(:mod:`.collection`) holding the vectors of the index's encoder, searched by inner product as FAISS does.

``index_type`` picks Milvus's index: 'flat' (exact), 'hnsw' (Malkov & Yashunin 2018) or 'ivf_flat' /
'ivf_pq' (Jégou et al. 2011). Search-time options (``ef_search``, ``nprobe``) change no stored data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ...errors import IndexMismatchError
from ...registry import stage_field
from ...types import Hit
from ..base import EncodedSearch, IndexConfig
from .collection import MilvusCollection
from .layout import field_name

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore


def _default_encoder() -> Any:
    from ... import registry

    return registry.validate_config("encoder", "minilm")


class MilvusDenseConfig(IndexConfig):
    """A vector field of the store's Milvus collection, encoded with ``encoder``."""

    kind: ClassVar[str] = "vector"
    runtime_fields: ClassVar[frozenset[str]] = frozenset({"ef_search", "nprobe"})

    backend: Literal["milvus-dense"] = "milvus-dense"
    encoder: stage_field("encoder") = Field(  # type: ignore[valid-type]
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
        return self.encoder.model_names()  # type: ignore[no-any-return,attr-defined]

    def identity(self) -> dict[str, Any]:
        """The encoder's vector space and the index layout (search-time options left out)."""
        data = self.model_dump(mode="json", exclude={"encoder", *self.runtime_fields})
        return {**data, "encoder": self.encoder.identity()}  # type: ignore[attr-defined]

    def build_params(self, dim: int) -> dict[str, Any]:
        if self.index_type == "hnsw":
            return {"M": self.hnsw_m, "efConstruction": self.ef_construction}
        if self.index_type == "ivf_flat":
            return {"nlist": self.nlist}
        if self.index_type == "ivf_pq":
            m = self.pq_m or max(d for d in range(1, max(dim // 4, 1) + 1) if dim % d == 0)
            return {"nlist": self.nlist, "m": m, "nbits": 8}
        return {}

    def search_params(self, k: int) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.index_type == "hnsw":
            params = {"ef": max(self.ef_search, k)}
        elif self.index_type.startswith("ivf"):
            params = {"nprobe": self.nprobe}
        return {"metric_type": "IP", "params": params}


class MilvusDenseIndex(EncodedSearch):
    """A ``VectorIndex`` over one vector field of the store's Milvus collection."""

    Config = MilvusDenseConfig

    def __init__(self, collection: MilvusCollection, name: str, settings: MilvusDenseConfig) -> None:
        self.collection = collection
        self.name = name
        self.settings = settings
        self.field = field_name("vec", name)
        self.encoder = collection.encoders[name]
        self.dim = int(self.encoder.dim)

    @classmethod
    def from_config(cls, cfg: MilvusDenseConfig, ctx: BuildContext) -> MilvusDenseIndex:
        from .bm25_backend import raise_unknown

        coll = MilvusCollection.open(ctx)
        name = next((n for n, c in coll.layout.vector.items() if c == cfg), None)
        if name is None:
            raise_unknown(cfg.backend)
        return cls(coll, name, cfg)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.collection)

    def sync(self, store: DocumentStore, since: int | None = None) -> dict[str, Any]:
        """Apply the store's changes after the sequence number recorded on the server (``since`` must be None
        or that number)."""
        if since is not None:
            recorded = int(self.collection.properties().get("medcite.seq", "-1"))
            if since != recorded:
                raise IndexMismatchError(
                    f"Milvus collection {self.collection.name!r} is at store sequence {recorded}, not {since}",
                    hint="sync from the collection's own state (since=None)",
                )
        return self.collection.sync(store)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        vecs = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vecs.shape[1] != self.dim:
            raise IndexMismatchError(
                f"query vectors are {vecs.shape[1]}-d, the Milvus field {self.field!r} of collection "
                f"{self.collection.name!r} is {self.dim}-d: dimension mismatch",
                hint="encode queries with the encoder the collection was built with",
            )
        return self.collection.search(self.field, [v.tolist() for v in vecs], k, self.settings.search_params(k))

    def get_vectors(self, pmids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of the PMIDs the collection holds (others are absent)."""
        return self.collection.get_vectors(self.field, pmids)

    def close(self) -> None:
        """The collection (and its connection) belongs to the context's model cache, which closes it."""
