"""The index stage: its base config, the protocols of a loaded index, and where an index lives.

Two kinds of index follow a document store: *sparse* ones (BM25: tantivy, bm25s) answer text queries,
*vector* ones (FAISS today, a server engine later) answer encoded queries. Settings name indexes
(``settings.indexes``: ``{"bm25": {"backend": "tantivy"}, "dense": {"backend": "faiss", "encoder":
"minilm"}}``) and retrieval branches refer to them by name, so a preset can mix encoders or engines.

Every backend owns its sync state (an embedded one in its folder's manifest, a server one server-side):
``from_config(cfg, ctx)`` opens the index and applies the store's changes since that state.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

from ..errors import CorruptIndexError
from ..io import JSONObject
from ..settings_base import BackendConfig
from ..types import Hit

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import numpy as np

    from ..corpus.store import DocumentStore
    from .dense.encoders import Encoder

INDEXES = "indexes"


class IndexConfig(BackendConfig):
    """Base of every index backend's settings. ``kind`` is ``"sparse"`` or ``"vector"``."""

    kind: ClassVar[str] = ""

    def identity(self) -> JSONObject:
        """What the index holds depends on (not runtime or layout choices): names its folder."""
        return self.model_dump(mode="json", exclude=set(self.runtime_fields))


def digest(data: Mapping[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def index_folder(store_path: str | Path, cfg: IndexConfig) -> Path:
    """``<store>/indexes/<backend>-<hash of the config's identity>``: one folder per index content."""
    return Path(store_path) / INDEXES / f"{cfg.backend}-{digest(cfg.identity())}"


def built_read_only(store: DocumentStore, folder: Path, what: str, command: str, *, say_behind: bool = True) -> bool:
    """True when ``store`` was opened read-only (its folder cannot be written): its index in ``folder`` is then used
    as it is, never built or brought up to date there (an index behind the store is used with a warning, unless
    ``say_behind`` is False: the caller's opening says it). An index that is not there is an error that says where
    to build it (``command``: the command that builds it); ``what`` names it (``the BM25 index``)."""
    if not getattr(store, "read_only", False):
        return False
    if not (folder / "manifest.json").is_file():
        raise CorruptIndexError(
            f"{what} of the store at {store.path} is not built ({folder} has no manifest.json), and the store's "
            "folder cannot be written, so it cannot be built there",
            hint=f"build it once where the store can be written (`{command}`, with this command's --preset and --set "
            "options), then read the store from here")
    try:
        seq = int(json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["corpus"]["seq"])
    except (OSError, ValueError, KeyError, TypeError):
        seq = None  # opening it says what is wrong with it
    if say_behind and seq is not None and seq < store.seq:
        log.warning("%s is behind its store by %d change set(s), and the store's folder cannot be written: it is used "
                    "as it is (update it where the store can be written: `%s`)", folder, store.seq - seq, command)
    return True


class EncodedSearch:
    """Text search of a vector index: queries encoded by its ``encoder``, then :meth:`search_vectors` (which
    each backend implements) — shared so FAISS and a server engine encode queries the same way."""

    encoder: Encoder
    search_vectors: Callable[[np.ndarray, int], list[list[Hit]]]

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        return self.search_vectors(self.encoder.encode_queries(list(queries)), k)


@runtime_checkable
class SparseIndex(Protocol):
    """A loaded BM25 index: free-text queries in, ranked hits (PMIDs) out. Never raises on odd text."""

    name: str
    manifest: JSONObject

    def __len__(self) -> int: ...

    def search(self, query: str, k: int) -> list[Hit]: ...

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


@runtime_checkable
class TermStatistics(Protocol):
    """Collection statistics of a sparse index's analysed terms: its live documents (``len``) and how many
    documents hold a term (``doc_freq``), as BM25's idf reads them."""

    def __len__(self) -> int: ...

    def doc_freq(self, term: str) -> int: ...


def term_statistics(index: object) -> TermStatistics | None:
    """Where the document count and frequencies of ``index``'s terms come from: the index itself when it counts
    its terms (tantivy, bm25s), what its ``term_statistics()`` opens when it keeps them elsewhere (milvus-bm25),
    else None."""
    opener = getattr(index, "term_statistics", None)
    if callable(opener):
        return cast(TermStatistics, opener())
    return cast(TermStatistics, index) if callable(getattr(index, "doc_freq", None)) else None


@runtime_checkable
class VectorIndex(Protocol):
    """A loaded dense index that follows a document store and answers encoded queries.

    ``sync(store, since)`` applies the store's changes after sequence number ``since`` (None: after the
    state the index recorded itself); ``get_vectors`` returns the stored vectors of PMIDs it holds, so
    a reranker with the same encoder reuses them instead of encoding the articles again.
    """

    name: str
    dim: int
    encoder: Encoder

    def __len__(self) -> int: ...

    def sync(self, store: DocumentStore, since: int | None = None) -> JSONObject: ...

    def search(self, query: str, k: int) -> list[Hit]: ...

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]: ...

    def get_vectors(self, pmids: Sequence[str]) -> dict[str, np.ndarray]: ...
