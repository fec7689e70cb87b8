"""Issue 22 #7: `ingest --on-error skip` says one line per reason, and lists every skipped record in a file."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.ingest import ingest
from medcite.corpus.store import DocumentStore

Write = Callable[..., Path]
NO_TEXT = 40


def mixed_lines() -> str:
    """2 good records, NO_TEXT records without title or abstract, one invalid JSON line, one unknown field."""
    rows = [json.dumps({"pmid": 1, "title": "Statins lower LDL"})]
    rows += [json.dumps({"pmid": 100 + i}) for i in range(NO_TEXT)]
    rows += ["{not json", json.dumps({"pmid": 2, "title": "Exercise raises HDL", "colour": "blue"})]
    return "\n".join(rows) + "\n"


def skipped_rows(store: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (store / "skipped.jsonl").read_text().splitlines()]


def test_one_summary_line_per_reason(tmp_path: Path, write: Write, caplog: pytest.LogCaptureFixture) -> None:
    path = write("mixed.jsonl", mixed_lines())
    with caplog.at_level(logging.DEBUG, logger="medcite"), DocumentStore.create(tmp_path / "store") as store:
        (stats,) = ingest([path], store, on_error="skip")
    assert (stats.added, stats.skipped, stats.warnings) == (2, NO_TEXT + 1, NO_TEXT + 2)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= 4, warnings  # no text, invalid JSON, unknown field, where the full list is
    (no_text,) = [w for w in warnings if "neither title nor abstract" in w]
    assert f"{NO_TEXT} records" in no_text and "mixed.jsonl line 2, PMID 100" in no_text
    assert "PMID 103" not in no_text  # a few examples, not all of them
    assert any("invalid JSON" in w and "line 42" in w for w in warnings), warnings
    assert any("'colour'" in w for w in warnings), warnings
    assert any(str(tmp_path / "store" / "skipped.jsonl") in w for w in warnings), warnings
    details = [r for r in caplog.records if r.levelno == logging.DEBUG and "neither title" in r.getMessage()]
    assert len(details) == NO_TEXT  # each record still at DEBUG


def test_every_skipped_record_is_listed_in_the_store_folder(tmp_path: Path, write: Write) -> None:
    first = write("a.jsonl", mixed_lines())
    second = write("b.jsonl", json.dumps({"pmid": 7}) + "\n" + json.dumps({"pmid": 8, "title": "ok"}) + "\n")
    with DocumentStore.create(tmp_path / "store") as store:
        ingest([first], store, on_error="skip")
    rows = skipped_rows(tmp_path / "store")
    assert len(rows) == NO_TEXT + 2
    assert rows[0]["file"] == str(first) and rows[0]["line"] == 2 and rows[0]["pmid"] == "100"
    assert rows[0]["reason"] == "record has neither title nor abstract text" and rows[0]["action"] == "skipped"
    assert rows[-1]["action"] == "field ignored" and rows[-1]["pmid"] == "2"
    with DocumentStore.create(tmp_path / "store") as store:  # the next ingest run appends
        ingest([second], store, on_error="skip")
    rows = skipped_rows(tmp_path / "store")
    assert len(rows) == NO_TEXT + 3 and rows[-1]["file"] == str(second) and rows[-1]["pmid"] == "7"


def test_a_stopped_ingest_lists_nothing(tmp_path: Path, write: Write) -> None:
    path = write("mixed.jsonl", mixed_lines())
    with DocumentStore.create(tmp_path / "store") as store:
        with pytest.raises(Exception, match="neither title nor abstract"):
            ingest([path], store)
    assert not (tmp_path / "store" / "skipped.jsonl").exists()


def test_the_cli_prints_a_summary_not_a_line_per_record(tmp_path: Path, write: Write) -> None:
    path = write("mixed.jsonl", mixed_lines())
    result = CliRunner().invoke(cli, ["ingest", str(path), "--store", str(tmp_path / "store"), "--on-error", "skip"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("WARNING")]
    assert 1 <= len(warnings) <= 4, result.output
    assert "skipped.jsonl" in result.output
