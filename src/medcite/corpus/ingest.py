"""Ingest PubMed XML and JSONL files into the document store, one atomic transaction per file.

Guarantees:

* **Streaming, bounded memory.** Readers yield one record at a time; at most ``batch_size`` articles
  are held before they are written, whatever the file size.
* **Atomic per file.** Every file is one store transaction, recorded in the store's ``files`` table
  in the same transaction. Any exception (including a crash or Ctrl-C) rolls back that file only.
* **Resumable.** A file is identified by the sha256 of its bytes; a file already recorded in the store
  is skipped, so re-running after a crash finishes the remaining files without duplicating anything.
* **Order.** Records and ``DeleteCitation`` blocks are applied in file order and files in sorted path
  order, so update files applied after a baseline delete and replace as PubMed intends. A record
  replaces the stored one unless the stored ``Version`` is higher (see ``StoreTransaction.upsert``).

Bad input (``on_error="raise"``, the default): the first bad record or malformed/truncated file stops
the run with an :class:`InputError` naming the file and position, and nothing from that file is
committed. With ``on_error="skip"`` each bad record is counted and skipped: the run ends with one warning
per reason and every record is listed in the store's ``skipped.jsonl`` (:mod:`.skipped`); a file that breaks
off (malformed XML, truncated gzip) keeps the records read before the break and is recorded with status
``partial`` and the error text. Files recorded as ``partial`` are not retried (same bytes, same break).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import logging
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Literal

from ..errors import InputError
from ..progress import Progress, progress
from ..set_option import set_line
from ..types import Article
from .jsonl import iter_jsonl
from .pubmed_xml import iter_pubmed_xml
from .records import BadRecord, Deletion, Item, UnreadableFileError
from .skipped import SkipLog
from .store import DocumentStore, FileStats

log = logging.getLogger(__name__)

Format = Literal["auto", "xml", "jsonl"]
OnError = Literal["raise", "skip"]
_SUFFIXES = (".xml", ".xml.gz", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".ndjson.gz")
_READERS: dict[str, Callable[[IO[bytes], str], Iterator[Item]]] = {"xml": iter_pubmed_xml, "jsonl": iter_jsonl}


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files, folders (their ``*.xml[.gz]``/``*.json[l][.gz]`` files, recursively) and glob patterns.

    The result is sorted within each argument and de-duplicated; a missing path or a pattern that
    matches nothing is an :class:`InputError`.
    """
    out: dict[Path, None] = {}
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            found = [p]
        elif p.is_dir():
            found = sorted(
                f for f in p.rglob("*")
                if f.is_file() and not f.name.startswith(".") and f.name.lower().endswith(_SUFFIXES)
            )
            if not found:
                raise InputError(f"folder {p} has no {'/'.join(_SUFFIXES)} files", path=str(p))
        elif any(c in str(raw) for c in "*?["):
            found = sorted(Path(f) for f in glob.glob(str(raw), recursive=True) if Path(f).is_file())
            if not found:
                raise InputError(f"pattern {raw!r} matches no files", hint="check the pattern and quote it")
        else:
            raise InputError(f"{p} does not exist", hint="give PubMed XML/JSONL files, folders or glob patterns")
        for f in found:
            out.setdefault(f.resolve(), None)
    return list(out)


def file_key(path: Path) -> str:
    """sha256 of the file's bytes: the identity used to skip files already ingested."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def detect_format(path: Path) -> str:
    """``xml`` or ``jsonl`` from the content: gzip magic is looked through, then '<' or '{' decides."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as gz:
                head = gz.read(4096)
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise UnreadableFileError(f"corrupt gzip data ({exc})", path=str(path), position="at the start") from None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        raise UnreadableFileError("file is empty", path=str(path), hint="remove it from the input list")
    if text[:1] == b"<":
        return "xml"
    if text[:1] == b"{":
        return "jsonl"
    raise UnreadableFileError(
        f"cannot tell the format: the content starts with {text[:20]!r}, not '<' (PubMed XML) or '{{' (JSONL)",
        path=str(path), hint="pass --format xml or --format jsonl, or check that this is a corpus file",
    )


