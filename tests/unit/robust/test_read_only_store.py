"""Issue 42, item 6: a read-only corpus works, and errors never advise deleting a store that is one.

`run` or `search` on a valid store in a read-only mount said "store.sqlite is not a medcite document store ... remove
the folder and run `medcite ingest` again"; with its -wal/-shm files it got further and the index lock failed with
"rebuild the index". Now the store and its indexes are read read-only where the folder cannot be written.

How the folder is made read-only: a read-only bind mount when the tests may mount (root in a container that allows
it), else the folder's write permission taken away (which root ignores, so as root without mounts those tests are
skipped); the read-only code path itself is also run everywhere by making medcite see the folder as not writable.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from robust_helpers import corpus_lines

from medcite.cli.main import cli
from medcite.corpus import store_db
from medcite.corpus.store import DocumentStore
from medcite.errors import CorruptIndexError


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, ["-q", *args])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 30 abstracts with its BM25 index, closed (no -wal/-shm left)."""
    folder = tmp_path_factory.mktemp("ro")
    (folder / "c.jsonl").write_text(corpus_lines(30))
    assert invoke("ingest", str(folder / "c.jsonl"), "--store", str(folder / "store")).exit_code == 0
    assert invoke("index", "bm25", "--store", str(folder / "store")).exit_code == 0
    return folder / "store"


