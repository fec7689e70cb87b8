"""Issue 44: `ask`, `run` and `search` print each source's study design; `--design` and `--humans` filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article, MeshHeading

QUESTION = "Does drug X lower blood pressure in hypertension?"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    def art(pmid: str, types: tuple[str, ...], tags: tuple[str, ...], text: str, year: int) -> Article:
        return Article(pmid, "Drug X and blood pressure", text, year=year, journal="BMJ",
                       publication_types=("Journal Article", *types), mesh=tuple(MeshHeading(t) for t in tags))

    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([art("101", ("Randomized Controlled Trial",), ("Humans",),
                       "Drug X lowered blood pressure in adults with hypertension.", 2019),
                   art("102", (), (), "Drug X lowered blood pressure in rats with hypertension; the rats were "
                       "treated for four weeks.", 2015),
                   art("103", (), (), "A 60-year-old man with hypertension took drug X and his blood pressure fell.",
                       2001)], FileStats("x"))
    return tmp_path / "store"


def test_ask_prints_the_design_beside_each_source(store: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--preset", "bm25",
                                      "--set", "evidence.backend=abstracts", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "PMID 101 · randomised controlled trial · 2019: Drug X and blood pressure (BMJ)" in result.output
    assert "PMID 102 · animal study (predicted, " in result.output  # predicted: it says so, and how sure
    assert "PMID 103 · case report or series (predicted, " in result.output
    as_json = CliRunner().invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--preset", "bm25", "--json",
                                       "--out", str(tmp_path / "r2")])
    designs = json.loads(as_json.stdout)["designs"]
    assert designs["101"]["design"]["source"] == "indexed"


def test_ask_and_search_filter_by_design_and_humans(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    only = runner.invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), QUESTION, "--design", "rct"])
    assert only.exit_code == 0, only.output
    assert [line.split()[1] for line in only.output.splitlines() if line.strip()] == ["101"]
    assert "[randomised controlled trial]" in only.output
    humans = runner.invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), QUESTION, "--humans"])
    assert sorted(line.split()[1] for line in humans.output.splitlines() if line.strip()) == ["101", "103"]
    asked = runner.invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--preset", "bm25", "--design",
                                "case-report,meta-analysis", "--out", str(tmp_path / "r")])
    assert asked.exit_code == 0, asked.output
    assert "PMID 103" in asked.output and "PMID 101" not in asked.output


def test_an_unknown_design_is_refused_with_the_choices(store: Path) -> None:
    result = CliRunner().invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), QUESTION,
                                      "--design", "rct,rtc"])
    assert result.exit_code == 2
    assert "unknown study design 'rtc'" in result.output and "case-report" in result.output


def test_run_prints_every_topics_sources_with_their_design(store: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"1\t{QUESTION}\n")
    result = CliRunner().invoke(cli, ["run", "--topics", str(topics), "--corpus", str(store), "--out",
                                      str(tmp_path / "run"), "--preset", "bm25", "--set", "evidence.backend=abstracts"])
    assert result.exit_code == 0, result.output
    assert "Topic 1: 3 source(s)" in result.output
    assert "PMID 101 · randomised controlled trial · 2019" in result.output


def test_a_task_b_submission_with_the_caveat_line_stays_valid(tmp_path: Path) -> None:
    """The caveat line of medcite's presets is one more response of the BioGen 2025 file, citing nothing; the
    submission validates (the format allows an uncited sentence, and the 250-word cap holds)."""
    with DocumentStore.create(tmp_path / "s") as s, s.transaction() as tx:
        tx.upsert([Article("301", "Drug Y in mice", "Drug Y reversed liver fibrosis in mice.", year=2020,
                           publication_types=("Journal Article",), mesh=(MeshHeading("Animals"),))], FileStats("x"))
    topics = tmp_path / "topics.tsv"
    topics.write_text("7\tDoes drug Y reverse liver fibrosis?\n")
    result = CliRunner().invoke(cli, ["run", "--topics", str(topics), "--corpus", str(tmp_path / "s"), "--out",
                                      str(tmp_path / "run"), "--preset", "bm25", "--set", "evidence.backend=abstracts"])
    assert result.exit_code == 0, result.output
    assert ": valid" in result.output
    line = json.loads((tmp_path / "run" / "submission.jsonl").read_text().splitlines()[0])
    assert line["responses"][-1] == {"text": "Caution: sentence 1 rests only on animal studies.", "citations": []}
    assert set(line) == {"metadata", "responses"}  # nothing of medcite's own beside the format's keys


def test_bioasq_phase_a_records_designs_but_submits_its_format_only(store: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDCITE_RUNS_DIR", str(tmp_path / "runs"))
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"questions": [{"id": "q1", "type": "summary", "body": QUESTION,
                                                    "documents": [], "snippets": []}]}))
    result = CliRunner().invoke(cli, ["bioasq", "phase-a", "--questions", str(questions), "--corpus", str(store),
                                      "--preset", "bm25", "--output", str(tmp_path / "a.json")])
    assert result.exit_code == 0, result.output
    assert set(json.loads((tmp_path / "a.json").read_text())["questions"][0]) == {"id", "documents", "snippets"}
    (run,) = (tmp_path / "runs").iterdir()
    rows = [json.loads(x) for x in (run / "articles.jsonl").read_text().splitlines()]
    assert rows and all(r["design"]["design"]["label"] for r in rows)
