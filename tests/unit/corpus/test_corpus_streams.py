"""Threaded gunzip stream used by the corpus readers."""

from __future__ import annotations

import gzip
import io
import threading

import pytest

from medcite.corpus import streams
from medcite.corpus.streams import open_stream


def reader(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))


def test_plain_stream_is_returned_as_is() -> None:
    raw = reader(b"<a/>")
    assert open_stream(raw) is raw


def test_read_and_readline_across_chunks_multi_member_and_zero_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "_RAW_BLOCK", 7)  # many tiny raw blocks: members and lines straddle them
    text = b"".join(b"line %d\n" % i for i in range(500)) + b"no newline at end"
    data = gzip.compress(text[:1000]) + gzip.compress(text[1000:]) + b"\x00" * 16
    lines = list(open_stream(reader(data)))
    assert b"".join(lines) == text and len(lines) == 501 and lines[3] == b"line 3\n"
    s = open_stream(reader(data))
    parts = []
    while chunk := s.read(333):
        assert len(chunk) <= 333
        parts.append(chunk)
    assert b"".join(parts) == text


def test_truncation_and_garbage_raise_after_the_good_bytes() -> None:
    text = bytes(range(256)) * 4000
    data = gzip.compress(text)
    s = open_stream(reader(data[: len(data) - 20]))  # trailer and some data cut
    got = b""
    with pytest.raises(EOFError):
        while chunk := s.read(4096):
            got += chunk
    assert len(got) > 0 and text.startswith(got)
    with pytest.raises(gzip.BadGzipFile, match="trailing garbage"):
        open_stream(reader(data + b"junk")).read()
    with pytest.raises(streams.GZIP_ERRORS):
        open_stream(reader(data[:10] + b"\xff" * 50 + data[60:])).read()


def test_closing_early_stops_the_helper_thread() -> None:
    data = gzip.compress(b"x" * (40 << 20), compresslevel=1)  # far more than the queue holds
    s = open_stream(reader(data))
    assert s.read(10) == b"x" * 10
    s.close()  # type: ignore[attr-defined]
    assert not any(t.name == "medcite-gunzip" and t.is_alive() for t in threading.enumerate())