def _copy(built: Path, to: Path, *, wal: bool = False, index: bool = True) -> Path:
    """A copy of the store; ``wal``: copied while a connection holds a change only in its -wal file."""
    if not wal:
        shutil.copytree(built, to)
    else:
        scratch = to.parent / f"{to.name}-scratch"
        shutil.copytree(built, scratch)
        conn = sqlite3.connect(scratch / "store.sqlite", isolation_level=None)
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('probe', 'in the wal')")
        shutil.copytree(scratch, to)
        conn.close()
    if not index:
        shutil.rmtree(to / "indexes")
    return to


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[callable]:
    """Makes a folder read-only for real: a read-only bind mount, else (not root) no write permission."""
    mounted: list[Path] = []
    chmodded: list[Path] = []

    def make(folder: Path) -> Path:
        view = folder.parent / f"{folder.name}-ro"
        view.mkdir()
        if os.geteuid() == 0:
            if subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True).returncode:
                pytest.skip("root without mounts: a read-only folder cannot be made here")
            mounted.append(view)
            if subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode:
                pytest.skip("cannot remount read-only here")
            return view
        view.rmdir()
        for p in [folder, *folder.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
            chmodded.append(p)
        return folder

    yield make
    for view in mounted:
        subprocess.run(["umount", str(view)], capture_output=True)
    for p in chmodded:
        p.chmod(p.stat().st_mode | 0o200)


@pytest.mark.parametrize("wal", [False, True], ids=["closed", "with -wal/-shm"])
def test_search_ask_and_run_work_on_a_read_only_store(built: Path, tmp_path: Path, read_only: callable,
                                                      wal: bool) -> None:
    store = read_only(_copy(built, tmp_path / "store", wal=wal))
    result = invoke("search", "statins LDL", "--corpus", str(store), "-k", "3")
    assert result.exit_code == 0, result.output
    assert result.output.count("Statins and LDL study") == 3
    topics = tmp_path / "topics.json"
    topics.write_text('[{"id": "t1", "question": "Do statins lower LDL?"}]')
    result = invoke("run", "--topics", str(topics), "--corpus", str(store), "--preset", "bm25", "--out",
                    str(tmp_path / "run"))
    assert result.exit_code == 0 and "valid" in result.output, result.output
    result = invoke("ask", "Do statins lower LDL?", "--corpus", str(store), "--preset", "bm25", "--out",
                    str(tmp_path / "ask"))
    assert result.exit_code == 0, result.output
    with DocumentStore.open(store) as s:
        assert s.read_only and len(s) == 30
        if wal:  # what the -wal file holds is read too
            assert s._meta("probe") == "in the wal"


def test_a_read_only_store_without_its_index_says_where_to_build_it(built: Path, tmp_path: Path,
                                                                    read_only: callable) -> None:
    store = read_only(_copy(built, tmp_path / "store", index=False))
    result = invoke("search", "statins LDL", "--corpus", str(store))
    assert result.exit_code == 1
    assert "cannot be built there" in result.output and f"medcite index bm25 --store {store}" in result.output
    assert "remove" not in result.output and "not available here" not in result.output


# -- the read-only code path, wherever the tests run (root included) -----------------------------------------
@pytest.fixture
def unwritable(monkeypatch: pytest.MonkeyPatch) -> None:
    """medcite sees every store folder as one it cannot write (what a read-only mount looks like to it)."""
    monkeypatch.setattr(store_db, "_writable", lambda folder, db: False)


def test_a_store_that_cannot_be_written_is_opened_read_only_and_sees_its_wal(built: Path, tmp_path: Path,
                                                                              unwritable: None) -> None:
    store = _copy(built, tmp_path / "store", wal=True)
    with DocumentStore.open(store) as s:
        assert s.read_only and len(s) == 30 and s._meta("probe") == "in the wal"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            s._conn.execute("INSERT INTO meta VALUES ('x', 'y')")
    closed = _copy(built, tmp_path / "closed")
    with DocumentStore.open(closed) as s:
        assert s.read_only and len(s) == 30


def test_a_wal_with_changes_but_no_shm_in_a_read_only_folder_is_said_so(built: Path, tmp_path: Path,
                                                                        unwritable: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store = _copy(built, tmp_path / "store", wal=True)
    (store / "store.sqlite-shm").unlink()

    def refused(db: Path, folder: Path, *, wal: bool, uri: str | None = None) -> sqlite3.Connection:
        if uri is not None and "mode=ro" in uri:  # SQLite cannot make the -shm in a read-only folder
            raise store_db._Unreadable(sqlite3.OperationalError("unable to open database file"))
        return real(db, folder, wal=wal, uri=uri)

    real = store_db._open
    monkeypatch.setattr(store_db, "_open", refused)
    with pytest.raises(CorruptIndexError) as info:
        DocumentStore.open(store)
    assert "read-only" in info.value.message and "not a medcite document store" not in info.value.message
    assert "remove" not in (info.value.hint or "")


@pytest.mark.parametrize("error", ["disk I/O error", "database is locked", "attempt to write a readonly database"])
def test_errors_of_the_file_system_never_call_a_store_foreign(built: Path, tmp_path: Path, error: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = _copy(built, tmp_path / "store")

    def failing(db: Path, folder: Path, *, wal: bool, uri: str | None = None) -> sqlite3.Connection:
        raise store_db._Unreadable(sqlite3.OperationalError(error))

    monkeypatch.setattr(store_db, "_open", failing)
    result = invoke("search", "statins LDL", "--corpus", str(store))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "not a medcite document store" not in result.output and "remove the folder" not in result.output
    said = {"disk I/O error": "disk I/O error", "database is locked": "locked",
            "attempt to write a readonly database": "read-only"}[error]
    assert said in result.output


def test_a_store_read_under_a_file_size_limit_below_its_size_is_read_read_only(built: Path, tmp_path: Path) -> None:
    """SQLite cannot make its -shm file (32 kB) under ``ulimit -f 3000``: the store is read read-only, never
    called foreign; the run folder's first write then fails, naming it."""
    import resource
    import sys

    store = _copy(built, tmp_path / "store")
    src = str(Path(__file__).resolve().parents[3] / "src")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    proc = subprocess.run([sys.executable, "-m", "medcite", "-q", "search", "statins LDL", "--corpus", str(store),
                           "-k", "2"], preexec_fn=cap, env={**os.environ, "PYTHONPATH": src}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Statins and LDL study") == 2 and "not a medcite document store" not in proc.stderr
