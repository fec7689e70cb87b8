"""The encode phase of a dense build: the store's articles encoded into finished chunk files, resumably.

Articles are read from the store in PMID order and encoded ``chunk_size`` at a time; each finished chunk is
written as ``embeds_chunk_N.npy`` + ``pmids_chunk_N.json`` (NCBI's layout for its MedCPT PubMed embeddings),
the PMID file last, so an interrupted build resumes after the last finished chunk. ``state.json`` records
what the chunks were made with (encoder, store, chunk size, shard), so a resume with other settings is refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import IndexMismatchError, InputError
from ...io import JSONObject, atomic_write, write_json
from ...progress import progress
from .encoders import Encoder
from .faiss_config import FaissConfig

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore
    from ...types import Article

log = logging.getLogger(__name__)

#: One chunk of rows: its PMIDs (int64), its vectors (often a memory-map view) and a label for errors.
#: Chunks come from generators, so only one is read into memory at a time.
Chunk = tuple[np.ndarray, np.ndarray, str]


def start_or_resume(
    chunk_dir: Path, store: DocumentStore, encoder: Encoder, settings: FaissConfig,
    shard: tuple[int, int] | None = None,
) -> JSONObject:
    want: JSONObject = {
        "fingerprint": encoder.fingerprint,
        "dim": encoder.dim,
        "store_id": store.store_id,
        "chunk_size": settings.chunk_size,
    }
    if shard is not None:
        want["shard"] = list(shard)
    state_path = chunk_dir / "state.json"
    if state_path.exists():
        state: JSONObject = json.loads(state_path.read_text(encoding="utf-8"))
        if {k: state.get(k) for k in want} != want or ("shard" in state) != (shard is not None):
            raise IndexMismatchError(
                f"{chunk_dir} holds an unfinished build with other settings ({state})",
                hint="re-run with the same encoder, store, chunk size (and shard) to resume, or discard it: "
                "--rebuild",
            )
        log.info("resuming the dense build in %s", chunk_dir)
        return state
    chunk_dir.mkdir(parents=True, exist_ok=True)
    state = want | {"seq": store.seq}
    write_json(state_path, state)
    return state


def finished_chunks(chunk_dir: Path) -> list[int]:
    """Numbers of the chunks whose two files are both complete, in order, stopping at the first gap."""
    done: list[int] = []
    while (chunk_dir / f"pmids_chunk_{len(done)}.json").exists() and (
        chunk_dir / f"embeds_chunk_{len(done)}.npy"
    ).exists():
        done.append(len(done))
    return done


def encoded_rows(chunk_dir: Path) -> int:
    """Rows in the finished chunks of ``chunk_dir`` (0 when it holds none, or does not exist)."""
    return sum(len(json.loads((chunk_dir / f"pmids_chunk_{n}.json").read_text(encoding="utf-8")))
               for n in finished_chunks(chunk_dir))


def encode_chunks(
    store: DocumentStore, encoder: Encoder, chunk_dir: Path, size: int, shard: tuple[int, int] | None = None
) -> int:
    """Encode the store's articles (those of ``shard`` only, if given) into finished chunk files, after the
    ones already there; returns the number of rows in all the chunks."""
    done = finished_chunks(chunk_dir)
    after = -1
    if done:
        last = json.loads((chunk_dir / f"pmids_chunk_{done[-1]}.json").read_text(encoding="utf-8"))
        after = max(int(p) for p in last)
        log.info("%d chunks already encoded; continuing after PMID %d", len(done), after)
    number = len(done)
    batch: list[Article] = []
    total = store.count(shard=shard) if shard else len(store)
    desc = f"dense encode {shard[0]}/{shard[1]}" if shard else "dense build"
    rows = encoded_rows(chunk_dir)
    bar = progress(total=total, initial=min(rows, total), desc=desc, unit="doc")

    def flush() -> None:
        nonlocal number, batch, rows
        vecs = encoder.encode_documents(batch)
        check_vectors(vecs, encoder.dim, "the encoder output")
        with atomic_write(chunk_dir / f"embeds_chunk_{number}.npy", "wb") as fh:
            np.save(fh, np.asarray(vecs, dtype=np.float32))
        # the PMID file is written last: its presence marks the chunk as finished
        with atomic_write(chunk_dir / f"pmids_chunk_{number}.json") as fh:
            json.dump([a.pmid for a in batch], fh)
        number += 1
        rows += len(batch)
        bar.update(len(batch))
        batch = []

    with bar:
        for article in store.iter_articles(shard=shard):
            if int(article.pmid) <= after:
                continue
            batch.append(article)
            if len(batch) >= size:
                flush()
        if batch:
            flush()
    return rows


def chunk_files(chunk_dir: Path) -> Iterator[Chunk]:
    for n in finished_chunks(chunk_dir):
        vec_path = chunk_dir / f"embeds_chunk_{n}.npy"
        ids = json.loads((chunk_dir / f"pmids_chunk_{n}.json").read_text(encoding="utf-8"))
        yield np.array([int(p) for p in ids], dtype=np.int64), np.load(vec_path), vec_path.name


def check_vectors(vecs: np.ndarray, dim: int, what: str) -> None:
    if vecs.ndim != 2 or vecs.shape[1] != dim:
        raise IndexMismatchError(
            f"{what} has shape {vecs.shape}, expected (n, {dim})",
            hint="every chunk must use the same encoder and embedding size",
        )
    if not np.isfinite(vecs).all():
        raise InputError(
            f"{what} contains NaN or infinite values",
            hint="re-create these embeddings; a NaN vector cannot be searched",
        )
