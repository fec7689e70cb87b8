"""Dense retrieval over a dense index folder (a :class:`medcite.retrieve.base.Retriever`).

Loading checks the manifest and that the query encoder's fingerprint and embedding size match the
ones the index was built with; a mismatch raises IndexMismatchError instead of returning noise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import IndexMismatchError
from ...types import Hit
from . import faiss_index as fx
from . import folder as fo
from .build import check_encoder
from .encoders import Encoder, load_encoder

if TYPE_CHECKING:
    from ...config import DenseSettings

log = logging.getLogger(__name__)


class DenseRetriever:
    """k-nearest-neighbour search by inner product; IVF-PQ shortlists are re-scored exactly."""

    def __init__(
        self,
        index_dir: str | Path,
        encoder: Encoder | None = None,
        *,
        settings: DenseSettings | None = None,
        name: str = "dense",
    ) -> None:
        from ...config import DenseSettings

        self.path = Path(index_dir)
        self.name = name
        manifest = fo.read(self.path)
        self.settings = settings or DenseSettings.model_validate(manifest.get("settings", {}))
        if encoder is None:
            encoder = load_encoder(
                manifest["encoder"]["spec"], batch_size=self.settings.batch_size, device=self.settings.device
            )
        check_encoder(manifest, encoder, self.path)
        self.encoder = encoder
        self._index = fo.load(self.path, manifest)
        self.manifest = manifest
        log.info("dense index %s: %d live rows, %s", self.path, self._index.n_live, self._index.params)

    @property
    def dim(self) -> int:
        return int(self.manifest["counts"]["dim"])

    def __len__(self) -> int:
        return self._index.n_live

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        return self.search_vectors(self.encoder.encode_queries(list(queries)), k)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Top ``k`` hits for each row of ``vectors`` (already in the index's space)."""
        vecs = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vecs.shape[1] != self.dim:
            raise IndexMismatchError(
                f"query vectors are {vecs.shape[1]}-d, the dense index at {self.path} is {self.dim}-d",
                hint="encode queries with the encoder the index was built with",
            )
        if k < 1 or not len(self):
            return [[] for _ in range(len(vecs))]
        idx = self._index
        s = self.settings
        with fx.omp_threads(s.threads):
            scores, rows = fx.search(
                idx.index, idx.params, vecs, k, vectors=idx.vectors, live=idx.live,
                nprobe=s.nprobe, ef_search=s.ef_search, rerank=s.rerank, selector=idx.selector, n_live=idx.n_live,
            )  # fmt: skip
        out: list[list[Hit]] = []
        for row_scores, row_ids in zip(scores, rows, strict=True):
            keep = row_ids >= 0
            pmids = idx.pmids[row_ids[keep]]
            hits = [
                Hit(str(int(p)), float(sc), rank)
                for rank, (p, sc) in enumerate(zip(pmids, row_scores[keep], strict=True), start=1)
            ]
            out.append(hits)
        return out
