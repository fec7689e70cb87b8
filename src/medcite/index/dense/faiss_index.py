"""FAISS layouts over inner product: exact flat, HNSW, and IVF-PQ with an exact re-rank from disk.

- ``flat``: exhaustive inner product (``IndexFlatIP``), exact.
- ``hnsw``: hierarchical navigable small-world graph (Malkov & Yashunin 2018), full vectors in RAM.
- ``ivfpq``: inverted file with product quantisation (Jégou, Douze & Schmid 2011, "Product
  quantization for nearest neighbor search"): ``m`` bytes per vector plus an 8-byte id in RAM. Its
  shortlist (``rerank`` candidates) is re-scored exactly against the full vectors, which stay on disk
  in a memory-mapped file and are read only for the shortlist ("IVFADC + re-ranking", Jégou et al. 2011).

Rows are numbered in the order they were added; the row number is the FAISS id. A row is never reused:
replaced or deleted documents are switched off in a live mask and skipped during search with an
``IDSelectorBitmap``, and the index is rebuilt from the stored vectors once too many rows are dead.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ...errors import ConfigError, CorruptIndexError
from ...io import JSONObject
from ...registry import require
from ...write_failures import write_failure

if TYPE_CHECKING:
    from .faiss_config import FaissConfig

log = logging.getLogger(__name__)

#: what a failed write of the dense index keeps, in its error
KEPT_INDEX = ("nothing already written was lost: the index folder keeps its last complete state (its manifest names "
              "only whole files), and the encoded chunks of a first build stay for the next run to resume from")


def faiss_module() -> ModuleType:
    faiss: ModuleType = require("faiss", "dense", "the dense index")
    return faiss


class FaissIndexObject(Protocol):
    """What medcite calls on a FAISS index (flat, HNSW or IVF-PQ: SWIG objects, which faiss ships no hints for)."""

    d: int
    ntotal: int
    is_trained: bool

    def train(self, x: np.ndarray) -> None: ...

    def add(self, x: np.ndarray) -> None: ...

    def add_with_ids(self, x: np.ndarray, ids: np.ndarray) -> None: ...

    def search(self, x: np.ndarray, k: int, *, params: object = None) -> tuple[np.ndarray, np.ndarray]: ...

    def sa_code_size(self) -> int: ...


# -- parameters ------------------------------------------------------------------------------
def auto_nlist(n: int) -> int:
    """About 4*sqrt(N) cells, but at least ~39 training points per cell (FAISS's k-means rule)."""
    return max(1, min(int(4 * math.sqrt(max(n, 1))), n // 39))


def auto_pq_m(dim: int) -> int:
    """Largest divisor of ``dim`` that is at most 64 and leaves at least 4 dims per sub-vector."""
    for m in range(min(64, dim // 4), 0, -1):
        if dim % m == 0:
            return m
    return 1


def auto_nbits(n_train: int, nbits: int) -> int:
    """Fewer bits per code when the sample has under 39 points per centroid (FAISS's k-means rule)."""
    fit = int(math.log2(max(n_train // 39, 16)))
    return max(4, min(nbits, fit))


@contextmanager
def omp_threads(threads: int) -> Iterator[None]:
    """Cap FAISS's OpenMP threads for the block (0: leave the default, all cores), then restore the cap.

    FAISS and torch share one OpenMP runtime in a process: a lasting cap would also make every torch model
    loaded beside the index (query encoder, cross-encoder) run on that many threads.
    """
    if threads <= 0:
        yield
        return
    faiss = faiss_module()
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@dataclass(frozen=True)
class IndexParams:
    """The layout and its parameters, as stored in the manifest."""

    type: str
    dim: int
    nlist: int = 0
    pq_m: int = 0
    pq_nbits: int = 8
    hnsw_m: int = 32
    ef_construction: int = 80

    def to_dict(self) -> JSONObject:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def choose_params(kind: str, dim: int, n: int, settings: FaissConfig) -> IndexParams:
    """Pick the layout parameters for ``n`` vectors of ``dim`` from the dense settings."""
    if kind == "flat":
        return IndexParams("flat", dim)
    if kind == "hnsw":
        return IndexParams("hnsw", dim, hnsw_m=settings.hnsw_m, ef_construction=settings.ef_construction)
    if kind != "ivfpq":
        raise ConfigError(f"unknown dense index type {kind!r}", hint="choose flat, hnsw or ivfpq")
    m = settings.pq_m or auto_pq_m(dim)
    if dim % m:
        raise ConfigError(
            f"pq_m={m} does not divide the embedding size {dim}",
            hint=f"set index.dense.pq_m to a divisor of {dim}, or 0 for automatic ({auto_pq_m(dim)})",
        )
    nlist = settings.nlist or auto_nlist(n)
    return IndexParams(
        "ivfpq",
        dim,
        nlist=min(nlist, max(1, n)),
        pq_m=m,
        pq_nbits=auto_nbits(train_size(n, nlist, settings), settings.pq_nbits),
    )


def train_size(n: int, nlist: int, settings: FaissConfig) -> int:
    return min(n, settings.train_size or max(64 * nlist, 50_000))


def new_index(params: IndexParams) -> FaissIndexObject:
    faiss = faiss_module()
    ip = faiss.METRIC_INNER_PRODUCT
    if params.type == "flat":
        return faiss.IndexFlatIP(params.dim)
    if params.type == "hnsw":
        index = faiss.IndexHNSWFlat(params.dim, params.hnsw_m, ip)
        index.hnsw.efConstruction = params.ef_construction
        return index
    quantizer = faiss.IndexFlatIP(params.dim)
    return faiss.IndexIVFPQ(quantizer, params.dim, params.nlist, params.pq_m, params.pq_nbits, ip)


def train(index: FaissIndexObject, sample: np.ndarray) -> None:
    if not index.is_trained:
        log.info("training %s on %d vectors", type(index).__name__, len(sample))
        index.train(np.ascontiguousarray(sample, dtype=np.float32))


def add(index: FaissIndexObject, vectors: np.ndarray, first_row: int) -> None:
    """Add vectors whose row numbers start at ``first_row`` (ids are row numbers)."""
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    if index.ntotal != first_row and not hasattr(index, "invlists"):
        raise CorruptIndexError(
            f"the dense index holds {index.ntotal} rows but the next row is {first_row}",
            hint="rebuild the dense index (--rebuild)",
        )
    if hasattr(index, "invlists"):
        index.add_with_ids(vecs, np.arange(first_row, first_row + len(vecs), dtype=np.int64))
    else:
        index.add(vecs)


def write_index(index: FaissIndexObject, path: Path) -> None:
    """Write atomically: a crash leaves the previous file intact; a write the file system refuses raises a
    :class:`~medcite.errors.WriteError` naming ``path`` and the size it needs, and leaves no temporary file."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        faiss_module().write_index(index, str(tmp))
        os.replace(tmp, path)
    except (RuntimeError, OSError) as exc:
        failed = write_failure(exc, path, kept=KEPT_INDEX, needed=_index_bytes(index), probe=tmp)
        tmp.unlink(missing_ok=True)
        if failed is None:
            raise
        raise failed from exc


def _index_bytes(index: FaissIndexObject) -> int | None:
    """About how many bytes ``index`` takes on disk (its codes; graph links and lists aside)."""
    try:
        return int(index.ntotal) * int(index.sa_code_size())
    except (AttributeError, RuntimeError, TypeError):
        return None


def read_index(path: Path) -> FaissIndexObject:
    if not path.exists():
        raise CorruptIndexError(f"{path} is missing", hint="rebuild the dense index (--rebuild)")
    try:
        return faiss_module().read_index(str(path))
    except RuntimeError as exc:
        raise CorruptIndexError(
            f"{path} is damaged ({exc})", hint="rebuild the dense index (--rebuild)"
        ) from None


# -- stored rows -----------------------------------------------------------------------------
def open_rows(
    vec_path: Path, pmid_path: Path, rows: int, dim: int, dtype: str
) -> tuple[np.ndarray, np.ndarray]:
    """Memory-map the first ``rows`` stored vectors and PMIDs (bytes past them are ignored)."""
    want_vec = rows * dim * np.dtype(dtype).itemsize
    for path, want in ((vec_path, want_vec), (pmid_path, rows * 8)):
        size = path.stat().st_size if path.exists() else -1
        if size < want:
            raise CorruptIndexError(
                f"{path} holds {max(size, 0)} bytes, the manifest needs {want}",
                hint="the index folder is incomplete; rebuild it (--rebuild)",
            )
    if rows == 0:
        return np.zeros((0, dim), dtype=dtype), np.zeros(0, dtype=np.int64)
    vectors = np.memmap(vec_path, dtype=dtype, mode="r", shape=(rows, dim))
    pmids = np.memmap(pmid_path, dtype=np.int64, mode="r", shape=(rows,))
    return vectors, pmids


def append_rows(
    vec_path: Path, pmid_path: Path, rows: int, dim: int, dtype: str, vectors: np.ndarray, pmids: np.ndarray
) -> int:
    """Append after the first ``rows`` (cutting any tail an interrupted run left); returns the new count."""
    for path, width in ((vec_path, dim * np.dtype(dtype).itemsize), (pmid_path, 8)):
        with open(path, "ab") as fh:
            fh.truncate(rows * width)
    for path, data in ((vec_path, np.ascontiguousarray(vectors, dtype=dtype).tobytes()),
                       (pmid_path, np.ascontiguousarray(pmids, dtype=np.int64).tobytes())):
        try:
            with open(path, "ab") as fh:
                fh.write(data)
        except OSError as exc:  # the rows past ``rows`` are cut off by the next append: the manifest never named them
            failed = write_failure(exc, path, kept=KEPT_INDEX)
            if failed is None:
                raise
            raise failed from exc
    return rows + len(pmids)


# -- search ----------------------------------------------------------------------------------
def live_selector(live: np.ndarray) -> object | None:
    """An IDSelectorBitmap of the live rows, or None when every row is live (no filtering needed)."""
    if bool(live.all()):
        return None
    faiss = faiss_module()
    bits = np.packbits(live.astype(np.uint8), bitorder="little")
    sel = faiss.IDSelectorBitmap(len(live), faiss.swig_ptr(bits))
    sel.bits_ref = bits  # keep the buffer alive as long as the selector
    return sel


def search(
    index: FaissIndexObject,
    params: IndexParams,
    queries: np.ndarray,
    k: int,
    *,
    vectors: np.ndarray,
    live: np.ndarray,
    nprobe: int = 32,
    ef_search: int = 128,
    rerank: int = 256,
    selector: object | None = None,
    n_live: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` rows per query: (scores, rows), rows -1 where fewer live rows exist.

    ``selector``/``n_live`` may be passed precomputed (see :func:`live_selector`) to skip a pass over ``live``.
    """
    faiss = faiss_module()
    q = np.ascontiguousarray(queries, dtype=np.float32)
    k = max(1, min(k, int(live.sum() if n_live is None else n_live) or 1))
    sel = live_selector(live) if n_live is None else selector
    if params.type == "flat":
        sp = faiss.SearchParameters(sel=sel) if sel is not None else None
        return index.search(q, k, params=sp)
    if params.type == "hnsw":
        sp = faiss.SearchParametersHNSW(efSearch=max(ef_search, k), sel=sel)
        return index.search(q, k, params=sp)
    shortlist = max(rerank, k)
    sp = faiss.SearchParametersIVF(nprobe=min(nprobe, params.nlist), sel=sel)
    _, cand = index.search(q, shortlist, params=sp)
    return exact_rerank(q, cand, vectors, k)


def exact_rerank(
    queries: np.ndarray, cand: np.ndarray, vectors: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Re-score each query's candidate rows with full vectors read from the memory map."""
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    rows = np.full((len(queries), k), -1, dtype=np.int64)
    for i, row_ids in enumerate(cand):
        ids = np.unique(row_ids[row_ids >= 0])  # sorted: sequential reads from the memory map
        if not len(ids):
            continue
        exact = np.asarray(vectors[ids], dtype=np.float32) @ queries[i]
        top = np.argsort(-exact, kind="stable")[:k]
        scores[i, : len(top)] = exact[top]
        rows[i, : len(top)] = ids[top]
    return scores, rows


def memory_bytes(index: FaissIndexObject) -> int:
    """Bytes the index holds in RAM (its serialised size: codes, ids, centroids, graph).

    Serialising copies the index: for a large one, take the size of its file instead.
    """
    return int(faiss_module().serialize_index(index).nbytes)
