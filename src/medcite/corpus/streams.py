"""Byte streams for the corpus readers: gzip detected by magic bytes, decompressed on a helper thread.

zlib releases the GIL while inflating, so decompressing on a thread overlaps with XML/JSON parsing on
the main thread. Inflating with ``zlib.decompressobj`` directly checks each member's CRC. Memory is
bounded by the queue: at most ``_QUEUE_CHUNKS`` decompressed pieces (one per ``_RAW_BLOCK`` of input)
wait at any time.

Why not a maintained reader (``benchmarks/bench_gzip.py``, ``pubmed20n0014.xml.gz``: 174 MB of XML,
30,000 articles, 2 cores): ISA-L (``isal``, also behind ``xopen``) and zlib-ng inflate 1.8-2.7x faster
than this stream (820 MB/s; ``gzip.GzipFile`` 0.97x, ``rapidgzip`` 0.66x, ``pgzip`` 1.03x), but a full
``medcite ingest`` is not measurably faster with any of them (1.01-1.06x articles/s, 0.94-0.98x CPU
seconds, inside the round-to-round spread): parsing dominates and inflating already runs beside it. And
they would break what the tests pin: the threaded readers hand out nothing of their last 1 MiB block
before a truncation error (the records before the damage are lost), all report trailing garbage as a
truncation, and a corrupt block raises their own error types, outside ``GZIP_ERRORS``.
"""

from __future__ import annotations

import gzip
import queue
import threading
import zlib
from collections.abc import Iterator
from typing import IO

_RAW_BLOCK = 1 << 14  # compressed bytes per step: ~160 KB of PubMed XML, at most ~16.5 MB (deflate's 1032:1)
_QUEUE_CHUNKS = 16

GZIP_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error)
"""What reading a truncated or corrupt gzip stream raises (``gzip.BadGzipFile`` is an OSError)."""


class _ThreadedGunzip:
    """Read-only binary file object; a daemon thread fills a bounded queue with decompressed chunks."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(_QUEUE_CHUNKS)
        self._stop = threading.Event()
        self._buf = b""
        self._pos = 0
        self._done = False
        self._thread = threading.Thread(target=self._pump, args=(raw,), daemon=True, name="medcite-gunzip")
        self._thread.start()

    def _put(self, item: bytes | BaseException | None) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _pump(self, raw: IO[bytes]) -> None:
        try:
            for chunk in _inflate(raw):
                if not self._put(chunk):
                    return
            self._put(None)
        except BaseException as exc:  # handed to the reading thread, which raises it
            self._put(exc)

    def _next(self) -> bytes:
        if self._done:
            return b""
        item = self._queue.get()
        if item is None:
            self._done = True
            return b""
        if isinstance(item, BaseException):
            self._done = True
            raise item
        return item

    def _take(self, parts: list[bytes], data: bytes, cut: int) -> bytes:
        """Join ``parts`` with ``data[:cut]``; the rest of ``data`` becomes the buffer (one copy of each byte)."""
        parts.append(data[:cut])
        self._buf, self._pos = data, cut
        return b"".join(parts)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            parts = [self._buf[self._pos :]]
            while chunk := self._next():
                parts.append(chunk)
            self._buf, self._pos = b"", 0
            return b"".join(parts)
        if len(self._buf) - self._pos >= n:
            out = self._buf[self._pos : self._pos + n]
            self._pos += n
            return out
        # gather whole chunks in a list and join once: linear in n, however many chunks it spans
        parts = [self._buf[self._pos :]]
        need = n - len(parts[0])
        while need > 0:
            chunk = self._next()
            if not chunk:
                self._buf, self._pos = b"", 0
                return b"".join(parts)
            if len(chunk) >= need:
                return self._take(parts, chunk, need)
            parts.append(chunk)
            need -= len(chunk)
        return b"".join(parts)  # pragma: no cover - the loop returns

    def readline(self, limit: int = -1) -> bytes:
        i = self._buf.find(b"\n", self._pos)
        if i >= 0:
            line = self._buf[self._pos : i + 1]
            self._pos = i + 1
        else:
            # a line longer than the buffer: each chunk is searched once and kept in a list (linear time)
            parts = [self._buf[self._pos :]]
            self._buf, self._pos = b"", 0
            while True:
                chunk = self._next()
                if not chunk:
                    line = b"".join(parts)
                    break
                j = chunk.find(b"\n")
                if j >= 0:
                    line = self._take(parts, chunk, j + 1)
                    break
                parts.append(chunk)
        if limit is not None and 0 <= limit < len(line):
            self._buf, self._pos = line[limit:] + self._buf[self._pos :], 0
            line = line[:limit]
        return line

    def __iter__(self) -> _ThreadedGunzip:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __del__(self) -> None:
        self._stop.set()


def _inflate(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed pieces of a (multi-member) gzip stream.

    Unlike ``GzipFile.read``, every byte inflated before a truncation or a bad block is handed out
    before the error is raised, so the caller keeps all complete records before the damage. zlib
    checks each member's CRC-32 and length itself (``wbits=31``).
    """
    d = zlib.decompressobj(31)
    started = False
    pending = b""  # the start of a next member split across raw blocks
    while True:
        block = raw.read(_RAW_BLOCK)
        if not block:
            if pending:
                raise gzip.BadGzipFile("trailing garbage after the gzip data")
            if started and not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            return
        if pending:
            block, pending = pending + block, b""
        while block:
            if d.eof:  # a member ended: zero padding may follow, else a new member must start
                block = block.lstrip(b"\x00")
                if len(block) < 2:
                    pending = block
                    break
                if block[:2] != b"\x1f\x8b":
                    raise gzip.BadGzipFile("trailing garbage after the gzip data")
                d = zlib.decompressobj(31)
            started = True
            out = d.decompress(block)
            block = d.unused_data if d.eof else b""
            if out:
                yield out


def open_stream(stream: IO[bytes]) -> IO[bytes]:
    """``stream`` itself, or a decompressing reader when it starts with the gzip magic bytes.

    ``stream`` is a binary file object; it needs ``peek`` (as ``open(path, "rb")`` has) for the
    gzip check, otherwise it is treated as plain.
    """
    head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
    if head == b"\x1f\x8b":
        return _ThreadedGunzip(stream)  # type: ignore[return-value]
    return stream
