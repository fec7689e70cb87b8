"""The FAISS vector index backend (the embedded default): settings, build-or-sync, search, stored vectors.

An index folder (:mod:`.folder`) is named by what it holds: the encoder's identity and the documents
of the store it follows. The FAISS layout (``index_type``, IVF-PQ and HNSW parameters, the on-disk
vector precision) is not part of that identity: when it changes, the index is rebuilt from its stored
vectors without encoding anything again. Search-time settings (``nprobe``, ``ef_search``, ``rerank``,
``threads``) apply on load.

Loading checks the manifest and that the query encoder's fingerprint and embedding size match the
ones the index was built with; a mismatch raises IndexMismatchError instead of returning noise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ...announce import long_work
from ...errors import ConfigError, IndexMismatchError
from ...registry import stage_field
from ...types import Hit
from ..base import EncodedSearch, IndexConfig, index_folder
from . import faiss_index as fx
from . import folder as fo
from .build import CHUNKS, build_dense_index, check_encoder
from .chunks import encoded_rows
from .encoders import Encoder, EncoderConfig, load_encoder

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore

log = logging.getLogger(__name__)


class FaissConfig(IndexConfig):
    """A dense index in FAISS (flat, HNSW or IVF-PQ with exact re-rank), in a folder under the store."""

    kind: ClassVar[str] = "vector"
    runtime_fields: ClassVar[frozenset[str]] = frozenset(
        {"nprobe", "rerank", "ef_search", "threads", "chunk_size", "compact_ratio"}
    )

    backend: Literal["faiss"] = "faiss"
    encoder: stage_field("encoder") = Field(  # type: ignore[valid-type]
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
        return self.encoder.model_names()  # type: ignore[no-any-return,attr-defined]

    def identity(self) -> dict[str, Any]:
        """Only the encoder (and the store the folder sits in) decide what the index holds."""
        assert isinstance(self.encoder, EncoderConfig)
        return {"backend": self.backend, "encoder": self.encoder.identity()}


def _default_encoder() -> EncoderConfig:
    from ... import registry

    cfg = registry.validate_config("encoder", "minilm")
    assert isinstance(cfg, EncoderConfig)
    return cfg


class FaissIndex(EncodedSearch):
    """k-nearest-neighbour search by inner product; IVF-PQ shortlists are re-scored exactly."""

    Config = FaissConfig

    def __init__(
        self,
        index_dir: str | Path,
        encoder: Encoder | None = None,
        *,
        settings: FaissConfig | None = None,
        name: str = "dense",
    ) -> None:
        self.path = Path(index_dir)
        self.name = name
        manifest = fo.read(self.path)
        self.settings = settings or _settings_from_manifest(manifest)
        if encoder is None:
            encoder = load_encoder(manifest["encoder"]["spec"])
        check_encoder(manifest, encoder, self.path)
        self.encoder = encoder
        self._load(manifest)

    def _load(self, manifest: dict[str, Any]) -> None:
        self._index = fo.load(self.path, manifest)
        self.manifest = manifest
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None
        log.info("dense index %s: %d live rows, %s", self.path, self._index.n_live, self._index.params)

    @classmethod
    def from_config(cls, cfg: FaissConfig, ctx: BuildContext) -> FaissIndex:
        """Build the store's index for ``cfg`` (or sync it: changes, then the layout) and open it; a long build
        or sync is announced before the encoder loads (:mod:`medcite.announce`)."""
        if ctx.store is None:
            raise ConfigError("a dense index needs a document store", hint="pass --corpus STORE")
        store, encoder_cfg = ctx.store, cfg.encoder
        assert isinstance(encoder_cfg, EncoderConfig)
        folder = index_folder(store.path, cfg)
        encoder = None
        if not fo.has_index(folder) and any(folder.parent.glob("dense-*")):  # adopting one needs the fingerprint
            encoder = ctx.encoder(encoder_cfg)
            adopt_earlier_folder(store, folder, encoder)
        count, full = pending(folder, store)
        doing = f"encoding {count:,} {'' if full else 'new or changed '}abstracts with {encoder_cfg.describe()}"
        with long_work(log, what="the dense index", doing=doing, count=count, where=str(folder), full=full,
                       per_second=encoder_cfg.docs_per_s()):
            encoder = encoder or ctx.encoder(encoder_cfg)
            build_dense_index(store, folder, cfg, encoder=encoder, relayout=True)
        return cls(folder, encoder, settings=cfg)

    @property
    def dim(self) -> int:
        return int(self.manifest["counts"]["dim"])

    def __len__(self) -> int:
        return self._index.n_live

    def sync(self, store: DocumentStore, since: int | None = None) -> dict[str, Any]:
        """Apply the store's changes after ``since`` (None: after the sequence number in the manifest)."""
        from .build import update_dense_index

        if since is not None and since != int(self.manifest["corpus"]["seq"]):
            raise IndexMismatchError(
                f"the dense index at {self.path} is at store sequence {self.manifest['corpus']['seq']}, not {since}",
                hint="sync from the index's own state (since=None)",
            )
        manifest = update_dense_index(store, self.path, self.settings, encoder=self.encoder)
        self._load(manifest)
        return manifest

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

    def get_vectors(self, pmids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored (full-precision on disk) vector of each PMID the index holds live; others are absent."""
        if self._lookup is None:
            live_rows = np.nonzero(self._index.live)[0]
            keys = np.asarray(self._index.pmids[live_rows])
            order = np.argsort(keys, kind="stable")
            self._lookup = (keys[order], live_rows[order])
        keys, rows = self._lookup
        wanted = np.array([int(p) for p in pmids], dtype=np.int64)
        pos = np.searchsorted(keys, wanted)
        pos = np.minimum(pos, max(len(keys) - 1, 0))
        out: dict[str, np.ndarray] = {}
        if not len(keys):
            return out
        found = keys[pos] == wanted
        for p, ok, i in zip(pmids, found, pos, strict=True):
            if ok:
                out[str(p)] = np.asarray(self._index.vectors[rows[i]], dtype=np.float32)
        return out

    def close(self) -> None:
        """Nothing to release: the FAISS index is in RAM and the row files are memory maps."""


def pending(folder: Path, store: DocumentStore) -> tuple[int, bool]:
    """The abstracts a build or sync of ``folder`` is about to encode, and whether it is a first build."""
    if fo.has_index(folder):
        corpus = fo.read(folder).get("corpus", {})
        if corpus.get("store_id") != store.store_id:
            return 0, False  # the sync refuses it, saying why
        return store.count_changes_since(int(corpus.get("seq", 0))), False
    return max(len(store) - encoded_rows(folder / CHUNKS), 0), True


def adopt_earlier_folder(store: DocumentStore, folder: Path, encoder: Encoder) -> bool:
    """Move a dense index that medcite 0.1 built for this store and encoder (``indexes/dense-<hash>``, named by
    every dense setting) to ``folder``, its name now, instead of encoding the whole store again."""
    for old in sorted(folder.parent.glob("dense-*")):
        if not fo.has_index(old) or (old / "chunks").exists():
            continue
        try:
            manifest = fo.read(old)
        except Exception:  # noqa: BLE001 - a damaged or foreign folder is simply not adopted
            continue
        if (manifest.get("corpus", {}).get("store_id") == store.store_id
                and manifest.get("encoder", {}).get("fingerprint") == encoder.fingerprint
                and manifest.get("counts", {}).get("dim") == encoder.dim):
            old.rename(folder)
            log.info("dense index %s adopted as %s (same store and encoder; nothing encoded again)", old, folder)
            return True
    return False


def _settings_from_manifest(manifest: dict[str, Any]) -> FaissConfig:
    """The index's config as recorded (encoder from its spec; fields of older manifests that no longer
    exist are ignored)."""
    from .encoders import spec_to_config

    recorded = manifest.get("settings", {})
    known = {k: v for k, v in recorded.items() if k in FaissConfig.model_fields and k not in ("encoder", "backend")}
    return FaissConfig(encoder=spec_to_config(manifest["encoder"]["spec"]), **known)
