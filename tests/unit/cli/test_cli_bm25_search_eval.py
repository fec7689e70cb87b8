"""`medcite index bm25`, `medcite search` and `medcite eval retrieval`, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article

DOCS = [
    Article("101", "Statins lower LDL cholesterol", "Statin therapy reduces cardiovascular events."),
    Article("102", "Aspirin and bleeding", "Daily aspirin increases the risk of gastrointestinal bleeding."),
    Article("103", "Sleep apnea treatment", "CPAP is the first-line therapy for obstructive sleep apnea."),
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = DocumentStore.create(tmp_path / "store")
    with s.transaction() as tx:
        tx.upsert(DOCS, FileStats("x"))
    s.close()
    return tmp_path / "store"


def _ok(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_index_search_eval(store: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    out = _ok(["index", "bm25", "--store", str(store), "--out", str(idx)])
    assert "built" in out and "added 3" in out and "3 documents" in out
    # update in place after a change in the store
    s = DocumentStore.open(store)
    with s.transaction() as tx:
        tx.upsert([Article("104", "Metformin", "Metformin for type 2 diabetes.")], FileStats("y"))
        tx.delete(["102"], FileStats("y"))
    s.close()
    out = _ok(["index", "bm25", "--store", str(store), "--out", str(idx)])
    assert "updated" in out and "added 1, replaced 0, deleted 1; 3 documents" in out

    out = _ok(["search", "--index", str(idx), "obstructive sleep apnea"])
    first = out.splitlines()[0].split()
    assert first[:2] == ["1", "103"] and "Sleep apnea treatment" in out

    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\tsleep apnea CPAP\nt2\tmetformin diabetes\nt3\tzebrafish\n")
    run = tmp_path / "run.trec"
    _ok(["search", "--index", str(idx), "--topics", str(topics), "--output", str(run), "-k", "2"])
    lines = run.read_text().splitlines()
    assert lines[0].split()[:4] == ["t1", "Q0", "103", "1"] and lines[0].endswith("medcite-tantivy")
    assert all(len(line.split()) == 6 for line in lines) and not any(line.startswith("t3") for line in lines)

    qrels = tmp_path / "qrels"
    qrels.write_text("t1 0 103 1\nt2 0 101 1\nt2 0 104 1\n")
    report = tmp_path / "m.json"
    out = _ok(
        [
            "eval",
            "retrieval",
            "--run",
            str(run),
            "--gold",
            str(qrels),
            "--metrics",
            "MAP@10,P@1,MRR",
            "--per-query",
            "--json",
            str(report),
        ]
    )
    # t1: 103 at rank 1 -> AP 1; t2: 104 at rank 1 of 2 relevant, 101 not found -> AP (1/1) / 2
    data = json.loads(report.read_text())
    assert data["aggregate"]["MAP@10"] == pytest.approx(0.75)
    assert data["aggregate"]["P@1"] == pytest.approx(1.0)
    assert data["per_query"]["t2"]["MAP@10"] == pytest.approx(0.5)
    assert "MAP@10  0.7500" in out and "t2\t0.5000" in out


def test_single_query_to_run_file_and_stdout_run(store: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    _ok(["index", "bm25", "--store", str(store), "--out", str(idx), "--backend", "bm25s", "--k1", "0.9", "--b", "0.4"])
    run = tmp_path / "one.trec"
    _ok(["search", "--index", str(idx), "aspirin bleeding", "--output", str(run), "--qid", "q7"])
    assert run.read_text().startswith("q7 Q0 102 1 ")
    topics = tmp_path / "t.json"
    topics.write_text(json.dumps([{"id": 181, "question": "statin cholesterol", "topic": "x", "narrative": "y"}]))
    out = _ok(["search", "--index", str(idx), "--topics", str(topics)])
    assert out.startswith("181 Q0 101 1 ") and "medcite-bm25s" in out


def test_clean_errors(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["index", "bm25", "--store", str(store), "--out", str(tmp_path / "i"), "--k1", "2"])
    assert result.exit_code == 1 and "tantivy" in result.output and "bm25s" in result.output
    result = runner.invoke(cli, ["search", "--index", str(tmp_path / "none"), "x"])
    assert result.exit_code == 1 and "no index at" in result.output
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 101 1 1.0 t\n1 Q0 102 2 oops t\n")
    (tmp_path / "q").write_text("1 0 101 1\n")
    result = runner.invoke(cli, ["eval", "retrieval", "--run", str(bad), "--gold", str(tmp_path / "q")])
    assert result.exit_code == 1 and f"{bad} (line 2)" in result.output and "not a number" in result.output
    topics = tmp_path / "t.json"
    topics.write_text('{"queries": []}')
    _ok(["index", "bm25", "--store", str(store), "--out", str(tmp_path / "i2")])
    result = runner.invoke(cli, ["search", "--index", str(tmp_path / "i2"), "--topics", str(topics)])
    assert result.exit_code == 1 and "unknown topics JSON shape" in result.output
    other = DocumentStore.create(tmp_path / "other")
    other.close()
    result = runner.invoke(cli, ["index", "bm25", "--store", str(tmp_path / "other"), "--out", str(tmp_path / "i2")])
    assert result.exit_code == 1 and "indexes document store" in result.output
