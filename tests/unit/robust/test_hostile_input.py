"""Issue 22: every offline command on a fresh machine, fed values and files a hostile or careless user gives.

Each case ends in a clean ``error:`` line (or, with ``--on-error skip``, a counted skip), never a traceback,
and leaves what was already written as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from robust_helpers import BAD, assert_clean_error, corpus_lines, store_state

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["-q", *args])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store of 30 articles with its BM25 index built."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "c.jsonl").write_text(corpus_lines())
    assert invoke("ingest", str(root / "c.jsonl"), "--store", str(root / "store")).exit_code == 0
    assert invoke("search", "statins", "--corpus", str(root / "store")).exit_code == 0  # builds the index
    yield root / "store"


# -- 1: JSONL values Python's json module cannot hold ------------------------------------------------------
JSON_CANNOT_HOLD = [("corpus_huge_int.jsonl", {"1", "3"}, "line 2", "digits"),
                    ("corpus_lone_surrogate.jsonl", {"1", "4"}, "line 2", "lone surrogate")]


@pytest.mark.parametrize(("name", "kept", "line", "reason"), JSON_CANNOT_HOLD)
def test_values_json_cannot_hold_are_skipped_and_the_good_records_kept(
        tmp_path: Path, name: str, kept: set[str], line: str, reason: str) -> None:
    result = invoke("ingest", str(BAD / name), "--store", str(tmp_path / "s"), "--on-error", "skip")
    assert result.exit_code == 0 and result.exception is None, (result.output, repr(result.exception))
    with DocumentStore.open(tmp_path / "s") as s:
        assert {a.pmid for a in s.iter_articles()} == kept
        (recorded,) = s.files()
    assert (recorded["status"], recorded["added"], recorded["skipped"]) == ("done", 2, 1 if "int" in name else 2)


@pytest.mark.parametrize(("name", "kept", "line", "reason"), JSON_CANNOT_HOLD)
def test_values_json_cannot_hold_stop_the_ingest_naming_file_and_line(
        store: Path, name: str, kept: set[str], line: str, reason: str) -> None:
    before = store_state(store)
    assert_clean_error(invoke("ingest", str(BAD / name), "--store", str(store)), name, line, reason)
    assert store_state(store) == before
