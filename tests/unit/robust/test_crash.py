"""Issue 16, done-when (b): ``ingest``, ``index`` and ``run`` killed (SIGKILL) at random points, then re-run,
end exactly where an uninterrupted run ends.

Each kill is a real subprocess killed after a random delay drawn over its whole running time (start-up
included, so kills land in imports, in the middle of a transaction, between files and topics, and after the
end). The re-run goes through the CLI in-process. ``MEDCITE_CRASH_KILLS`` sets the number of kills of the
slow test (default 20 per command); the fast test kills each command once.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from robust_helpers import snapshot, store_state

from medcite.cli.main import cli

SRC = str(Path(__file__).resolve().parents[3] / "src")
QUERIES = ["statins LDL", "exercise HDL", "scurvy vitamin C"]
TOPICS = [{"id": f"t{i}", "question": q} for i, q in enumerate(
    ["Do statins lower LDL?", "Does exercise raise HDL?", "What treats scurvy?", "Do statins help adults?"], 1)]


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, ["-q", *args])
    assert result.exit_code == 0, (args, result.output, repr(result.exception))
    return result.output


def corpus(folder: Path) -> list[Path]:
    """Three JSONL files; the third replaces some records of the first with a newer version."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n, (lo, hi, version) in enumerate([(1, 60, 1), (61, 120, 1), (1, 20, 2)], start=1):
        path = folder / f"part{n}.jsonl"
        path.write_text("".join(json.dumps({
            "pmid": i, "version": version, "title": f"Statins and LDL study {i} v{version}",
            "abstract": f"Statins lower LDL cholesterol in adults {i}. Exercise raises HDL {i % 7}. "
                        f"Vitamin C treats scurvy in sailors {i % 5}."}) + "\n" for i in range(lo, hi + 1)))
        files.append(path)
    return files


def kill_at_random(args: list[str], delay: float, cwd: Path) -> None:
    """Start ``medcite ARGS`` and SIGKILL it after ``delay`` seconds (if it is still running)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "medcite", "-q", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    kill_at_random(args, 120.0, cwd)
    return time.perf_counter() - start


def crash_then_rerun(kills: int, full_s: float, attempt: Callable[[int, float], None]) -> None:
    rng = random.Random(1616)
    for i in range(kills):
        attempt(i, rng.uniform(0.0, full_s * 1.1))


def run_files(out: Path) -> dict[str, bytes]:
    """A run directory's content, minus what is expected to vary (timestamps, timings, its own path)."""
    files = {k: v.replace(str(out.parent).encode(), b"PARENT") for k, v in snapshot(out).items()}
    config = json.loads(files.pop("config.json"))
    config.pop("created_at", None)
    files["config.json"] = json.dumps(config, sort_keys=True).encode()
    timings = files.pop("timings.jsonl", b"")
    files["timings.topics"] = b" ".join(json.loads(line)["topic_id"].encode() for line in timings.splitlines())
    return files


def search_results(store: Path) -> list[str]:
    return [invoke("search", q, "--corpus", str(store), "--preset", "bm25") for q in QUERIES]


def check_ingest(tmp_path: Path, kills: int) -> None:
    files = corpus(tmp_path / "in")
    ref = tmp_path / "ref-store"
    full_s = timed(["ingest", *map(str, files), "--store", str(ref)], tmp_path)
    expected = store_state(ref)

    def attempt(i: int, delay: float) -> None:
        store = tmp_path / f"store{i}"
        kill_at_random(["ingest", *map(str, files), "--store", str(store)], delay, tmp_path)
        invoke("ingest", *map(str, files), "--store", str(store))
        assert store_state(store) == expected, f"kill {i} after {delay:.2f} s"
        shutil.rmtree(store, ignore_errors=True)  # cleanup only: tantivy in this process may still touch it

    crash_then_rerun(kills, full_s, attempt)


