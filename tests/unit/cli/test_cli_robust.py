"""Issue 16, items 14-16: a full disk, topic ids TREC cannot hold, and inputs that gave tracebacks.

Every case ends in a one-line ``error:`` naming the input (exit code 1 or 2), never a traceback, and leaves
the store / run directory as it was before the failed step.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medcite import rundir
from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats, StoreTransaction
from medcite.trec import write_qrels
from medcite.types import Article

ARTICLES = [Article(str(i), f"Statins study {i}", f"Statins lower LDL cholesterol in adults {i}. "
                    f"Exercise raises HDL {i}.") for i in range(1, 13)]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert(ARTICLES, FileStats("x"))
    return tmp_path / "store"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["-q", *args])


def clean_error(result: Result, *needles: str) -> None:
    """Failed with a one-line error (plus an optional hint line) that names the input; no traceback."""
    assert result.exit_code in (1, 2), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    out = result.output
    assert "Traceback" not in out and "error: " in out, out
    error_lines = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1, out
    for needle in needles:
        assert needle in error_lines[0], (needle, out)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a folder (lock and WAL side files aside) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))}


def store_rows(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    conn = sqlite3.connect(path / "store.sqlite")
    try:
        return (conn.execute("SELECT pmid, version, seq, title FROM articles ORDER BY pmid").fetchall(),
                conn.execute("SELECT key, status FROM files ORDER BY key").fetchall())
    finally:
        conn.close()


# -- 14: full disk ---------------------------------------------------------------------------------------
def test_disk_full_during_ingest_rolls_back_the_file(tmp_path: Path, store: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = store_rows(store)
    src = tmp_path / "more.jsonl"
    src.write_text("\n".join(json.dumps({"pmid": 100 + i, "title": f"T{i}"}) for i in range(50)) + "\n")
    calls = {"n": 0}
    real = StoreTransaction.upsert

    def upsert_then_full(self: StoreTransaction, articles: list[Article], stats: FileStats) -> None:
        calls["n"] += 1
        real(self, articles, stats)  # rows are written into the transaction, then the disk fills up
        if calls["n"] == 2:
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(StoreTransaction, "upsert", upsert_then_full)
    result = invoke("ingest", str(src), "--store", str(store), "--batch-size", "10")
    clean_error(result, "no space left on ", "while writing ", "store.sqlite")
    assert store_rows(store) == before


def test_disk_full_writing_the_manifest_keeps_the_commit(tmp_path: Path, store: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit stands (the manifest is a summary): a warning, not a half-failed step."""
    from medcite import io as mio

    def fsync_full(fd: int) -> None:  # only medcite's atomic writes call os.fsync here (SQLite syncs in C)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mio.os, "fsync", fsync_full)
    src = tmp_path / "one.jsonl"
    src.write_text(json.dumps({"pmid": 500, "title": "T"}) + "\n")
    result = invoke("ingest", str(src), "--store", str(store))
    assert result.exit_code == 0, result.output
    assert (500, 1) in [(r[0], r[1]) for r in store_rows(store)[0]]


def test_disk_full_during_a_run_leaves_the_run_dir_as_before_the_topic(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps([{"id": f"t{i}", "question": "Do statins lower LDL?"} for i in (1, 2)]))
    out = tmp_path / "run"
    assert invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(out)).exit_code == 0
    done = snapshot(out)
    topics.write_text(json.dumps([{"id": f"t{i}", "question": "Do statins lower LDL?"} for i in (1, 2, 3)]))
    real_write = rundir._write_lines

    def write_full(path: Path, lines: list[str], sync: bool) -> None:
        if path.name == "evidence.jsonl":  # topic t3 already wrote its topics/queries/trec rows
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(lines[0][:10])  # a torn line, as a full disk leaves it
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, lines, sync)

    monkeypatch.setattr(rundir, "_write_lines", write_full)
    result = invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(out))
    clean_error(result, "no space left on ", "evidence.jsonl")
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k != "config.json"} == \
        {k: v for k, v in done.items() if k != "config.json"}


