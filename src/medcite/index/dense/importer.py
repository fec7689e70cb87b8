"""Import precomputed embeddings published as paired chunk files, without re-encoding.

The layout is NCBI's for its MedCPT embeddings of all PubMed (Jin et al. 2023, "MedCPT"):
``embeds_chunk_N.npy`` (float32, rows x 768) beside ``pmids_chunk_N.json`` (the PMID of each row, in
order). Files are paired by N, checked (lengths, one embedding size, PMIDs, NaNs) and streamed into
the index ``chunk_size`` rows at a time from memory maps, so a 3 GB chunk never sits in RAM whole.
The manifest records the encoder named by ``--encoder`` so that queries use the matching query encoder.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import IndexMismatchError, InputError
from ...io import JSONObject
from ..build_lock import building
from . import folder as fo
from .build import Chunk, assemble, encoder_record
from .encoders import Encoder, load_encoder

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore
    from .faiss_config import FaissConfig

log = logging.getLogger(__name__)

_EMBEDS = re.compile(r"^embeds_chunk_(\d+)\.npy$")
_PMIDS = re.compile(r"^pmids_chunk_(\d+)\.json$")


def find_chunks(src: Path) -> list[tuple[Path, Path]]:
    """Pairs (embeds_chunk_N.npy, pmids_chunk_N.json) ordered by N; a file without its partner is an error."""
    if not src.is_dir():
        raise InputError(f"{src} is not a folder", hint="give the folder holding embeds_chunk_N.npy files")
    embeds = {int(m.group(1)): p for p in src.iterdir() if (m := _EMBEDS.match(p.name))}
    pmids = {int(m.group(1)): p for p in src.iterdir() if (m := _PMIDS.match(p.name))}
    if not embeds and not pmids:
        raise InputError(
            f"{src} holds no embeds_chunk_N.npy / pmids_chunk_N.json files",
            hint="point --from-embeddings at the folder of paired chunk files (NCBI MedCPT layout)",
        )
    for n in sorted(set(embeds) ^ set(pmids)):
        have = embeds.get(n) or pmids.get(n)
        missing = f"pmids_chunk_{n}.json" if n in embeds else f"embeds_chunk_{n}.npy"
        raise InputError(
            f"{have} has no partner {missing} in {src}", hint="download or remove the unpaired file"
        )
    return [(embeds[n], pmids[n]) for n in sorted(embeds)]


def _read_pmids(path: Path) -> np.ndarray:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=str(path)) from None
    if not isinstance(data, list):
        raise InputError("expected a JSON list of PMIDs", path=str(path))
    try:
        ids = np.array([int(p) for p in data], dtype=np.int64)
    except (TypeError, ValueError):
        raise InputError(
            "holds a value that is not a PMID", path=str(path), hint="PMIDs are integers such as 12345678"
        ) from None
    if len(ids) and ids.min() <= 0:
        raise InputError("holds a PMID <= 0", path=str(path))
    return ids


def _open_embeds(path: Path) -> np.ndarray:
    try:
        arr = np.load(path, mmap_mode="r")
    except (ValueError, OSError) as exc:
        raise InputError(f"not a readable .npy array ({exc})", path=str(path)) from None
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.floating):
        raise InputError(
            f"expected a 2-D float array, found shape {arr.shape} of {arr.dtype}",
            path=str(path),
            hint="each embeds_chunk_N.npy holds one embedding row per PMID",
        )
    return arr


def check_chunks(pairs: list[tuple[Path, Path]]) -> tuple[int, int]:
    """Validate every pair before writing anything; returns (total rows, embedding size)."""
    dim, total = None, 0
    for emb_path, pmid_path in pairs:
        arr = _open_embeds(emb_path)
        n_ids = len(_read_pmids(pmid_path))
        if arr.shape[0] != n_ids:
            raise InputError(
                f"{emb_path.name} has {arr.shape[0]} rows but {pmid_path.name} lists {n_ids} PMIDs",
                path=str(emb_path.parent),
                hint="the two files of a chunk must come from the same download; fetch both again",
            )
        if dim is not None and arr.shape[1] != dim:
            raise InputError(
                f"{emb_path.name} has {arr.shape[1]}-d embeddings, earlier chunks {dim}-d",
                path=str(emb_path.parent),
                hint="import only chunks made by one encoder",
            )
        dim = int(arr.shape[1])
        total += n_ids
    if not total or dim is None:
        raise InputError("the embedding chunks hold no rows", hint="check the download")
    return total, dim


def _chunks(pairs: list[tuple[Path, Path]], step: int) -> Iterator[Chunk]:
    for emb_path, pmid_path in pairs:
        arr, ids = _open_embeds(emb_path), _read_pmids(pmid_path)
        for start in range(0, len(ids), step):
            label = f"{emb_path.name} rows {start}-{min(start + step, len(ids)) - 1}"
            yield ids[start : start + step], arr[start : start + step], label


def import_embeddings(
    src: str | Path,
    out: str | Path,
    settings: FaissConfig,
    *,
    encoder: Encoder | None = None,
    store: DocumentStore | None = None,
) -> JSONObject:
    """Build a dense index in ``out`` from paired chunk files in ``src``; returns the manifest.

    ``encoder`` (default: the one ``settings`` names) must give vectors of the chunks' size; it is
    recorded so queries are encoded into the same space. With ``store``, the index follows that store
    from its current sequence number on (the embeddings are taken to match its present contents). Holds the
    build lock of ``out``.
    """
    with building(Path(out), "the dense index"):
        return _import(Path(src), Path(out), settings, encoder=encoder, store=store)


def _import(src: Path, out: Path, settings: FaissConfig, *, encoder: Encoder | None,
            store: DocumentStore | None) -> JSONObject:
    pairs = find_chunks(src)
    total, dim = check_chunks(pairs)
    encoder = encoder or load_encoder(settings.encoder)
    if encoder.dim != dim:
        raise IndexMismatchError(
            f"the embeddings in {src} are {dim}-d but encoder {encoder.name!r} gives {encoder.dim}-d vectors",
            hint="pass the --encoder that made these embeddings (NCBI's PubMed embeddings: --encoder medcpt)",
        )
    if store is not None:
        corpus: JSONObject = {"store_id": store.store_id, "seq": store.seq, "count": len(store)}
    else:
        corpus = {"source": "embeddings", "path": str(src.resolve()), "count": total}
    old = fo.read(out)["files"] if fo.has_index(out) else None
    log.info("importing %d embeddings (%d-d) from %d chunk files", total, dim, len(pairs))
    record = encoder_record(encoder, settings.encoder.model_dump(mode="json"))
    return assemble(out, _chunks(pairs, settings.chunk_size), settings, record, corpus, old)
