"""The build lock of an index folder (issue 32): a dead holder never blocks, a wait that runs out names the lock file
and the holder's pid, the lock is reentrant in a thread and serialises threads, and the holder publishes its
progress for the jobs that wait."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _dense_fakes import fill_store, make_articles
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.errors import BusyError, ConfigError
from medcite.index import build_lock
from medcite.index.base import index_folder
from medcite.index.build_lock import (
    WAIT_ENV,
    building,
    describe_progress,
    lock_file,
    phase,
    progress_file,
    read_progress,
    wait_limit,
)
from medcite.progress import progress

SRC = str(Path(__file__).resolve().parents[3] / "src")
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
HOLD = """
import os, signal, sys
from medcite.index.build_lock import building, phase
with building(sys.argv[1], "the test index"):
    phase("encoding")
    print("held", flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()  # hold the lock until the test closes our stdin
"""


def holder(folder: Path, how: str) -> subprocess.Popen[str]:
    """Another process that takes the build lock of ``folder``, then dies (``die``) or holds it (``hold``)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), how], env=ENV, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n", proc.communicate()
    return proc


def test_a_lock_left_by_a_killed_build_does_not_block(tmp_path: Path) -> None:
    folder = tmp_path / "indexes" / "faiss-x"
    dead = holder(folder, "die")
    assert dead.wait(30) == -9
    assert lock_file(folder).read_text().strip() == str(dead.pid)  # what the killed build left behind
    assert (read_progress(folder) or {}).get("pid") == dead.pid
    start = time.monotonic()
    with building(folder, wait_s=0):  # 0: a lock still held would raise BusyError at once
        phase("resuming")
        assert (read_progress(folder) or {}).get("pid") == os.getpid()
    assert time.monotonic() - start < 5
    assert lock_file(folder).exists() and not progress_file(folder).exists()


def test_a_wait_that_runs_out_names_the_lock_file_and_the_holder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    store = fill_store(tmp_path / "store", make_articles(5))
    store.close()
    folder = index_folder(store.path, load_settings("bm25").indexes["bm25"]).resolve()
    live = holder(folder, "hold")
    try:
        monkeypatch.setenv(WAIT_ENV, "0.3")
        monkeypatch.setattr(build_lock, "SAY_AFTER_S", 0.0)  # say at once that it waits
        with pytest.raises(BusyError) as caught, caplog.at_level(logging.INFO):
            with building(folder, "the test index"):
                pass
        assert caught.value.holder == live.pid and caught.value.lock == str(lock_file(folder))
        assert (f"the test index {folder} is still being built by pid {live.pid} after 0 s of waiting (lock file "
                f"{lock_file(folder)}; encoding, 0 s ago)") in str(caught.value)
        assert f"{WAIT_ENV}=SECONDS" in str(caught.value)  # the hint: how to wait longer
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(said) == 1 and f"is being built by pid {live.pid} (lock {lock_file(folder)}; encoding" in said[0]
        assert "(at most 0 s, MEDCITE_INDEX_WAIT)" in said[0]

        # the command line: a clean error naming both, exit status 1
        result = CliRunner().invoke(cli, ["index", "bm25", "--store", str(store.path)])
        assert result.exit_code == 1, result.output
        assert f"error: the BM25 index {folder} is still being built by pid {live.pid}" in result.output
        assert str(lock_file(folder)) in result.output and "Traceback" not in result.output
    finally:
        live.communicate("", timeout=30)  # end of stdin: it lets go and exits
    assert live.returncode == 0
    with building(folder, wait_s=0):
        pass


def test_the_lock_is_reentrant_in_a_thread_and_serialises_threads(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "idx"
    events: list[str] = []

    def other_thread() -> None:
        with building(folder):
            events.append("thread builds")

    with building(folder):
        with building(folder):  # a build that ends in an update of the same folder: no deadlock
            events.append("nested")
        thread = threading.Thread(target=other_thread)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive()  # it waits for this thread to let go
        events.append("main lets go")
    thread.join(10)
    assert events == ["nested", "main lets go", "thread builds"]
    assert not caplog.records  # a wait shorter than SAY_AFTER_S (a job checking that the index is up to date) is quiet


def test_the_holder_publishes_its_progress_and_removes_it_when_done(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    with building(folder, "the test index"):
        assert read_progress(folder) is None  # nothing to tell yet: a job that finds nothing to do writes nothing
        with progress(total=10, desc="test build", unit="doc") as bar:
            bar.update(4)  # a new phase: written at once
            state = read_progress(folder) or {}
            assert (state["pid"], state["what"]) == (os.getpid(), "the test index")
            assert (state["phase"], state["done"], state["total"]) == ("test build", 4, 10)
            with progress(total=4, desc="inner", unit="doc") as inner:  # part of the outer loop's work
                inner.update(3)
            state = read_progress(folder) or {}
            assert state["phase"] == "test build"
            bar.update(6)  # the end of the loop is always written
            assert (read_progress(folder) or {})["done"] == 10
        phase("assembling the FAISS index")
        state = read_progress(folder) or {}
        assert (state["phase"], state["done"], state["total"]) == ("assembling the FAISS index", None, None)
    assert not progress_file(folder).exists() and lock_file(folder).exists()
    assert not list(folder.parent.glob(".*.tmp"))


def test_progress_and_wait_limit_wording() -> None:
    state = {"phase": "dense build", "done": 10_000, "total": 19_089, "updated_at": 100.0}
    assert describe_progress(state, now=103.0) == "dense build: 10,000 of 19,089 (52 %), 3 s ago"
    assert describe_progress({"phase": "assembling the FAISS index", "done": None, "total": None}) == \
        "assembling the FAISS index"
    assert describe_progress(None) == "no progress published yet"


@pytest.mark.parametrize(("raw", "seconds"), [("", None), ("inf", None), ("90", 90.0), (" 0.5 ", 0.5)])
def test_the_wait_limit_comes_from_the_environment(raw: str, seconds: float | None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WAIT_ENV, raw)
    assert wait_limit() == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_a_wait_limit_that_is_no_number_of_seconds_is_refused(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WAIT_ENV, raw)
    with pytest.raises(ConfigError, match=rf"{WAIT_ENV}='{raw}' is not a number of seconds"):
        wait_limit()
