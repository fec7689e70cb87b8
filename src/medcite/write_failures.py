"""What a failed write means: a full disk, the file-size limit, a read-only folder or a disk I/O error.

Every writer of medcite (the document store, the indexes, run folders, outputs, the LLM cache, models) turns the
error its library raised into one :class:`~medcite.errors.WriteError` with :func:`write_failure`: the path, the
reason in words ("disk full", "file too large", "read-only", "disk I/O error"), the space the step needs where the
writer knows it, and what was kept. Libraries say it in many ways, all of them read here:

- ``OSError`` with ``ENOSPC``/``EDQUOT`` (full), ``EFBIG`` (``ulimit -f``), ``EROFS``/``EACCES``/``EPERM``
  (read-only), ``EIO``;
- SQLite: "database or disk is full", "attempt to write a readonly database", and "disk I/O error", which is
  also what it says when the file-size limit stops a write (:func:`why_io_failed` then looks at the limit and the
  free space to say which it was);
- tantivy: ``ValueError("An IO error occurred: 'File too large (os error 27)'")``, or, from a worker thread, "An
  index writer was killed ... (io::Error most likely)";
- FAISS: ``RuntimeError("... write error in PATH: 199955 != 307200 (File too large)")``; numpy:
  ``OSError("46080 requested and 25568 written")`` (a short ``fwrite``, no errno); torch: "file write failed";
  safetensors: ``IoError(Os { code: 27, ... })``.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from pathlib import Path

from .errors import DiskFullError, MedciteError, WriteError

FULL, TOO_LARGE, READ_ONLY, IO_ERROR = "disk full", "file too large", "read-only", "disk I/O error"
KEPT = "nothing already written was lost"
#: what a failed write into a store that was only being opened keeps
STORE_KEPT = KEPT + ": the store was left as it is"
#: what a failed write into a run folder keeps
RUN_KEPT = ("nothing already written was lost: the run folder keeps every finished topic, and the same command run "
            "again goes on from there")

_ERRNO_REASON = {errno.ENOSPC: FULL, errno.EDQUOT: FULL, errno.EFBIG: TOO_LARGE, errno.EROFS: READ_ONLY,
                 errno.EACCES: READ_ONLY, errno.EPERM: READ_ONLY, errno.EIO: IO_ERROR}
_OS_ERROR = re.compile(r"os error (\d+)")
_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")
_RUST_OS_ERROR = re.compile(r"Os \{ code: (\d+)")
#: how libraries say that a write failed without an errno (tantivy, FAISS, torch)
_WRITE_WORDS = ("IO error", "io::Error", "write error", "file write failed", "IoError")
#: the C library's words for the reasons, as FAISS quotes them in its messages
_STRERROR = (("No space left", FULL), ("Disk quota", FULL), ("File too large", TOO_LARGE),
             ("Read-only file system", READ_ONLY), ("Permission denied", READ_ONLY))
#: free bytes below which a write that failed for no stated reason is taken to have filled the disk
_NEARLY_FULL = 1 << 20


def device_of(path: str | Path) -> str:
    """The device holding ``path``, as "DEVICE (mounted on MOUNT)" when /proc/mounts says, else the mount point."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    mount = p
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[1] == str(mount):
                    return f"{parts[0]} (mounted on {mount})"
    except OSError:
        pass
    return f"the device mounted on {mount}"


