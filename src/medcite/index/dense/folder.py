"""The dense index folder: manifest, data files and their generations.

```
<index>/
  manifest.json        kind medcite-dense-index, encoder spec + fingerprint + dim, store id + seq,
                       layout parameters, row counts, and the names of the current data files
  vectors.<g>.bin      full vectors (float16/float32, rows x dim), append-only, memory-mapped
  pmids.<g>.bin        int64 PMID of each row, append-only, memory-mapped
  index.<s>.faiss      the FAISS index (ids = row numbers)
  live.<s>.npy         bool per row: False once the document was replaced or deleted
  chunks/              an unfinished build: embeds_chunk_N.npy + pmids_chunk_N.json + state.json
```
The manifest is written last and names the files it uses, so a crash at any point leaves the previous
consistent state; bytes past the manifest's row count are ignored and cut off by the next update.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import CorruptIndexError
from ...index.manifest import MANIFEST, read_manifest, write_manifest
from ...io import JSONObject, atomic_write
from . import faiss_index as fx

log = logging.getLogger(__name__)

KIND = "medcite-dense-index"
FORMAT_VERSION = 1
_DATA = re.compile(r"^(vectors|pmids|index|live)\.\d+\.(bin|faiss|npy)$")


def has_index(folder: Path) -> bool:
    return (folder / MANIFEST).exists()


def read(folder: str | Path) -> JSONObject:
    return read_manifest(folder, kind=KIND, format_version=FORMAT_VERSION)


@dataclass
class Loaded:
    """An opened dense index: FAISS index in RAM, vectors and PMIDs memory-mapped from disk."""

    manifest: JSONObject
    params: fx.IndexParams
    index: fx.FaissIndexObject
    vectors: np.ndarray
    pmids: np.ndarray
    live: np.ndarray

    selector: object | None = None
    n_live: int = 0

    def __post_init__(self) -> None:
        self.refresh_live()

    def refresh_live(self) -> None:
        """Recompute the cached live count and search filter after ``live`` changed."""
        self.n_live = int(self.live.sum())
        self.selector = fx.live_selector(self.live)

    @property
    def rows(self) -> int:
        return len(self.pmids)


def load(folder: str | Path, manifest: JSONObject | None = None) -> Loaded:
    folder = Path(folder)
    manifest = manifest or read(folder)
    try:
        files = manifest["files"]
        rows, dim = int(manifest["counts"]["rows"]), int(manifest["counts"]["dim"])
        params = fx.IndexParams(**manifest["index"])
        dtype = manifest["vector_dtype"]
    except (KeyError, TypeError) as exc:
        raise CorruptIndexError(
            f"{folder / MANIFEST} lacks {exc}", hint="rebuild the dense index (--rebuild)"
        ) from None
    vectors, pmids = row_files(folder, files).open(rows, dim, dtype)
    live = np.load(folder / files["live"]) if (folder / files["live"]).exists() else None
    if live is None or len(live) != rows:
        raise CorruptIndexError(
            f"{folder / files['live']} is missing or has the wrong length", hint="rebuild"
        )
    index = fx.read_index(folder / files["index"])
    if index.ntotal != rows or index.d != dim:
        raise CorruptIndexError(
            f"{folder / files['index']} holds {index.ntotal} x {index.d}, the manifest says {rows} x {dim}",
            hint="rebuild the dense index (--rebuild)",
        )
    return Loaded(manifest, params, index, vectors, pmids, live.astype(bool))


class RowFiles:
    """Adapter so faiss_index.open_rows/append_rows work on generation-named files."""

    def __init__(self, folder: Path, vectors: str, pmids: str) -> None:
        self.folder, self.vectors, self.pmids = folder, vectors, pmids

    def open(self, rows: int, dim: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        return fx.open_rows(self.folder / self.vectors, self.folder / self.pmids, rows, dim, dtype)

    def append(self, rows: int, dim: int, dtype: str, vectors: np.ndarray, pmids: np.ndarray) -> int:
        return fx.append_rows(
            self.folder / self.vectors, self.folder / self.pmids, rows, dim, dtype, vectors, pmids
        )


def row_files(folder: Path, files: dict[str, str]) -> RowFiles:
    return RowFiles(folder, files["vectors"], files["pmids"])


def next_serial(files: dict[str, str] | None) -> int:
    if not files:
        return 1
    return 1 + max(int(name.split(".")[1]) for name in files.values())


def save_live(folder: Path, name: str, live: np.ndarray) -> None:
    with atomic_write(folder / name, "wb") as fh:
        np.save(fh, live.astype(bool))


def commit(
    folder: Path,
    *,
    files: dict[str, str],
    rows: int,
    live: int,
    dim: int,
    params: fx.IndexParams,
    encoder: JSONObject,
    corpus: JSONObject,
    settings: JSONObject,
    vector_dtype: str,
    memory_bytes: int,
) -> JSONObject:
    """Write the manifest naming ``files``, then remove data files no manifest names any more."""
    manifest = write_manifest(
        folder,
        kind=KIND,
        format_version=FORMAT_VERSION,
        settings=settings,
        corpus=corpus,
        counts={"rows": rows, "live": live, "dim": dim},
        encoder=encoder,
        index=params.to_dict(),
        files=files,
        vector_dtype=vector_dtype,
        memory_bytes=memory_bytes,
        bytes_per_doc_in_ram=round(memory_bytes / max(live, 1), 2),
    )
    keep = set(files.values())
    for path in folder.iterdir():
        if _DATA.match(path.name) and path.name not in keep:
            path.unlink()
    return manifest