def check_index(tmp_path: Path, kills: int) -> None:
    files = corpus(tmp_path / "in")
    base = tmp_path / "base-store"
    invoke("ingest", *map(str, files), "--store", str(base))
    ref = tmp_path / "ref-store"
    shutil.copytree(base, ref)
    full_s = timed(["index", "bm25", "--store", str(ref)], tmp_path)
    expected = search_results(ref)

    def attempt(i: int, delay: float) -> None:
        store = tmp_path / f"store{i}"
        shutil.copytree(base, store)
        kill_at_random(["index", "bm25", "--store", str(store)], delay, tmp_path)
        invoke("index", "bm25", "--store", str(store))
        assert search_results(store) == expected, f"kill {i} after {delay:.2f} s"
        shutil.rmtree(store, ignore_errors=True)  # cleanup only: tantivy in this process may still touch it

    crash_then_rerun(kills, full_s, attempt)


def check_run(tmp_path: Path, kills: int) -> None:
    files = corpus(tmp_path / "in")
    store = tmp_path / "store"
    invoke("ingest", *map(str, files), "--store", str(store))
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps(TOPICS))
    ref = tmp_path / "ref" / "run"
    full_s = timed(["run", "--topics", str(topics), "--corpus", str(store), "--out", str(ref)], tmp_path)
    expected = run_files(ref)
    assert "answers.jsonl" in expected and expected["answers.jsonl"].count(b"\n") == len(TOPICS)
    index_before = snapshot(store / "indexes")

    def attempt(i: int, delay: float) -> None:
        out = tmp_path / f"kill{i}" / "run"  # the same folder name: it is the submission's run id
        kill_at_random(["run", "--topics", str(topics), "--corpus", str(store), "--out", str(out)], delay, tmp_path)
        invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(out))
        assert run_files(out) == expected, f"kill {i} after {delay:.2f} s"
        shutil.rmtree(out, ignore_errors=True)

    crash_then_rerun(kills, full_s, attempt)
    assert snapshot(store / "indexes") == index_before


CHECKS = {"ingest": check_ingest, "index": check_index, "run": check_run}


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_killed_once_then_rerun_ends_identical(tmp_path: Path, command: str) -> None:
    CHECKS[command](tmp_path, 1)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(CHECKS))
def test_killed_at_random_points_then_rerun_ends_identical(tmp_path: Path, command: str) -> None:
    CHECKS[command](tmp_path, int(os.environ.get("MEDCITE_CRASH_KILLS", "20")))


def test_an_interrupted_first_index_build_is_built_again(tmp_path: Path) -> None:
    """Found by the crash test: a build killed before its manifest left a folder every later build refused."""
    files = corpus(tmp_path / "in")
    store = tmp_path / "store"
    invoke("ingest", *map(str, files), "--store", str(store))
    ref = search_results(store)
    (folder,) = [p for p in (store / "indexes").iterdir() if p.is_dir()]  # the build lock lies beside it
    (folder / "manifest.json").unlink()  # as a kill between the backend's files and the manifest leaves it
    assert search_results(store) == ref
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")  # a folder with other content is still refused
    result = CliRunner().invoke(cli, ["index", "bm25", "--store", str(store), "--out", str(tmp_path / "other")])
    assert result.exit_code == 1 and "has no manifest.json" in result.output
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_temporary_files_of_an_interrupted_atomic_write_are_removed_on_resume(tmp_path: Path) -> None:
    """Found by the crash test: a run killed inside ``atomic_write`` left ``.config.json.XXXX.tmp`` behind."""
    from medcite.config import Settings
    from medcite.corpus.store import DocumentStore
    from medcite.rundir import RunWriter

    out = tmp_path / "run"
    RunWriter(out, Settings()).close()
    (out / ".config.json.k2j3.tmp").write_text('{"half": ')
    (out / ".notes.tmp.keep").write_text("not ours")
    RunWriter(out, Settings()).close()
    assert sorted(p.name for p in out.iterdir()) == [".notes.tmp.keep", "config.json", "run.lock"]
    with DocumentStore.create(tmp_path / "store"):
        pass
    (tmp_path / "store" / ".manifest.json.x1.tmp").write_text("{")
    with DocumentStore.create(tmp_path / "store"):
        assert not (tmp_path / "store" / ".manifest.json.x1.tmp").exists()
