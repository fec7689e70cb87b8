"""Build and update a dense index from the document store, in bounded memory, resumably.

A build has two phases. *Encode* (:mod:`.chunks`): articles are read from the store in PMID order and
encoded ``chunk_size`` at a time into ``chunks/embeds_chunk_N.npy`` + ``pmids_chunk_N.json`` (NCBI's layout
for its MedCPT PubMed embeddings), so an interrupted build resumes after the last finished chunk.
*Assemble*: the chunks are streamed into the memory-mapped row files and the FAISS index (IVF-PQ is trained
on a sample first). The manifest records the store sequence number the build started from; changes made
since are then applied as an update.

An update encodes only the articles added or replaced since the manifest's sequence number, appends
them as new rows and switches off the rows of replaced and deleted PMIDs. Once ``compact_ratio`` of
the rows are dead, or (with ``relayout``) the layout settings differ from the ones the index was laid
out with (``index_type``, IVF-PQ/HNSW parameters, on-disk ``vector_dtype``), the index is rebuilt from
the stored vectors without re-encoding anything.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import IndexMismatchError, InputError
from ...io import JSONObject
from ...progress import progress
from ..build_lock import building, phase
from . import faiss_index as fx
from . import folder as fo
from .chunks import Chunk, check_vectors, chunk_files, encode_chunks, start_or_resume
from .encoders import Encoder, load_encoder, recorded_encoder
from .faiss_config import FaissConfig

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore
    from ...types import Article

log = logging.getLogger(__name__)

CHUNKS = "chunks"
#: settings that shape the FAISS layout: a change re-lays the index out from its stored vectors
LAYOUT_FIELDS = ("index_type", "nlist", "pq_m", "pq_nbits", "hnsw_m", "ef_construction", "train_size",
                 "vector_dtype")


def encoder_record(encoder: Encoder, spec: JSONObject) -> JSONObject:
    return {"spec": spec, "name": encoder.name, "fingerprint": encoder.fingerprint, "dim": encoder.dim}


def check_encoder(manifest: JSONObject, encoder: Encoder, where: Path) -> None:
    """Refuse an encoder whose vector space differs from the index's (IndexMismatchError)."""
    rec = manifest.get("encoder", {})
    dim = manifest.get("counts", {}).get("dim")
    if encoder.dim != dim or encoder.fingerprint != rec.get("fingerprint"):
        raise IndexMismatchError(
            f"the dense index at {where} was built with encoder {rec.get('name')!r} ({dim}-d, fingerprint "
            f"{rec.get('fingerprint')}), but the encoder given is {encoder.name!r} ({encoder.dim}-d, "
            f"fingerprint {encoder.fingerprint})",
            hint=f"use the encoder the index was built with ({rec.get('spec')}), or rebuild the index with "
            "--rebuild",
        )


# -- public entry points ---------------------------------------------------------------------
def build_dense_index(
    store: DocumentStore,
    out: str | Path,
    settings: FaissConfig,
    *,
    encoder: Encoder | None = None,
    rebuild: bool = False,
    relayout: bool = False,
) -> JSONObject:
    """Build the dense index of ``store`` into ``out``, or bring an existing one up to date.

    Resumes an interrupted build; an existing index is updated incrementally unless ``rebuild``
    (``relayout``: also re-lay it out from its stored vectors when the layout settings changed).
    Returns the manifest. Holds the folder's build lock (:mod:`..build_lock`): another job's build of the same
    folder is waited for, then found done (or resumed, when it stopped halfway).
    """
    out = Path(out)
    with building(out, "the dense index"):
        return _build(store, out, settings, encoder=encoder, rebuild=rebuild, relayout=relayout)