def size_text(n: float) -> str:
    """Bytes for people: ``512 bytes``, ``3.4 kB``, ``2.0 MB``, ``1.3 GB`` (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def file_size_limit() -> int | None:
    """The soft file-size limit of this process in bytes (``ulimit -f``); None when there is none."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def free_bytes(path: str | Path) -> int | None:
    """Free bytes on the file system of ``path`` (its nearest existing parent); None when unknown."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def why_io_failed(path: str | Path) -> str:
    """The likely reason of a write error that gave none (SQLite's "disk I/O error", a short write): the file-size
    limit when ``path`` (or its SQLite side file) has reached it, a full disk when almost nothing is free, else a
    disk I/O error."""
    limit = file_size_limit()
    if limit is not None:
        path = Path(path)
        candidates = [path, Path(f"{path}-wal"), Path(f"{path}-journal")]
        if path.is_dir():  # an index folder: the file that reached the limit is one of its own
            candidates = [p for p in path.iterdir() if p.is_file()]
        for candidate in candidates:
            try:
                if candidate.stat().st_size >= limit - 65536:
                    return TOO_LARGE
            except OSError:
                continue
    free = free_bytes(path)
    if free is not None and free < _NEARLY_FULL:
        return FULL
    return IO_ERROR


def reason_of(exc: BaseException, path: str | Path) -> str | None:
    """"disk full", "file too large", "read-only" or "disk I/O error" when ``exc`` is a write the file system
    refused (written to ``path``, the file or folder looked at when the error does not say why); None for any
    other error."""
    if isinstance(exc, WriteError):
        return exc.reason
    if isinstance(exc, OSError):
        reason = _ERRNO_REASON.get(exc.errno or -1)
        if reason is None and exc.errno is None and _SHORT_WRITE.search(str(exc)):  # numpy's short write
            reason = IO_ERROR
        return why_io_failed(path) if reason == IO_ERROR else reason
    text = str(exc)
    if isinstance(exc, sqlite3.Error):
        low = text.lower()
        if "disk is full" in low:
            return FULL
        if "readonly" in low or "read-only" in low:
            return READ_ONLY
        if "disk i/o error" in low:
            return why_io_failed(path)
        return None
    # tantivy, FAISS, torch, safetensors: the reason is in the message, as an OS error number or the C library's words
    found = _OS_ERROR.search(text) or _RUST_OS_ERROR.search(text)
    reason = _ERRNO_REASON.get(int(found.group(1))) if found else None
    if reason is not None and reason != IO_ERROR:
        return reason
    if reason == IO_ERROR or _SHORT_WRITE.search(text) or any(words in text for words in _WRITE_WORDS):
        for words, named in _STRERROR:
            if words in text:
                return named
        return why_io_failed(path)
    return None


def write_failure(exc: BaseException, path: str | Path, *, kept: str = KEPT, needed: int | None = None,
                  probe: str | Path | None = None) -> WriteError | None:
    """The :class:`WriteError` that says what ``exc`` (raised while writing ``path``) means, or None when ``exc``
    is not a refused write. ``kept``: what is still there (the caller knows: "the store holds every file
    committed before this one"); ``needed``: bytes the step needs, when the caller knows; ``probe``: the file
    actually written when it is not ``path`` (an atomic write's temporary file), looked at for the reason."""
    if isinstance(exc, WriteError):
        return exc
    if isinstance(exc, MedciteError):
        return None
    reason = reason_of(exc, path if probe is None else probe)
    if reason is None:
        return None
    return make_error(reason, path, kept=kept, needed=needed, cause=exc)


def make_error(reason: str, path: str | Path, *, kept: str = KEPT, needed: int | None = None,
               cause: BaseException | None = None) -> WriteError:
    """The error for a write to ``path`` that failed for ``reason`` (one of the four above)."""
    where = str(path)
    free = free_bytes(path)
    need = ""
    if needed is not None:
        need = f" (the step needs about {size_text(needed)}" + (f"; {size_text(free)} free" if free is not None
                                                                else "") + ")"
    if reason == FULL:
        device = device_of(path)
        return DiskFullError(where, device, kept=kept, need=need)
    if reason == TOO_LARGE:
        limit = file_size_limit()
        detail = (f"the file-size limit of {size_text(limit)} (ulimit -f) was reached" if limit is not None
                  else "the file system refused a file that large")
        hint = ("raise the limit (ulimit -f unlimited) or write to a file system that takes large files, then run "
                "the command again")
    elif reason == READ_ONLY:
        detail = f"the folder cannot be written ({_strerror(cause) or 'read-only'})"
        hint = "give a folder you can write to, or make this one writable, then run the command again"
    else:
        detail = "the device reported an error" + (f" ({_strerror(cause)})" if cause is not None else "")
        hint = "check the disk (dmesg shows device errors) and run the command again"
    return WriteError(where, reason, f"{reason}: {detail} while writing {where}{need}; {kept}", hint)


def _strerror(exc: BaseException | None) -> str:
    if exc is None:
        return ""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)[:200]
