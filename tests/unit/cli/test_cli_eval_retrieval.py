"""`medcite eval retrieval --missing zero|skip`, run in-process on a tiny BioASQ golden file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"
GOLD = {
    "questions": [
        {"id": "qa", "type": "list", "body": "a?", "documents": [URL + "11", URL + "12"]},
        {"id": "qb", "type": "yesno", "body": "b?", "documents": [URL + "21"]},
        {"id": "qc", "type": "factoid", "body": "c?", "documents": [URL + "31"]},
    ]
}
# qa: 11 at rank 1, 12 at rank 3 -> AP (1 + 2/3) / 2 = 5/6; qb: nothing relevant -> AP 0; qc: not in the run
RUN = "qa Q0 11 1 3.0 t\nqa Q0 99 2 2.0 t\nqa Q0 12 3 1.0 t\nqb Q0 98 1 1.0 t\n"
EPS = 0.00001


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    gold = tmp_path / "golden.json"
    gold.write_text(json.dumps(GOLD))
    run = tmp_path / "run.trec"
    run.write_text(RUN)
    return run, gold


def _eval(run: Path, gold: Path, out: Path, *extra: str) -> tuple[str, dict]:
    args = ["eval", "retrieval", "--run", str(run), "--gold", str(gold), "--metrics", "MAP@10,GMAP@10"]
    result = CliRunner().invoke(cli, [*args, "--json", str(out), *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.read_text())


def test_default_scores_missing_questions_zero(files: tuple[Path, Path], tmp_path: Path) -> None:
    out, data = _eval(*files, tmp_path / "zero.json")
    assert "3 (1 missing from the run, scored 0: --missing zero, as trec_eval -c)" in out
    assert "missing  qc" in out
    assert data["missing_policy"] == "zero" and data["missing_from_run"] == ["qc"]
    assert data["queries"] == 3 and data["gold_queries"] == 3
    # MAP = (5/6 + 0 + 0) / 3; GMAP = ((5/6 + 1e-5) * 1e-5 * 1e-5) ** (1/3)
    assert data["aggregate"]["MAP@10"] == pytest.approx(5 / 18)
    assert data["aggregate"]["GMAP@10"] == pytest.approx(((5 / 6 + EPS) * EPS * EPS) ** (1 / 3))
    assert "MAP@10   0.2778" in out and "GMAP@10  0.0004" in out


def test_skip_is_the_official_bioasq_convention(files: tuple[Path, Path], tmp_path: Path) -> None:
    out, data = _eval(*files, tmp_path / "skip.json", "--missing", "skip")
    assert "2 of 3 (1 missing from the run, left out: --missing skip, as BioASQ's official evaluator)" in out
    assert "missing  qc" in out
    assert data["missing_policy"] == "skip" and data["missing_from_run"] == ["qc"]
    assert data["queries"] == 2 and data["gold_queries"] == 3 and "qc" not in data["per_query"]
    # MAP = (5/6 + 0) / 2; GMAP = ((5/6 + 1e-5) * 1e-5) ** (1/2) = 0.0028868
    assert data["aggregate"]["MAP@10"] == pytest.approx(5 / 12)
    assert data["aggregate"]["GMAP@10"] == pytest.approx(((5 / 6 + EPS) * EPS) ** 0.5)
    assert "MAP@10   0.4167" in out and "GMAP@10  0.0029" in out


def test_unknown_convention_is_a_usage_error(files: tuple[Path, Path]) -> None:
    run, gold = files
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--run", str(run), "--gold", str(gold), "--missing", "all"])
    assert result.exit_code == 2 and "'zero'" in result.output and "'skip'" in result.output
