"""Small file helpers: atomic writes, JSON/JSONL, transparent gzip."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeAlias

from .write_failures import KEPT, write_failure

#: A JSON object read from or written to a file (a manifest, a preset, an index record, a server's parameters):
#: its values stay untyped until a reader checks them, so ``Any`` is named here once for all of them.
JSONObject: TypeAlias = dict[str, Any]


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    A write the file system refuses (full disk, file-size limit, read-only folder) raises a
    :class:`~medcite.errors.WriteError` naming ``path``: the old file, if any, is untouched."""
    path = Path(path)
    kept = f"{KEPT}: {path.name} is as it was before" if path.exists() else KEPT
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_failure(exc, path, kept=kept) or exc from exc
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        # only the temporary file was written; an OSError about another file is the caller's own (a read)
        ours = not isinstance(exc, OSError) or exc.filename in (None, tmp, str(path))
        failed = write_failure(exc, path, kept=kept, probe=tmp) if ours else None
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if failed is not None:
            raise failed from exc
        raise


def fsync_dir(path: str | Path) -> None:
    """Make new or renamed entries of the folder ``path`` durable (a file fsynced in a folder that is not may
    vanish after a crash). A no-op where folders cannot be opened (not POSIX)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temp_files(folder: str | Path) -> list[str]:
    """Delete the temporary files an interrupted :func:`atomic_write` left in ``folder`` (``.NAME.XXXX.tmp``).

    Call it only while no other process writes to the folder (a writer that resumes, holding its lock).
    """
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return removed
    for name in names:
        if name.startswith(".") and name.endswith(".tmp") and os.path.isfile(os.path.join(folder, name)):
            try:
                os.unlink(os.path.join(folder, name))
                removed.append(name)
            except FileNotFoundError:
                pass
    return removed


def file_sha256(path: str | Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path: str | Path, data: object) -> None:
    with atomic_write(path) as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False, sort_keys=False)
        fh.write("\n")


def write_jsonl(path: str | Path, rows: Iterable[object]) -> None:
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: str | Path) -> Iterator[Any]:
    with open_maybe_gz(path) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_model_head(path: Path, fmt: str, what: str, hint: str, feature_version: int | None = None
                    ) -> dict[str, Any]:
    """The JSON head file of a model folder medcite wrote; ConfigError (with ``hint``) when it cannot be read, is
    not of format ``fmt``, or was trained on features other than those this medcite computes
    (``feature_version``: the version of the feature code, stored in the head as ``feature_version``; a head
    without one was written by version 1)."""
    from .errors import ConfigError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("format") != fmt:
            raise ValueError(f"format {data.get('format')!r}, expected {fmt!r}")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not a readable {what} model ({exc})", hint=hint) from None
    stored = data.get("feature_version", 1)
    if feature_version is not None and stored != feature_version:
        raise ConfigError(f"{path} is a stale {what} model: trained on feature version {stored!r}, and this medcite "
                          f"computes version {feature_version}", hint=hint)
    return data


def read_bioasq_questions(path: Path, missing: str = "no such BioASQ file", hint: str | None = None) -> list[Any]:
    """The raw ``questions`` list of a BioASQ JSON file (``.json`` or ``.json.gz``); InputError naming the file
    when it is missing (``missing``, ``hint``), unreadable or not ``{"questions": [...]}``."""
    from .errors import InputError

    if not path.is_file():
        raise InputError(missing, path=str(path), hint=hint)
    try:
        with open_maybe_gz(path) as fh:
            data = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise InputError("expected BioASQ JSON {'questions': [...]}", path=str(path))
    return list(data["questions"])


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
