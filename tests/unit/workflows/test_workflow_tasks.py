"""workflows/tasks.py: a task read, built through the context by name, and run into a run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError, InputError
from medcite.rundir import read_answers
from medcite.tasks.biogen_b_validate import validate_biogen25
from medcite.workflows.tasks import read_inputs, run_task, settings_for, task_class

PHASE_B = [{"id": "q1", "type": "yesno", "body": "Do statins lower LDL?",
            "snippets": [{"document": "http://www.ncbi.nlm.nih.gov/pubmed/11", "text": "Statins lowered LDL.",
                          "beginSection": "abstract", "endSection": "abstract", "offsetInBeginSection": 0,
                          "offsetInEndSection": 20}]}]


def test_a_biogen_run_writes_a_valid_submission_with_the_tasks_settings(biogen_run: Path) -> None:
    rows = [json.loads(line) for line in (biogen_run / "submission.jsonl").read_text().splitlines()]
    assert [r["metadata"]["topic_id"] for r in rows] == ["1", "2"]
    assert {r["metadata"]["team_id"] for r in rows} == {"wf"} and {r["metadata"]["run_id"] for r in rows} == {"run"}
    assert validate_biogen25(biogen_run / "submission.jsonl", expected_topics=["1", "2"]).ok
    assert json.loads((biogen_run / "config.json").read_text())["command"] == "test"
    assert [a.topic_id for a in read_answers(biogen_run)] == ["1", "2"]


def test_a_task_that_retrieves_needs_a_corpus(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'biogen25' retrieves from a document store"):
        run_task("biogen25", load_settings("bm25"), [], corpus=None, out=tmp_path / "run", command="")
    assert not (tmp_path / "run").exists()


def test_phase_b_runs_on_a_bare_context_with_the_qa_stage_of_the_settings(tmp_path: Path) -> None:
    questions = tmp_path / "b.json"
    questions.write_text(json.dumps({"questions": PHASE_B}))
    replies = ['{"exact_answer": "yes", "ideal_answer": "Yes, they do."}']
    settings = load_settings("offline", ["llm=" + json.dumps({"backend": "replies", "replies": replies}),
                                         "qa.backend=llm", "qa.shots=0"])
    result = run_task("bioasq-b", settings, read_inputs("bioasq-b", questions), corpus=None, out=tmp_path / "run",
                      command="c", output=tmp_path / "out.json")
    assert result.ok and result.topics == 1 and result.run_dir == tmp_path / "run"
    assert result.submission == tmp_path / "out.json"
    assert json.loads(result.submission.read_text())["questions"][0]["exact_answer"] == "yes"
    assert (tmp_path / "run" / "submission.json").read_text() == result.submission.read_text()


def test_inputs_are_read_by_the_tasks_reader_before_anything_is_built(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"questions": [{"id": "q1", "type": "riddle", "body": "?"}]}))
    with pytest.raises(InputError):
        read_inputs("bioasq-b", bad)
    assert task_class("biogen-a").grounding and not task_class("bioasq-b").corpus


def test_offline_swaps_come_before_the_users_values() -> None:
    s = settings_for("dsgt-ensemble", ("bioasq.snippets=5",), offline=True, no_llm=False)
    assert s.llm.backend == "local" and s.bioasq.snippets == 5
    assert settings_for("dsgt-ensemble", (), offline=False, no_llm=True).llm.backend == "none"


def test_ask_answers_into_a_new_run_directory_and_refuses_bad_targets(store: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite.workflows.ask import ask, check_out, check_question

    monkeypatch.setenv("MEDCITE_RUNS_DIR", str(tmp_path / "runs"))
    result, out = ask(load_settings("bm25"), store, "Do statins lower LDL cholesterol?", None)
    assert out.parent == tmp_path / "runs" and out.name.startswith("ask-")
    assert result.answer.topic_id == "q1" and [a.topic_id for a in read_answers(out)] == ["q1"]
    with pytest.raises(InputError, match="already holds a run"):
        check_out(out)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="existing file"):
        check_out(tmp_path / "file")
    with pytest.raises(InputError, match="the question is empty"):
        check_question("  ", store)
