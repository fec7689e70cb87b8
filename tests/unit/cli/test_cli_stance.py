"""`medcite stance` on a CSV: one JSON line per row with label, scores and span; clear errors naming the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli


def _csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_stance_classifies_every_row(tmp_path: Path) -> None:
    src = _csv(tmp_path / "pairs.csv", "id,claim,evidence,label\n"
               "a,Masks reduced transmission.,Masks reduced transmission in schools. Other text.,Supports\n"
               "b,Masks reduced transmission.,Masks never reduced transmission in schools.,Refutes\n"
               "c,Masks reduced transmission.,Zebrafish fins regenerate.,Neutral\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["stance", "--model", "words", "--input", str(src), "--output", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["id"], r["label"]) for r in rows] == [("a", "supports"), ("b", "contradicts"), ("c", "neutral")]
    assert set(rows[0]["scores"]) == {"supports", "contradicts", "neutral"}
    evidence = "Masks reduced transmission in schools. Other text."
    start, end = rows[0]["span"]
    assert evidence[start:end] in (evidence, "Masks reduced transmission in schools.")


@pytest.mark.parametrize(("text", "message"), [
    ("id,claim\n1,x\n", "no column 'evidence'"),
    ("claim,evidence\nx,y\n,z\n", "row 3 has an empty claim"),
    ("claim,evidence\nx,  \n", "row 2 has an empty evidence"),
    ("claim,evidence\n", "no rows"),
])
def test_bad_rows_are_named(tmp_path: Path, text: str, message: str) -> None:
    src = _csv(tmp_path / "bad.csv", text)
    result = CliRunner().invoke(cli, ["stance", "--model", "words", "--input", str(src), "--output",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o.jsonl").exists()