def _build(store: DocumentStore, out: Path, settings: FaissConfig, *, encoder: Encoder | None, rebuild: bool,
           relayout: bool) -> JSONObject:
    if fo.has_index(out) and not rebuild:
        return update_dense_index(store, out, settings, encoder=encoder, relayout=relayout)
    if len(store) == 0:
        raise InputError(
            f"the document store at {store.path} is empty: there is nothing to index",
            hint=f"ingest PubMed files first: medcite ingest FILES --store {store.path}",
        )
    spec = settings.encoder.model_dump(mode="json")
    encoder = encoder or load_encoder(settings.encoder)
    chunk_dir = out / CHUNKS
    if rebuild and chunk_dir.exists():
        shutil.rmtree(chunk_dir)
    state = start_or_resume(chunk_dir, store, encoder, settings)
    encode_chunks(store, encoder, chunk_dir, settings.chunk_size)
    old = fo.read(out)["files"] if fo.has_index(out) else None
    corpus = {"store_id": store.store_id, "seq": state["seq"], "count": len(store)}
    assemble(out, chunk_files(chunk_dir), settings, encoder_record(encoder, spec), corpus, old)
    shutil.rmtree(chunk_dir)
    return update_dense_index(store, out, settings, encoder=encoder)


def layout_changes(manifest: JSONObject, settings: FaissConfig) -> dict[str, tuple[Any, Any]]:
    """Layout settings that differ between the index as laid out and ``settings``: name -> (old, new)."""
    old = dict(manifest.get("settings", {}))
    old["index_type"] = manifest["index"]["type"]
    old["vector_dtype"] = manifest["vector_dtype"]
    new = settings.model_dump(mode="json")
    return {k: (old.get(k), new[k]) for k in LAYOUT_FIELDS if old.get(k) != new[k]}


def update_dense_index(
    store: DocumentStore,
    out: str | Path,
    settings: FaissConfig,
    *,
    encoder: Encoder | None = None,
    relayout: bool = False,
) -> JSONObject:
    """Apply the store's changes since the index's sequence number (adds, replacements, deletions).

    ``relayout``: when the layout settings differ from the index's, rebuild it from the stored vectors in
    the new layout (nothing is encoded again); otherwise the layout and precision stay as built. Holds the
    folder's build lock.
    """
    out = Path(out)
    with building(out, "the dense index"):
        return _update(store, out, settings, encoder=encoder, relayout=relayout)


def _update_layout(out: Path, manifest: JSONObject, settings: FaissConfig, relayout: bool
                   ) -> tuple[FaissConfig, bool]:
    """The settings an update writes with, and whether it re-lays the index out: with ``relayout`` and layout
    settings that differ from the index's, the new layout; otherwise the layout and on-disk precision as built."""
    changes = layout_changes(manifest, settings) if relayout else {}
    if changes:
        log.info("dense index %s: re-layout from its stored vectors (%s)", out,
                 ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in changes.items()))
        return settings, True
    recorded = {k: v for k, v in manifest.get("settings", {}).items() if k in type(settings).model_fields}
    recorded.update(index_type=manifest["index"]["type"], vector_dtype=manifest["vector_dtype"])
    return settings.model_copy(update={k: recorded[k] for k in recorded if k in LAYOUT_FIELDS}), False


def _unmark(live: np.ndarray, pmids: np.ndarray, stale: set[int], block_rows: int = 1_000_000) -> None:
    """Clear ``live`` where the row's PMID (``pmids``, a memory map read block by block) is ``stale``."""
    targets = np.fromiter(stale, dtype=np.int64)
    for start in range(0, len(pmids), block_rows):
        block = np.asarray(pmids[start : start + block_rows])
        live[start : start + len(block)] &= ~np.isin(block, targets)


