"""medcite.write_failures: what a refused write means, however the library that wrote said it (issue 42)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from medcite import write_failures as wf
from medcite.errors import DiskFullError, WriteError


@pytest.mark.parametrize(("error", "reason"), [
    (OSError(errno.ENOSPC, "No space left on device"), "disk full"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "disk full"),
    (OSError(errno.EFBIG, "File too large"), "file too large"),
    (OSError(errno.EROFS, "Read-only file system"), "read-only"),
    (PermissionError(errno.EACCES, "Permission denied"), "read-only"),
    (sqlite3.OperationalError("database or disk is full"), "disk full"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
    (ValueError("An IO error occurred: 'File too large (os error 27)'"), "file too large"),
    (ValueError("An IO error occurred: 'No space left on device (os error 28)'"), "disk full"),
    (RuntimeError("Error in faiss::write_index: write error in x.tmp: 199955 != 307200 (File too large)"),
     "file too large"),
    (Exception("Error while serializing: IoError(Os { code: 28, kind: StorageFull })"), "disk full"),
])
def test_each_library_s_words_for_a_refused_write(error: BaseException, reason: str, tmp_path: Path) -> None:
    assert wf.reason_of(error, tmp_path / "f") == reason


@pytest.mark.parametrize("error", [OSError(errno.ENOENT, "No such file"), sqlite3.OperationalError("no such table: x"),
                                   ValueError("not a number"), RuntimeError("CUDA out of memory"),
                                   KeyError("io error")])
def test_other_errors_are_not_refused_writes(error: BaseException, tmp_path: Path) -> None:
    assert wf.reason_of(error, tmp_path / "f") is None
    assert wf.write_failure(error, tmp_path / "f") is None


def test_an_error_that_gives_no_reason_is_read_from_the_limit_and_the_free_space(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(b"x" * 100_000)
    io_error = sqlite3.OperationalError("disk I/O error")
    monkeypatch.setattr(wf, "file_size_limit", lambda: 100_000)
    assert wf.reason_of(io_error, path) == "file too large"  # the file is at the limit
    assert wf.reason_of(OSError("46080 requested and 25568 written"), path) == "file too large"
    monkeypatch.setattr(wf, "file_size_limit", lambda: None)
    monkeypatch.setattr(wf, "free_bytes", lambda p: 4096)
    assert wf.reason_of(io_error, path) == "disk full"  # almost nothing is free
    monkeypatch.setattr(wf, "free_bytes", lambda p: 10**12)
    assert wf.reason_of(io_error, path) == "disk I/O error"  # neither: said as it is


def test_the_error_names_the_path_the_reason_the_need_and_what_was_kept(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wf, "file_size_limit", lambda: 2_000_000)
    error = wf.write_failure(OSError(errno.EFBIG, "File too large"), tmp_path / "index.faiss", needed=5_000_000,
                             kept="nothing already written was lost: the index keeps its last commit")
    assert isinstance(error, WriteError) and error.reason == "file too large"
    assert error.message.startswith("file too large: the file-size limit of 2.0 MB (ulimit -f) was reached while "
                                    f"writing {tmp_path / 'index.faiss'} (the step needs about 5.0 MB; ")
    assert error.message.endswith("; nothing already written was lost: the index keeps its last commit")
    full = wf.write_failure(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "x")
    assert isinstance(full, DiskFullError) and full.message.startswith("disk full: no space left on ")
    assert wf.write_failure(full, tmp_path / "y") is full  # already said: passed on as it is
