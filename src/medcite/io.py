"""Small file helpers: atomic writes, JSON/JSONL, transparent gzip."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json(path: str | Path, data: Any) -> None:
    with atomic_write(path) as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False, sort_keys=False)
        fh.write("\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: str | Path) -> Iterator[Any]:
    with open_maybe_gz(path) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def open_maybe_gz(path: str | Path, mode: str = "rt") -> IO[Any]:
    """Open plain or gzip files by looking at the magic bytes, not the name."""
    path = Path(path)
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, mode, encoding="utf-8" if "t" in mode else None)  # type: ignore[return-value]
    if "t" in mode:
        return open(path, mode, encoding="utf-8")
    return open(path, mode)
