"""Issue 16 item 5: `ask` says which generator answered and why an LLM answer was discarded; two asks in the
same second get two run directories; `search --preset bm25` prints BM25 scores, not RRF scores."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import medcite.rundir
from medcite.cli.main import cli
from medcite.cli.render import echo_result
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.generate.llm_generator import FALLBACK
from medcite.pipeline import RetrievalPipeline, TopicResult
from medcite.rundir import new_run_dir
from medcite.types import Answer, AnswerSentence, Article, Dropped, Topic

QUESTION = "Do statins lower LDL cholesterol?"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([
            Article(
                str(i), f"Statin trial {i}", f"Statins lowered LDL cholesterol by {10 + i} percent in {i} adults.")
            for i in range(1, 6)
        ], FileStats("x"))
    return tmp_path / "store"


def test_new_run_dirs_never_collide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(medcite.rundir, "new_run_id", lambda prefix="run": f"{prefix}-20260101-000000")
    first, second = new_run_dir(tmp_path, "ask"), new_run_dir(tmp_path, "ask")
    assert first != second and first.is_dir() and second.is_dir()


def test_two_asks_in_the_same_second_get_two_run_directories(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDCITE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setattr(medcite.rundir, "new_run_id", lambda prefix="run": f"{prefix}-20260101-000000")
    runner = CliRunner()
    outs = []
    for _ in range(2):
        result = runner.invoke(cli, ["ask", QUESTION, "--corpus", str(store)])
        assert result.exit_code == 0, result.output
        outs.append(re.search(r"run directory: (\S+)", result.output).group(1))  # type: ignore[union-attr]
    assert outs[0] != outs[1]
    assert all(Path(o).parent == tmp_path / "runs" and (Path(o) / "config.json").is_file() for o in outs)


def test_a_failed_start_leaves_no_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDCITE_RUNS_DIR", str(tmp_path / "runs"))
    DocumentStore.create(tmp_path / "empty").close()
    result = CliRunner().invoke(cli, ["ask", QUESTION, "--corpus", str(tmp_path / "empty")])
    assert result.exit_code != 0
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_ask_names_the_generator(store: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "Answer by: extractive" in result.output


def test_a_discarded_llm_answer_is_reported_with_its_reason_and_replacement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    why = "LLM answer still invalid after 3 attempt(s) (sentence 2 cites no evidence): extractive answer used"
    answer = Answer("q1", [AnswerSentence("Statins lower LDL.", ("1",))],
                    [Dropped("answer", "Statins are great.", why), Dropped("sentence", "x", "uncited")], FALLBACK)
    echo_result(TopicResult(Topic("q1", QUESTION), [], {}, [], answer, {}))
    out = capsys.readouterr().out
    assert "Answer by: extractive fallback" in out and "the LLM answer was discarded" in out
    assert why in out
    assert "uncited" not in out  # sentence-level notes are not answer provenance


def test_search_preset_bm25_prints_bm25_scores(store: Path) -> None:
    result = CliRunner().invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), "-k", "3", QUESTION])
    assert result.exit_code == 0, result.output
    printed = [(line.split()[1], float(line.split()[2])) for line in result.output.splitlines() if line.strip()]
    pipe = RetrievalPipeline.from_settings(load_settings("bm25"), store)
    try:
        bm25 = pipe.retrievers["bm25"].search_many([QUESTION], 3)[0]
    finally:
        pipe.close()
    assert printed == [(h.pmid, pytest.approx(h.score, abs=1e-3)) for h in bm25]
    assert printed[0][1] != pytest.approx(1 / 61, abs=1e-3)  # not the RRF score of rank 1