def _update(store: DocumentStore, out: Path, settings: FaissConfig, *, encoder: Encoder | None,
            relayout: bool) -> JSONObject:
    manifest = fo.read(out)
    corpus = manifest["corpus"]
    if corpus.get("store_id") != store.store_id:
        raise IndexMismatchError(
            f"the dense index at {out} does not follow the store at {store.path} ({store.store_id}); "
            f"it was made from {corpus.get('store_id') or corpus.get('source')}",
            hint="give the store it was built from, or rebuild into this folder with --rebuild",
        )
    since, target = int(corpus["seq"]), store.seq
    settings, relayout = _update_layout(out, manifest, settings, relayout)
    if since == target and not relayout:
        return manifest
    if encoder is None and since != target:  # a pure re-layout encodes nothing: no model needed
        encoder = load_encoder(recorded_encoder(manifest["encoder"]["spec"]))
    if encoder is not None:
        check_encoder(manifest, encoder, out)
    loaded = fo.load(out, manifest)
    files = dict(manifest["files"])
    dim, dtype, rows = loaded.vectors.shape[1], manifest["vector_dtype"], loaded.rows
    index, live = loaded.index, loaded.live
    gone = {int(p) for p in store.deleted_since(since)}
    changed: list[int] = []
    new_live: list[np.ndarray] = []
    view = fo.row_files(out, files)
    batch: list[Article] = []
    if encoder is not None:
        with progress(total=store.count_changes_since(since), desc="dense update", unit="doc") as bar:
            for article in store.iter_changes(since):
                batch.append(article)
                if len(batch) >= settings.chunk_size:
                    rows = _append(view, index, batch, encoder, rows, dim, dtype, changed, new_live, settings.threads)
                    bar.update(len(batch))
                    batch = []
            if batch:
                rows = _append(view, index, batch, encoder, rows, dim, dtype, changed, new_live, settings.threads)
                bar.update(len(batch))
    old_rows = loaded.rows
    live = np.concatenate([live, *new_live]) if new_live else live.copy()
    stale = gone | set(changed)
    if stale and old_rows:
        _unmark(live, np.memmap(out / files["pmids"], dtype=np.int64, mode="r", shape=(old_rows,)), stale)
    n_live = int(live.sum())
    log.info(
        "dense update: %d new rows, %d stale PMIDs, %d live of %d", len(changed), len(stale), n_live, rows
    )
    new_corpus = {"store_id": store.store_id, "seq": target, "count": len(store)}
    if relayout or (rows and (rows - n_live) / rows > settings.compact_ratio):
        return compact(
            out, manifest | {"counts": {"rows": rows, "live": n_live, "dim": dim}}, live, settings, new_corpus
        )
    serial = fo.next_serial(files)
    files["index"], files["live"] = f"index.{serial}.faiss", f"live.{serial}.npy"
    fx.write_index(index, out / files["index"])
    fo.save_live(out, files["live"], live)
    return fo.commit(
        out,
        files=files,
        rows=rows,
        live=n_live,
        dim=dim,
        params=loaded.params,
        encoder=manifest["encoder"],
        corpus=new_corpus,
        settings=settings.model_dump(mode="json"),
        vector_dtype=dtype,
        memory_bytes=(out / files["index"]).stat().st_size,
    )


def _append(
    view: fo.RowFiles,
    index: fx.FaissIndexObject,
    batch: list[Article],
    encoder: Encoder,
    rows: int,
    dim: int,
    dtype: str,
    changed: list[int],
    new_live: list[np.ndarray],
    threads: int,
) -> int:
    vecs = encoder.encode_documents(batch)  # torch: not under the FAISS thread cap
    pmids = np.array([int(a.pmid) for a in batch], dtype=np.int64)
    check_vectors(vecs, dim, "the encoder output")
    new_rows = view.append(rows, dim, dtype, vecs, pmids)
    with fx.omp_threads(threads):
        fx.add(index, np.asarray(vecs, dtype=dtype), rows)  # the stored precision, as in a full build
    changed.extend(pmids.tolist())
    new_live.append(np.ones(len(pmids), dtype=bool))
    return int(new_rows)


