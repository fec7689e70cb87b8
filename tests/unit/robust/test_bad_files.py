"""Issue 16, done-when (a): every hand-made bad file in tests/data/bad through the commands that read it.

Each ends with one ``error:`` line naming the file, no traceback, and the store (with its indexes) and any
run directory exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from robust_helpers import BAD, assert_clean_error, corpus_lines, snapshot, store_state

from medcite.cli.main import cli


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["-q", *args])


def bad(prefix: str) -> list[Path]:
    found = sorted(p for p in BAD.iterdir() if p.name.startswith(prefix))
    assert found, prefix
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A store with its BM25 index built, a good topics file, run and qrels."""
    root = tmp_path_factory.mktemp("world")
    (root / "c.jsonl").write_text(corpus_lines())
    assert invoke("ingest", str(root / "c.jsonl"), "--store", str(root / "store")).exit_code == 0
    assert invoke("search", "statins", "--corpus", str(root / "store")).exit_code == 0  # builds the index
    (root / "topics.json").write_text('[{"id": "t1", "question": "Do statins lower LDL?"}]')
    (root / "run.trec").write_text("t1 Q0 1 1 2.0 x\nt1 Q0 2 2 1.0 x\n")
    (root / "qrels.txt").write_text("t1 0 1 1\n")
    yield {"root": root, "store": root / "store", "topics": root / "topics.json", "run": root / "run.trec",
           "qrels": root / "qrels.txt"}


@pytest.mark.parametrize("path", bad("corpus_"), ids=lambda p: p.name)
def test_bad_corpus_files(world: dict[str, Path], path: Path) -> None:
    store = world["store"]
    before, files_before = store_state(store), snapshot(store / "indexes")
    assert_clean_error(invoke("ingest", str(path), "--store", str(store)), path.name)
    assert store_state(store) == before and snapshot(store / "indexes") == files_before
    fresh = world["root"] / f"fresh-{path.name}"
    assert_clean_error(invoke("ingest", str(path), "--store", str(fresh)), path.name)
    assert not fresh.exists()  # the store is not even created for a file that cannot be read


@pytest.mark.parametrize("path", bad("corpus_"), ids=lambda p: p.name)
def test_bad_corpus_files_with_on_error_skip(tmp_path: Path, path: Path) -> None:
    result = invoke("ingest", str(path), "--store", str(tmp_path / "s"), "--on-error", "skip")
    assert result.exit_code == 0 and result.exception is None, (result.output, repr(result.exception))
    assert "Traceback" not in result.output


@pytest.mark.parametrize("path", bad("topics_"), ids=lambda p: p.name)
def test_bad_topic_files(world: dict[str, Path], path: Path) -> None:
    store, out = world["store"], world["root"] / f"run-{path.stem}"
    before = store_state(store), snapshot(store / "indexes")
    assert_clean_error(invoke("run", "--topics", str(path), "--corpus", str(store), "--out", str(out)), path.name)
    assert not out.exists()
    assert (store_state(store), snapshot(store / "indexes")) == before


@pytest.mark.parametrize("path", bad("run_"), ids=lambda p: p.name)
def test_bad_run_files(world: dict[str, Path], path: Path) -> None:
    out = world["root"] / "report.json"
    result = invoke("eval", "retrieval", "--run", str(path), "--gold", str(world["qrels"]), "--json", str(out))
    assert_clean_error(result, path.name)
    assert not out.exists()


@pytest.mark.parametrize("path", bad("qrels_"), ids=lambda p: p.name)
def test_bad_qrels_files(world: dict[str, Path], path: Path) -> None:
    assert_clean_error(invoke("eval", "retrieval", "--run", str(world["run"]), "--gold", str(path)), path.name)


@pytest.mark.parametrize("path", bad("preset_"), ids=lambda p: p.name)
@pytest.mark.parametrize("command", ["search", "run", "ingest", "config"])
def test_bad_presets(world: dict[str, Path], path: Path, command: str) -> None:
    store = world["store"]
    before = store_state(store), snapshot(store / "indexes")
    out = world["root"] / f"run-{command}-{path.stem}"
    args = {
        "search": ["search", "statins", "--corpus", str(store)],
        "run": ["run", "--topics", str(world["topics"]), "--corpus", str(store), "--out", str(out)],
        "ingest": ["ingest", str(world["root"] / "c.jsonl"), "--store", str(store)],
        "config": ["config", "show"],
    }[command]
    assert_clean_error(invoke(*args, "--preset", str(path)), path.name)
    assert (store_state(store), snapshot(store / "indexes")) == before and not out.exists()
