"""Sharded dense encoding: encode 1/N of a store per machine or GPU, then merge the N shards into one index.

Encoding is the costly step of a dense index over all of PubMed (36M abstracts), and it splits with no
coordination: shard ``I/N`` takes the articles with ``pmid % N == I - 1`` (a fixed rule, so any scheduler can
run the shards in any order: a Slurm array, a Kubernetes indexed job, N GPUs of one machine). Each shard is a
folder in the layout ``import`` reads (``embeds_chunk_K.npy`` + ``pmids_chunk_K.json``, NCBI's layout for its
MedCPT embeddings), written ``chunk_size`` articles at a time so an interrupted shard resumes, plus
``shard.json`` once it is complete:

```
{"kind": "medcite-dense-shard", "shard": [I, N], "store_id": ..., "seq": ..., "rows": ...,
 "encoder": {"spec": ..., "name": ..., "fingerprint": ..., "dim": ...}}
```

:func:`import_shards` merges the N folders into one index after checking that they are all there once, share
one encoder (fingerprint and size) and one store state (id and sequence number), and hold each PMID once, in
its own shard; when the store is still at that sequence number, that together they hold exactly its PMIDs.
The index records that sequence number, so changes ingested since are applied as an ordinary update.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import IndexMismatchError, InputError
from ...io import JSONObject, write_json
from ..build_lock import building
from . import folder as fo
from .build import assemble, encoder_record
from .chunks import Chunk, encode_chunks, start_or_resume
from .encoders import Encoder, load_encoder
from .importer import _open_embeds, _read_pmids, check_chunks, find_chunks

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore
    from .faiss_config import FaissConfig

log = logging.getLogger(__name__)

SHARD_FILE = "shard.json"
SHARD_KIND = "medcite-dense-shard"
SHARD_VERSION = 1
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 1 <= I <= N."""
    m = _SHARD.match(text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise InputError(f"--shard must be I/N with 1 <= I <= N, got {text!r}", hint="e.g. --shard 3/16")
    return int(m.group(1)), int(m.group(2))


def encode_shard(
    store: DocumentStore,
    out: str | Path,
    settings: FaissConfig,
    shard: tuple[int, int],
    *,
    encoder: Encoder | None = None,
    rebuild: bool = False,
) -> JSONObject:
    """Encode shard ``(I, N)`` of ``store`` into the folder ``out``; returns its ``shard.json`` record.

    Resumes an interrupted shard; a complete one is returned as it is (``rebuild``: encode it again). Holds the
    folder's build lock: a second job given the same ``out`` waits, then finds the shard complete.
    """
    out = Path(out)
    with building(out, f"dense shard {shard[0]}/{shard[1]}"):
        return _encode_shard(store, out, settings, shard, encoder=encoder, rebuild=rebuild)


def _encode_shard(store: DocumentStore, out: Path, settings: FaissConfig, shard: tuple[int, int], *,
                  encoder: Encoder | None, rebuild: bool) -> JSONObject:
    index, of = parse_shard(f"{shard[0]}/{shard[1]}")
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file", hint="--out names a folder for the shard's chunk files")
    if rebuild and out.exists():
        shutil.rmtree(out)
    if (out / SHARD_FILE).exists():
        done = read_shard(out)
        if done["shard"] == [index, of] and done["store_id"] == store.store_id:
            log.info("shard %d/%d in %s is already complete", index, of, out)
            return done
        raise InputError(f"{out} already holds shard {done['shard'][0]}/{done['shard'][1]} of store "
                         f"{done['store_id']}", hint="choose another --out, or pass --rebuild to replace it")
    if out.exists() and any(out.iterdir()) and not (out / "state.json").exists():
        raise InputError(f"{out} is not empty and holds no shard", hint="choose an empty or new folder for --out")
    if store.count(shard=(index, of)) == 0:
        raise InputError(f"shard {index}/{of} of the store at {store.path} holds no articles",
                         hint="use fewer shards, or check that the store is not empty")
    encoder = encoder or load_encoder(settings.encoder)
    state = start_or_resume(out, store, encoder, settings, shard=(index, of))
    rows = encode_chunks(store, encoder, out, settings.chunk_size, shard=(index, of))
    if store.seq != state["seq"]:
        log.warning("the store changed while shard %d/%d was encoded (sequence %d -> %d); the merged index "
                    "applies those changes as an update", index, of, state["seq"], store.seq)
    record = {
        "kind": SHARD_KIND, "format_version": SHARD_VERSION, "shard": [index, of], "rule": "pmid % N == I - 1",
        "store_id": store.store_id, "seq": state["seq"], "rows": rows,
        "encoder": encoder_record(encoder, settings.encoder.model_dump(mode="json")),
    }
    write_json(out / SHARD_FILE, record)  # written last: its presence marks the shard complete
    (out / "state.json").unlink()
    return record


def read_shard(folder: Path) -> JSONObject:
    path = folder / SHARD_FILE
    try:
        data: JSONObject = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") != SHARD_KIND:
            raise ValueError(f"kind {data.get('kind')!r}")
        index, of = data["shard"]
        int(data["rows"]), int(data["seq"]), int(data["encoder"]["dim"]), str(data["encoder"]["fingerprint"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a dense shard record ({exc})", path=str(path),
                         hint="encode the shard again: medcite index dense encode ... --rebuild") from None
    return data


def is_shard(folder: Path) -> bool:
    return (folder / SHARD_FILE).exists() or (folder / "state.json").exists()


def check_shards(
    folders: Sequence[Path], store: DocumentStore | None = None
) -> list[tuple[Path, JSONObject]]:
    """Validate N shard folders as one complete split (see the module docstring); returns (folder, record)
    in shard order. Raises InputError / IndexMismatchError naming the folder and what is wrong."""
    if not folders:
        raise InputError("no shard folders given", hint="give the --out folder of every shard")
    records: dict[int, tuple[Path, JSONObject]] = {}
    for folder in folders:
        if not (folder / SHARD_FILE).exists():
            raise InputError(f"{folder} holds an unfinished shard (no {SHARD_FILE})",
                             hint="run its `medcite index dense encode` command again: it resumes")
        rec = read_shard(folder)
        index, of = rec["shard"]
        if records:
            first_folder, first = next(iter(records.values()))
            if of != first["shard"][1]:
                raise InputError(f"{folder} is shard {index}/{of} but {first_folder} is one of {first['shard'][1]}",
                                 hint="merge the shards of one split (the same N)")
        if index in records:
            raise InputError(f"{folder} and {records[index][0]} are both shard {index}/{of}",
                             hint="give each shard's folder once")
        records[index] = (folder, rec)
    first_folder, first = next(iter(records.values()))
    of = first["shard"][1]
    for folder, rec in records.values():
        if (rec["store_id"], rec["seq"]) != (first["store_id"], first["seq"]):
            raise IndexMismatchError(
                f"{folder} was encoded from store {rec['store_id']} at sequence {rec['seq']}, {first_folder} from "
                f"{first['store_id']} at sequence {first['seq']}",
                hint="encode every shard from the same store state (copy the store once, then run the shards)")
        a, b = rec["encoder"], first["encoder"]
        if (a["fingerprint"], a["dim"]) != (b["fingerprint"], b["dim"]):
            raise IndexMismatchError(
                f"{folder} was encoded with {a['name']!r} ({a['dim']}-d, fingerprint {a['fingerprint']}), "
                f"{first_folder} with {b['name']!r} ({b['dim']}-d, fingerprint {b['fingerprint']})",
                hint="encode every shard with the same encoder")
    missing = sorted(set(range(1, of + 1)) - set(records))
    if missing:
        raise InputError(f"shard(s) {', '.join(f'{i}/{of}' for i in missing)} missing: the merge needs all {of}",
                         hint="run the missing shards' encode commands, then give every shard folder")
    if store is not None and store.store_id != first["store_id"]:
        raise IndexMismatchError(f"the shards were encoded from store {first['store_id']}, not the store at "
                                 f"{store.path} ({store.store_id})", hint="give the store they were encoded from")
    ordered = [records[i] for i in range(1, of + 1)]
    all_pmids = []
    for folder, rec in ordered:
        index = rec["shard"][0]
        pairs = find_chunks(folder)
        total, dim = check_chunks(pairs)
        if total != rec["rows"] or dim != rec["encoder"]["dim"]:
            raise InputError(f"{folder} holds {total} {dim}-d rows, its {SHARD_FILE} says {rec['rows']} "
                             f"{rec['encoder']['dim']}-d", hint="encode this shard again with --rebuild")
        pmids = np.concatenate([_read_pmids(p) for _, p in pairs])
        wrong = pmids[pmids % of != index - 1]
        if len(wrong):
            raise InputError(f"{folder} (shard {index}/{of}) holds PMID {int(wrong[0])}, which belongs to shard "
                             f"{int(wrong[0]) % of + 1}/{of}", hint="encode this shard again with --rebuild")
        all_pmids.append(pmids)
    merged = np.sort(np.concatenate(all_pmids))
    dup = merged[1:][merged[1:] == merged[:-1]]
    if len(dup):
        raise InputError(f"PMID {int(dup[0])} appears twice in the shards ({len(dup)} repeats)",
                         hint="encode the shards again with --rebuild")
    if store is not None and store.seq == first["seq"]:
        have = np.fromiter(store.iter_pmids(), dtype=np.int64)
        extra, lack = np.setdiff1d(merged, have), np.setdiff1d(have, merged)
        if len(extra) or len(lack):
            raise InputError(
                f"the shards do not cover the store at {store.path}: {len(lack)} of its PMIDs missing"
                + (f" (e.g. {int(lack[0])})" if len(lack) else "") + f", {len(extra)} PMIDs it does not hold"
                + (f" (e.g. {int(extra[0])})" if len(extra) else ""),
                hint="encode the shards again with --rebuild")
    return ordered


def _chunks(folders: Sequence[Path], step: int) -> Iterator[Chunk]:
    for folder in folders:
        for emb_path, pmid_path in find_chunks(folder):
            arr, ids = _open_embeds(emb_path), _read_pmids(pmid_path)
            for start in range(0, len(ids), step):
                label = f"{folder.name}/{emb_path.name} rows {start}-{min(start + step, len(ids)) - 1}"
                yield ids[start : start + step], arr[start : start + step], label


def import_shards(
    folders: Sequence[str | Path],
    out: str | Path,
    settings: FaissConfig,
    *,
    encoder: Encoder | None = None,
    store: DocumentStore | None = None,
) -> JSONObject:
    """Merge the N shard folders of one split into a dense index in ``out``; returns the manifest.

    ``encoder`` (default: the one ``settings`` names) must be the shards' (same fingerprint): queries are
    encoded with it. The index follows the store from the shards' sequence number on. Holds the build lock of
    ``out``.
    """
    with building(Path(out), "the dense index"):
        return _import_shards(folders, Path(out), settings, encoder=encoder, store=store)


def _import_shards(folders: Sequence[str | Path], out: Path, settings: FaissConfig, *, encoder: Encoder | None,
                   store: DocumentStore | None) -> JSONObject:
    checked = check_shards([Path(f) for f in folders], store)
    ordered, records = [f for f, _ in checked], [r for _, r in checked]
    encoder = encoder or load_encoder(settings.encoder)
    shard_enc = records[0]["encoder"]
    if (encoder.fingerprint, encoder.dim) != (shard_enc["fingerprint"], shard_enc["dim"]):
        raise IndexMismatchError(
            f"the shards were encoded with {shard_enc['name']!r} ({shard_enc['dim']}-d, fingerprint "
            f"{shard_enc['fingerprint']}), but the encoder given is {encoder.name!r} ({encoder.dim}-d, "
            f"fingerprint {encoder.fingerprint})",
            hint=f"pass the encoder the shards were made with ({shard_enc['spec']})")
    total = sum(int(r["rows"]) for r in records)
    corpus = {"store_id": records[0]["store_id"], "seq": records[0]["seq"], "count": total}
    old = fo.read(out)["files"] if fo.has_index(out) else None
    log.info("merging %d shards (%d rows, %d-d)", len(records), total, shard_enc["dim"])
    record = encoder_record(encoder, settings.encoder.model_dump(mode="json"))
    return assemble(out, _chunks(ordered, settings.chunk_size), settings, record, corpus, old)
