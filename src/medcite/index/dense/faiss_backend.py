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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...announce import long_work
from ...errors import ConfigError, IndexMismatchError
from ...io import JSONObject
from ...types import Hit
from ..base import EncodedSearch, built_read_only, index_folder
from ..build_lock import building
from . import faiss_index as fx
from . import folder as fo
from .build import CHUNKS, build_dense_index, check_encoder
from .chunks import encoded_rows
from .encoders import Encoder, EncoderConfig, load_encoder, recorded_encoder
from .faiss_config import FaissConfig

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore

log = logging.getLogger(__name__)


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
            encoder = load_encoder(recorded_encoder(manifest["encoder"]["spec"]))
        check_encoder(manifest, encoder, self.path)
        self.encoder = encoder
        self._load(manifest)

    def _load(self, manifest: JSONObject) -> None:
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
        if built_read_only(store, folder, "the dense index", f"medcite index dense --store {store.path}"):
            return cls(folder, ctx.encoder(encoder_cfg), settings=cfg)
        # what is left to do is read under the lock: after waiting for another job's build, it is nothing
        with building(folder, "the dense index"):
            encoder = None
            if not fo.has_index(folder) and any(folder.parent.glob("dense-*")):  # adopting one needs the fingerprint
                encoder = ctx.encoder(encoder_cfg)
                adopt_earlier_folder(store, folder, encoder)
            todo = pending(folder, store)
            with long_work(log, what="the dense index", doing=todo.doing(encoder_cfg.describe()), count=todo.left,
                           where=str(folder), full=todo.full, per_second=encoder_cfg.docs_per_s()):
                encoder = encoder or ctx.encoder(encoder_cfg)
                build_dense_index(store, folder, cfg, encoder=encoder, relayout=True)
        # opened after letting go: the jobs of an array that only load the index do not queue for each other
        return cls(folder, encoder, settings=cfg)

    @property
    def dim(self) -> int:
        return int(self.manifest["counts"]["dim"])

    def __len__(self) -> int:
        return self._index.n_live

    def sync(self, store: DocumentStore, since: int | None = None) -> JSONObject:
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


@dataclass(frozen=True)
class Pending:
    """What a build or sync of a dense index folder is about to do: ``total`` abstracts to encode, of which
    ``done`` are already encoded (the chunks of an interrupted first build), and whether it is a first build."""

    total: int
    done: int
    full: bool

    @property
    def left(self) -> int:
        return self.total - self.done

    def doing(self, encoder: str) -> str:
        """``encoding 19,089 abstracts (10,000 already encoded, resuming) with X``: the total the progress lines
        count to (they count the chunks already encoded as done)."""
        resuming = f" ({self.done:,} already encoded, resuming)" if self.done else ""
        return f"encoding {self.total:,} {'' if self.full else 'new or changed '}abstracts{resuming} with {encoder}"


def pending(folder: Path, store: DocumentStore) -> Pending:
    """The abstracts a build or sync of ``folder`` is about to encode (read it under the folder's build lock:
    another job's unfinished chunks are not this job's to count)."""
    if fo.has_index(folder):
        corpus = fo.read(folder).get("corpus", {})
        if corpus.get("store_id") != store.store_id:
            return Pending(0, 0, False)  # the sync refuses it, saying why
        return Pending(store.count_changes_since(int(corpus.get("seq", 0))), 0, False)
    total = len(store)
    return Pending(total, min(encoded_rows(folder / CHUNKS), total), True)


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


def _settings_from_manifest(manifest: JSONObject) -> FaissConfig:
    """The index's config as recorded (encoder from its spec; fields of older manifests that no longer
    exist are ignored)."""

    recorded = manifest.get("settings", {})
    known = {k: v for k, v in recorded.items() if k in FaissConfig.model_fields and k not in ("encoder", "backend")}
    return FaissConfig(encoder=recorded_encoder(manifest["encoder"]["spec"]), **known)
