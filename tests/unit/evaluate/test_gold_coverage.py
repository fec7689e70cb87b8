"""`medcite eval --corpus`: how much of the gold standard the store holds, and the warning (issue 16, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.evaluate.coverage import gold_coverage
from medcite.types import Article
from stores import store_of


def test_counts_by_hand() -> None:
    qrels = {"q1": {"1": 1, "2": 1, "9": 0}, "q2": {"3": 1}, "q3": {"4": 1, "1": 1}, "q4": {"8": 0}}
    cov = gold_coverage(qrels, lambda pmids: {p for p in pmids if p in {"1", "9"}})
    # relevant: 1, 2, 3, 4 (9 and 8 are judged not relevant); found: 1; q2 has none of its own; q4 has no relevant
    assert (cov.documents, cov.found, cov.questions, cov.none_found) == (4, 1, 3, 1)
    assert cov.missing_share == 0.75
    assert "75.0% of the gold documents are not in S" in (cov.warning("S") or "")
    full = gold_coverage(qrels, lambda pmids: set(pmids))
    assert full.missing_share == 0 and full.warning("S") is None


def _store(path: Path) -> Path:
    return store_of(path, [Article("1", "Statins", "Statins lower LDL."), Article("2", "Aspirin", "Aspirin.")])


def test_eval_retrieval_warns_when_gold_is_missing(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 1 1 2.0 x\nq1 Q0 2 2 1.0 x\nq2 Q0 1 1 1.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 1 1\nq1 0 2 1\nq2 0 5 1\nq2 0 6 1\n")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--run", str(run), "--gold", str(qrels),
                                      "--corpus", str(store), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "gold in corpus: 2 of 4 gold documents are in the corpus (50.0% missing); 1 of 2 questions" in result.output
    assert "warning: 50.0% of the gold documents are not in" in result.output
    report = json.loads(out.read_text())
    assert report["gold_coverage"]["found"] == 2 and report["gold_coverage"]["missing_share"] == 0.5
    quiet = CliRunner().invoke(cli, ["eval", "retrieval", "--run", str(run), "--gold", str(qrels)])
    assert quiet.exit_code == 0 and "gold in corpus" not in quiet.output


def test_eval_retrieval_no_warning_when_all_gold_is_there(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 1 1 2.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 1 1\nq1 0 2 1\n")
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--run", str(run), "--gold", str(qrels),
                                      "--corpus", str(store)])
    assert result.exit_code == 0, result.output
    assert "(0.0% missing)" in result.output and "warning" not in result.output
