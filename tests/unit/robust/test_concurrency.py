"""Issue 16, done-when (c): two ingests into one store, and a search during an ingest.

Results are correct (the same as one ingest after the other), or the waiting command says why it waits:
"store ... is busy (held by pid N); waiting".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner
from robust_helpers import corpus_lines, store_state

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article

SRC = str(Path(__file__).resolve().parents[3] / "src")
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def medcite(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "medcite", *args], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def two_files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(corpus_lines(40))
    b.write_text("".join(json.dumps({"pmid": 1000 + i, "title": f"Aspirin and stroke {i}",
                                     "abstract": f"Aspirin lowers stroke risk {i}."}) + "\n" for i in range(40)))
    return a, b


def test_two_ingests_at_once_end_like_one_after_the_other(tmp_path: Path) -> None:
    a, b = two_files(tmp_path)
    procs = [medcite("ingest", str(p), "--store", str(tmp_path / "store")) for p in (a, b)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("Traceback" not in err and "database is locked" not in err for _, err in outs), outs
    assert CliRunner().invoke(cli, ["ingest", str(a), str(b), "--store", str(tmp_path / "ref")]).exit_code == 0
    got, ref = store_state(tmp_path / "store"), store_state(tmp_path / "ref")
    assert [r[0] for r in got[0]] == [r[0] for r in ref[0]] and len(got[0]) == 80
    assert [r[3:] for r in got[0]] == [r[3:] for r in ref[0]]  # same text and metadata, seqs may differ
    assert sorted(f[0] for f in got[1]) == sorted(f[0] for f in ref[1])


def test_a_waiting_ingest_says_whom_it_waits_for(tmp_path: Path) -> None:
    a, _ = two_files(tmp_path)
    with DocumentStore.create(tmp_path / "store"):
        proc = medcite("ingest", str(a), "--store", str(tmp_path / "store"))
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the waiting message (or the end)
        assert f"is busy (held by pid {os.getpid()}); waiting" in line, line
        assert proc.poll() is None  # still waiting while the lock is held
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "40 articles" in out, (out, err)


def test_an_ingest_that_may_not_wait_fails_naming_the_holder(tmp_path: Path) -> None:
    a, _ = two_files(tmp_path)
    with DocumentStore.create(tmp_path / "store"):
        result = CliRunner().invoke(cli, ["ingest", str(a), "--store", str(tmp_path / "store"), "--wait", "0"])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert f"error: store {tmp_path / 'store'} is busy (held by pid {os.getpid()})" in result.output
    assert "database is locked" not in result.output


def test_search_during_an_ingest_sees_the_last_commit_without_waiting(tmp_path: Path) -> None:
    a, _ = two_files(tmp_path)
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", str(a), "--store", str(store)]).exit_code == 0
    before = CliRunner().invoke(cli, ["search", "statins LDL", "--corpus", str(store), "--preset", "bm25"])
    assert before.exit_code == 0, before.output
    with DocumentStore.create(store) as s, s.transaction() as txn:  # an ingest in the middle of a file
        txn.upsert([Article(str(5000 + i), f"Statins LDL new {i}", "Statins lower LDL.") for i in range(30)],
                   FileStats("x"))
        start = time.perf_counter()
        proc = medcite("-q", "search", "statins LDL", "--corpus", str(store), "--preset", "bm25")
        out, err = proc.communicate(timeout=120)
        assert time.perf_counter() - start < 60
        assert proc.returncode == 0, (out, err)
        assert "Traceback" not in err and "locked" not in err
        assert out == before.output  # the uncommitted articles are not visible
        assert "5000" not in out
    after = CliRunner().invoke(cli, ["search", "statins LDL", "--corpus", str(store), "--preset", "bm25"])
    assert after.exit_code == 0 and "Statins LDL new" in after.output  # committed: the index catches up
