"""Dense kNN on a Milvus server (``milvus-dense``): a FLOAT_VECTOR field of the store's collection
(:mod:`.collection`) holding the vectors of the index's encoder, searched by inner product as FAISS does.

``index_type`` picks Milvus's index: 'flat' (exact), 'hnsw' (Malkov & Yashunin 2018) or 'ivf_flat' /
'ivf_pq' (Jégou et al. 2011). Search-time options (``ef_search``, ``nprobe``) change no stored data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import IndexMismatchError
from ...io import JSONObject
from ...types import Hit
from ..base import EncodedSearch
from .collection import MilvusCollection
from .configs import MilvusDenseConfig, raise_unknown
from .layout import field_name

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore


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
        coll = MilvusCollection.open(ctx)
        name = next((n for n, c in coll.layout.vector.items() if c == cfg), None)
        if name is None:
            raise_unknown(cfg.backend)
        return cls(coll, name, cfg)

    def __len__(self) -> int:
        return len(self.collection)

    def sync(self, store: DocumentStore, since: int | None = None) -> JSONObject:
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