def compact(
    out: Path, manifest: JSONObject, live: np.ndarray, settings: FaissConfig, corpus: JSONObject
) -> JSONObject:
    """Rebuild the index from the live stored rows (new layout settings apply; nothing re-encoded)."""
    files, dim = manifest["files"], manifest["counts"]["dim"]
    rows, dtype = len(live), manifest["vector_dtype"]
    vectors, pmids = fo.row_files(out, files).open(rows, dim, dtype)
    step = settings.chunk_size

    def chunks() -> Iterator[Chunk]:
        for start in range(0, rows, step):
            keep = np.nonzero(live[start : start + step])[0] + start
            if len(keep):
                yield np.asarray(pmids[keep]), vectors[keep], f"rows {start}+"

    return assemble(out, chunks(), settings, manifest["encoder"], corpus, files)


# -- assemble phase --------------------------------------------------------------------------
def assemble(
    out: Path,
    chunks: Iterable[Chunk],
    settings: FaissConfig,
    encoder: JSONObject,
    corpus: JSONObject,
    old_files: dict[str, str] | None,
) -> JSONObject:
    """Stream chunks into new row files and a new FAISS index, then commit the manifest (call it holding the
    folder's build lock: the commit removes the data files the new manifest does not name)."""
    phase("assembling the FAISS index")
    out.mkdir(parents=True, exist_ok=True)
    serial = fo.next_serial(old_files)
    files = {
        "vectors": f"vectors.{serial}.bin",
        "pmids": f"pmids.{serial}.bin",
        "index": f"index.{serial}.faiss",
        "live": f"live.{serial}.npy",
    }
    for name in (files["vectors"], files["pmids"]):
        (out / name).unlink(missing_ok=True)
    view = fo.row_files(out, files)
    dim, dtype, rows = int(encoder["dim"]), settings.vector_dtype, 0
    for pmids, chunk_vectors, label in chunks:
        vecs = np.asarray(chunk_vectors)
        check_vectors(vecs, dim, label)
        if len(vecs) != len(pmids):
            raise InputError(
                f"{label} has {len(vecs)} vectors but {len(pmids)} PMIDs",
                hint="each embeds_chunk_N.npy must have one row per PMID in pmids_chunk_N.json",
            )
        rows = view.append(rows, dim, dtype, vecs, pmids)
    if rows == 0:
        raise InputError("no vectors to index", hint="check that the store or embedding folder is not empty")
    vectors, pmids_all = view.open(rows, dim, dtype)
    live = _last_wins(np.asarray(pmids_all))
    n_live = int(live.sum())
    params = fx.choose_params(settings.index_type, dim, n_live, settings)
    index = fx.new_index(params)
    with fx.omp_threads(settings.threads):
        if params.type == "ivfpq":
            rng = np.random.default_rng(0)
            live_rows = np.nonzero(live)[0]
            n_train = fx.train_size(n_live, params.nlist, settings)
            sample = np.sort(rng.choice(live_rows, size=n_train, replace=False))
            fx.train(index, np.asarray(vectors[sample], dtype=np.float32))
        step = max(settings.chunk_size, 10_000)
        for start in range(0, rows, step):
            fx.add(index, np.asarray(vectors[start : start + step], dtype=np.float32), start)
    fx.write_index(index, out / files["index"])
    fo.save_live(out, files["live"], live)
    log.info("dense index %s: %d rows (%d live), %s", out, rows, n_live, params)
    return fo.commit(
        out,
        files=files,
        rows=rows,
        live=n_live,
        dim=dim,
        params=params,
        encoder=encoder,
        corpus=corpus,
        settings=settings.model_dump(mode="json"),
        vector_dtype=dtype,
        memory_bytes=(out / files["index"]).stat().st_size,
    )


def _last_wins(pmids: np.ndarray) -> np.ndarray:
    """Live mask where a PMID that appears in several rows keeps only its last row."""
    live = np.zeros(len(pmids), dtype=bool)
    _, first_in_reversed = np.unique(pmids[::-1], return_index=True)
    live[len(pmids) - 1 - first_in_reversed] = True
    return live