def test_atomic_write_on_a_full_disk_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite import io as mio
    from medcite.errors import DiskFullError

    target = tmp_path / "m.json"
    mio.write_json(target, {"v": 1})

    def fsync_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mio.os, "fsync", fsync_full)
    with pytest.raises(DiskFullError, match=r"no space left on .* while writing .*m\.json"):
        mio.write_json(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary file left


# -- 15: topic ids TREC cannot hold ------------------------------------------------------------------------
@pytest.mark.parametrize("tid", ["t 1", "t\n1", "t\t1", "", "t\x001"])
def test_topic_ids_with_spaces_are_rejected_before_any_work(tmp_path: Path, store: Path, tid: str) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps([{"id": "ok", "question": "Do statins lower LDL?"},
                                  {"id": tid, "question": "Do statins lower LDL?"}]))
    result = invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(tmp_path / "run"))
    clean_error(result, str(topics))
    assert not (tmp_path / "run").exists()


def test_every_trec_writer_checks_ids(tmp_path: Path) -> None:
    from medcite.errors import InputError
    from medcite.trec import write_run
    from medcite.types import Hit

    with pytest.raises(InputError, match="query id 'a b'"):
        write_run(tmp_path / "r.trec", {"a b": [Hit("1", 1.0, 1)]}, "tag")
    with pytest.raises(InputError, match="query id 'a\\\\nb'"):
        write_qrels(tmp_path / "q.txt", {"a\nb": {"1": 1}})
    with pytest.raises(InputError, match="document id of query q"):
        write_qrels(tmp_path / "q.txt", {"q": {"1 2": 1}})
    assert not list(tmp_path.iterdir())


# -- 16: inputs that gave tracebacks -----------------------------------------------------------------------
def test_lone_surrogate_in_a_topic(tmp_path: Path, store: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('[{"id": "t1", "question": "Do statins \\ud800 lower LDL?"}]')
    result = invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(tmp_path / "run"))
    clean_error(result, str(topics), "lone surrogate")
    assert not (tmp_path / "run").exists()


def test_non_utf8_command_line_bytes(store: Path) -> None:
    question = b"stat\xffins lower LDL?".decode("utf-8", "surrogateescape")  # how Python receives such argv
    result = invoke("ask", question, "--corpus", str(store))
    clean_error(result, "stat\\xffins", "not valid UTF-8")


def test_ask_out_pointing_at_an_existing_file(tmp_path: Path, store: Path) -> None:
    existing = tmp_path / "answer.txt"
    existing.write_text("keep me")
    result = invoke("ask", "Do statins lower LDL?", "--corpus", str(store), "--out", str(existing))
    clean_error(result, str(existing), "not a folder")
    assert existing.read_text() == "keep me"


@pytest.mark.parametrize(("content", "needle"), [
    (None, "is a folder"), ('["offline"]', "not a JSON object"), ('{"extends": ["offline"]}', "'extends' must be"),
    ('{"extends": 5}', "'extends' must be"), ("{", "not valid JSON"),
])
def test_preset_given_a_folder_or_a_list(tmp_path: Path, store: Path, content: str | None, needle: str) -> None:
    preset = tmp_path / "p.json"
    if content is None:
        preset.mkdir()
    else:
        preset.write_text(content)
    result = invoke("search", "statins", "--corpus", str(store), "--preset", str(preset))
    clean_error(result, "p.json", needle)


@pytest.mark.parametrize("value", ["9" * 30, "1" + "0" * 5000, "-" + "9" * 25, "[1, 99999999999999999999999]"])
def test_huge_integers_in_set(store: Path, value: str) -> None:
    result = invoke("search", "statins", "--corpus", str(store), "--set", f"retrieve.k={value}")
    clean_error(result, "retrieve.k", "too large")


# -- issue 42: a library's write error that names no file ------------------------------------------------------
@pytest.mark.parametrize(("error", "reason"), [
    (OSError(errno.EFBIG, "File too large"), "file too large"),
    (OSError("46080 requested and 25568 written"), "disk I/O error"),
    (ValueError("An IO error occurred: 'No space left on device (os error 28)'"), "disk full"),
    (RuntimeError("Error in faiss::write_index: write error in x: 1 != 2 (File too large)"), "file too large"),
])
def test_a_write_error_that_names_no_file_is_said_naming_the_output(tmp_path: Path, store: Path, error: Exception,
                                                                     reason: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: `bioasq phase-b` under a file-size limit said only "error: File too large", the dense index
    "error: 46080 requested and 25568 written"."""
    from medcite.cli import search

    def refused(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(search, "write_trec", refused)
    out = tmp_path / "out.trec"
    result = invoke("search", "statins", "--corpus", str(store), "--preset", "bm25", "--output", str(out))
    clean_error(result, reason, str(out))
