"""Issue 16, done-when (a): every hand-made bad file in tests/data/bad through the commands that read it.

Each ends with one ``error:`` line naming the file, no traceback, and the store (with its indexes) and any
run directory exactly as before.
"""

from __future__ import annotations

import shutil
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
    (root / "empty.jsonl").write_text("")
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


COMMANDS = {
    "validate-biogen-b": lambda f, w: ["validate", "biogen-b", f],
    "validate-biogen24": lambda f, w: ["validate", "biogen24", f],
    "validate-biogen-a": lambda f, w: ["validate", "biogen-a", f],
    "validate-topics": lambda f, w: ["validate", "biogen-b", str(w["root"] / "empty.jsonl"), "--topics", f],
    "ground": lambda f, w: ["ground", "--input", f, "--corpus", str(w["store"]), "--out", str(w["root"] / "g")],
    "search-topics": lambda f, w: ["search", "--corpus", str(w["store"]), "--topics", f, "--output",
                                   str(w["root"] / "o.trec")],
    "eval-biogen-a": lambda f, w: ["eval", "biogen-a", "--run", f, "--qrels", f],
    "eval-retrieval": lambda f, w: ["eval", "retrieval", "--run", f, "--gold", f],
    "corpus-stats": lambda f, w: ["corpus", "stats", "--store", f],
    "ask-corpus": lambda f, w: ["ask", "Do statins lower LDL?", "--corpus", f, "--out", str(w["root"] / "a")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_bad_file_through_every_command(world: dict[str, Path], command: str) -> None:
    """No traceback for any bad file in any command that reads files; a failure names the file."""
    store = world["store"]
    before = store_state(store), snapshot(store / "indexes")
    copies = world["root"] / f"bad-{command}"  # `validate` writes FILE.errlog beside its input
    shutil.copytree(BAD, copies)
    for path in sorted(copies.iterdir()):
        result = invoke(*COMMANDS[command](str(path), world))
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            (path.name, result.output, repr(result.exception))
        assert "Traceback" not in result.output and "Aborted!" not in result.output, (path.name, result.output)
        if result.exit_code != 0:
            assert path.name in result.output, (path.name, result.output)
    assert (store_state(store), snapshot(store / "indexes")) == before
    assert not (world["root"] / "g").exists() and not (world["root"] / "a").exists()


def test_bad_run_directory_for_eval_biogen_b(world: dict[str, Path]) -> None:
    run = world["root"] / "badrun"
    run.mkdir()
    (run / "answers.jsonl").write_text('{"topic_id": "t1", "sentences": [{"text": "x"}]}\n')
    result = invoke("eval", "biogen-b", "--run", str(run), "--stance", "none")
    assert_clean_error(result, "answers.jsonl", "line 1")
    (run / "answers.jsonl").write_text("{bad\n")
    assert_clean_error(invoke("eval", "biogen-b", "--run", str(run)), "answers.jsonl", "line 1")
