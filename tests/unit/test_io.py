"""medcite.io: the small file helpers every layer shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from medcite.io import fsync_dir


def _record_closes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    closed: list[int] = []
    real_close = os.close

    def close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "close", close)
    return closed


@pytest.mark.skipif(os.name != "posix", reason="folders are fsynced on POSIX only")
def test_fsync_dir_fsyncs_the_folder_and_closes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    closed = _record_closes(monkeypatch)
    fsync_dir(tmp_path)
    assert len(synced) == 1 and closed == synced
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "missing")


@pytest.mark.skipif(os.name != "posix", reason="folders are fsynced on POSIX only")
def test_fsync_dir_closes_the_folder_when_fsync_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError("no space left")

    monkeypatch.setattr(os, "fsync", fail)
    closed = _record_closes(monkeypatch)
    with pytest.raises(OSError, match="no space left"):
        fsync_dir(tmp_path)
    assert len(closed) == 1