class _Counting:
    """Binary file wrapper that reports bytes read to a progress bar (``peek`` kept for gzip sniffing)."""

    def __init__(self, fh: io.BufferedReader, bar: Progress[object]) -> None:
        self._fh = fh
        self._bar = bar

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self._bar.update(len(data))
        return data

    def peek(self, n: int = 0) -> bytes:
        return self._fh.peek(n)

    def readline(self, n: int = -1) -> bytes:
        data = self._fh.readline(n)
        self._bar.update(len(data))
        return data

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def ingest(
    paths: Iterable[str | Path],
    store: DocumentStore,
    *,
    on_error: OnError = "raise",
    batch_size: int = 2000,
    fmt: Format = "auto",
) -> list[FileStats]:
    """Ingest files, folders or glob patterns into ``store``; return one :class:`FileStats` per file.

    Files already recorded in the store (same sha256) come back with status ``skipped`` and zero
    counts. See the module docstring for error handling, atomicity and ordering.
    """
    if on_error not in ("raise", "skip"):
        raise InputError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if fmt not in ("auto", "xml", "jsonl"):
        raise InputError(f"format must be 'auto', 'xml' or 'jsonl', got {fmt!r}")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    results: list[FileStats] = []
    skips = SkipLog(store.path)
    try:
        for path in expand_paths(paths):
            key = file_key(path)
            done = store.file_done(key)
            if done is not None:
                log.info("%s: already ingested (status %s, as %s); skipping", path, done["status"], done["path"])
                results.append(FileStats(path=str(path), status="skipped"))
                continue
            results.append(_ingest_file(path, key, store, on_error, batch_size, fmt, skips))
    finally:  # what the committed files skipped, however the run ends
        for line in skips.summary():
            log.warning("%s", line)
        skips.close()
    return results


def _ingest_file(
    path: Path, key: str, store: DocumentStore, on_error: str, batch_size: int, fmt: str, skips: SkipLog
) -> FileStats:
    name = str(path)
    stats = FileStats(path=name)
    size = path.stat().st_size
    try:
        kind = detect_format(path) if fmt == "auto" else fmt
        return _read_file(path, key, store, on_error, batch_size, kind, size, skips)
    except InputError as exc:
        if on_error == "raise" or not isinstance(exc, UnreadableFileError):
            raise
        # the whole file is unreadable: nothing of it is stored, and it is recorded as failed (not done)
        log.warning("%s", exc.message)
        stats.status, stats.error, stats.warnings = "failed", exc.message, 1
        with store.transaction() as txn:
            txn.record_file(key, size, stats)
        return stats


def _read_file(
    path: Path, key: str, store: DocumentStore, on_error: str, batch_size: int, kind: str, size: int, skips: SkipLog
) -> FileStats:
    try:
        stats = _read_in_transaction(path, key, store, on_error, batch_size, kind, size, skips)
    except BaseException:
        skips.discard()  # rolled back: none of its records was skipped after all
        raise
    skips.commit()
    return stats


def _read_in_transaction(
    path: Path, key: str, store: DocumentStore, on_error: str, batch_size: int, kind: str, size: int, skips: SkipLog
) -> FileStats:
    name = str(path)
    stats = FileStats(path=name)
    reader = _READERS[kind]
    with store.transaction() as txn, open(path, "rb") as raw, progress(
        total=size, unit="B", unit_scale=True, desc=path.name, leave=False
    ) as bar:
        batch: list[Article] = []
        try:
            for item in reader(_Counting(raw, bar), name):  # type: ignore[arg-type]
                if type(item) is Article:
                    batch.append(item)
                    if len(batch) >= batch_size:
                        txn.upsert(batch, stats)
                        batch = []
                elif type(item) is Deletion:
                    txn.upsert(batch, stats)  # records before the deletion first: file order matters
                    batch = []
                    txn.delete(item.pmids, stats)
                else:
                    _bad_record(item, name, on_error, stats, skips)  # type: ignore[arg-type]
        except InputError as exc:
            if on_error == "raise" or exc.path != name or isinstance(exc, UnreadableFileError):
                raise
            log.warning("%s; keeping the %d records read before it", exc.message, stats.added + stats.replaced
                        + stats.kept_newer + len(batch))
            stats.status, stats.error = "partial", exc.message
            stats.warnings += 1
        txn.upsert(batch, stats)
        txn.record_file(key, size, stats)
    log.info(
        "%s: %s, %d added, %d replaced, %d deleted, %d kept newer, %d skipped, %d warnings",
        name, stats.status, stats.added, stats.replaced, stats.deleted, stats.kept_newer, stats.skipped,
        stats.warnings,
    )
    return stats


def _bad_record(item: BadRecord, name: str, on_error: str, stats: FileStats, skips: SkipLog) -> None:
    if on_error == "raise":
        raise InputError(
            item.reason, path=name, position=item.position,
            hint=f"fix the record, or pass --on-error skip ({set_line('corpus.on_error', 'skip')}) to skip bad records "
            "(each is listed in STORE/skipped.jsonl)",
        )
    stats.warnings += 1
    if not item.kept:
        stats.skipped += 1
    skips.add(name, item)
