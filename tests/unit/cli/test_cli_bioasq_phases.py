"""`medcite bioasq phase-a | phase-aplus | phase-b` in-process on a tiny store: submissions valid, offsets exact,
a run directory with the resolved settings, resumable; bad input names the question and leaves no file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.pipeline.context import Context
from medcite.qa.llm_qa import LLMQA
from medcite.tasks import bioasq_task
from medcite.tasks.base import RunContext
from medcite.tasks.bioasq_format import read_phase_a_run, read_phase_b_run, validate_phase_a, validate_phase_b
from medcite.types import Article, QAAnswer, Question, Snippet
from stores import store_of

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"
ARTICLES = [
    Article("101", "Olaparib in BRCA1-mutated ovarian cancer",
            "Olaparib is a PARP inhibitor. Olaparib prolonged progression-free survival in BRCA1-mutated ovarian "
            "cancer. Anaemia was the most common adverse event."),
    Article("102", "PARP inhibitors",
            "PARP inhibitors such as olaparib and niraparib target homologous recombination deficiency. "
            "They are approved for maintenance therapy."),
    Article("103", "Statins and LDL cholesterol",
            "Statins lowered LDL cholesterol by 30% in adults. Muscle pain was reported by 10% of users."),
    *[Article(str(200 + i), f"Unrelated study {i}", f"Zebrafish fin {i} regeneration was imaged over ten days.")
      for i in range(12)],
]
QUESTIONS = [
    {"id": "q1", "type": "yesno", "body": "Does olaparib prolong survival in BRCA1-mutated ovarian cancer?"},
    {"id": "q2", "type": "list", "body": "Which PARP inhibitors target homologous recombination deficiency?"},
    {"id": "q3", "type": "summary", "body": "What do statins do to LDL cholesterol?"},
]


def _gold_snippet(pmid: str, text: str, section: str = "abstract") -> dict[str, Any]:
    art = next(a for a in ARTICLES if a.pmid == pmid)
    source = art.title if section == "title" else art.abstract
    start = source.index(text)
    return {"document": URL + pmid, "text": text, "beginSection": section, "offsetInBeginSection": start,
            "endSection": section, "offsetInEndSection": start + len(text)}


PHASE_B = [
    {**QUESTIONS[0], "documents": [URL + "101"], "snippets": [_gold_snippet(
        "101", "Olaparib prolonged progression-free survival in BRCA1-mutated ovarian cancer.")]},
    {**QUESTIONS[1], "documents": [URL + "102"], "snippets": [_gold_snippet(
        "102", "PARP inhibitors such as olaparib and niraparib target homologous recombination deficiency.")]},
    {**QUESTIONS[2], "documents": [URL + "103"], "snippets": [_gold_snippet(
        "103", "Statins lowered LDL cholesterol by 30% in adults.")]},
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("bioasq") / "store", ARTICLES)


def _write(path: Path, questions: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"questions": questions}), encoding="utf-8")
    return path


class Echo:
    """A stand-in answerer: 'yes', the snippets' PMIDs as entities, the first snippet as the ideal answer; it
    records what it was shown."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: dict[str, list[Snippet]] = {}

    def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        self.seen[question.id] = list(snippets)
        exact: Any = {"yesno": "yes", "summary": None}.get(question.type, tuple(s.pmid for s in snippets[:3]))
        return QAAnswer(question.id, exact, snippets[0].text if snippets else "No evidence.")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["-q", "bioasq", *args])


def test_phase_a_writes_a_valid_submission_with_exact_offsets(store: Path, tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.json", QUESTIONS)
    out, run = tmp_path / "sub" / "phase_a.json", tmp_path / "run-a"
    result = _invoke("phase-a", "--questions", str(questions), "--corpus", str(store), "--preset", "bm25",
                     "--set", "bioasq.scorer=tfidf", "--output", str(out), "--run-dir", str(run))
    assert result.exit_code == 0, result.output
    assert validate_phase_a(out, inputs=[Question(q["id"], q["type"], q["body"]) for q in QUESTIONS]).ok
    data = json.loads(out.read_text(encoding="utf-8"))
    q1 = data["questions"][0]
    assert q1["documents"][0] == URL + "101" and len(q1["documents"]) <= 10 and len(q1["snippets"]) <= 10
    arts = {a.pmid: a for a in ARTICLES}
    for q in data["questions"]:
        for s in q["snippets"]:
            art = arts[s["document"].rsplit("/", 1)[1]]
            section = art.title if s["beginSection"] == "title" else art.abstract
            assert section[s["offsetInBeginSection"]: s["offsetInEndSection"]] == s["text"]
    assert any("prolonged progression-free survival" in s["text"] for s in q1["snippets"][:2])
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["settings"]["bioasq"]["scorer"] == "tfidf" and config["task"] == "bioasq-a"
    assert config["settings_hash"] == load_settings("bm25", ["bioasq.scorer=tfidf"]).hash()
    assert len((run / "answers.jsonl").read_text().splitlines()) == 3
    assert (run / "documents.trec").exists() and json.loads((run / "validation.json").read_text())["ok"]
    assert (run / "submission.json").read_text() == out.read_text()


def test_phase_a_resumes_a_run_directory_and_gives_the_same_file(store: Path, tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.json", QUESTIONS)
    run = tmp_path / "run"
    args = ["--questions", str(questions), "--corpus", str(store), "--preset", "bm25", "--set",
            "bioasq.scorer=tfidf", "--run-dir", str(run)]
    assert _invoke("phase-a", *args, "--output", str(tmp_path / "a.json")).exit_code == 0
    lines = (run / "answers.jsonl").read_text().splitlines()
    (run / "answers.jsonl").write_text("\n".join(lines[:1]) + "\n")  # as if it stopped after one question
    assert _invoke("phase-a", *args, "--output", str(tmp_path / "b.json")).exit_code == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


@pytest.mark.parametrize("bad, message", [
    ({"id": "q9", "type": "yesno"}, "q9.*no 'body'"),
    ({"id": "q9", "type": "opinion", "body": "Why?"}, "q9.*unknown type"),
    ({"id": "q9", "type": "yesno", "body": "Why?", "snippets": [{"text": "x", "beginSection": "abstract",
                                                                  "offsetInBeginSection": 0, "endSection": "abstract",
                                                                  "offsetInEndSection": 1}]}, "q9.*document"),
])
def test_bad_input_names_the_question_and_leaves_no_file(store: Path, tmp_path: Path, bad: dict[str, Any],
                                                         message: str) -> None:
    import re

    questions = _write(tmp_path / "q.json", [QUESTIONS[0], bad])
    for phase, extra in (("phase-a", ["--corpus", str(store)]), ("phase-aplus", ["--corpus", str(store)]),
                         ("phase-b", [])):
        out = tmp_path / f"{phase}.json"
        result = _invoke(phase, "--questions", str(questions), *extra, "--output", str(out), "--run-dir",
                         str(tmp_path / f"run-{phase}"))
        assert result.exit_code == 1, (phase, result.output)
        assert re.search(message, result.output, re.S), result.output
        assert not out.exists() and not (tmp_path / f"run-{phase}").exists()
    empty = _write(tmp_path / "empty.json", [])
    result = _invoke("phase-b", "--questions", str(empty), "--output", str(tmp_path / "e.json"))
    assert result.exit_code == 1 and "empty" in result.output and not (tmp_path / "e.json").exists()


def test_phase_b_answers_from_the_gold_snippets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    echo = Echo()
    monkeypatch.setattr(bioasq_task, "build_answerer", lambda settings, ctx, **_: echo)
    questions = _write(tmp_path / "b.json", PHASE_B)
    out = tmp_path / "phase_b.json"
    result = _invoke("phase-b", "--questions", str(questions), "--output", str(out), "--run-dir",
                     str(tmp_path / "run-b"))
    assert result.exit_code == 0, result.output
    assert [s.text for s in echo.seen["q2"]] == [PHASE_B[1]["snippets"][0]["text"]]
    data = {q["id"]: q for q in json.loads(out.read_text())["questions"]}
    assert data["q1"]["exact_answer"] == "yes" and data["q2"]["exact_answer"] == [["102"]]
    assert "exact_answer" not in data["q3"] and data["q3"]["ideal_answer"].startswith("Statins lowered")
    assert validate_phase_b(out, inputs=questions).ok
    assert [a.question_id for a in read_phase_b_run(out)] == ["q1", "q2", "q3"]


def test_phase_aplus_answers_from_its_own_snippets(store: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    echo = Echo()
    monkeypatch.setattr(bioasq_task, "build_answerer", lambda settings, ctx, **_: echo)
    questions = _write(tmp_path / "q.json", QUESTIONS)
    out = tmp_path / "aplus.json"
    result = _invoke("phase-aplus", "--questions", str(questions), "--corpus", str(store), "--preset", "bm25",
                     "--set", "bioasq.scorer=tfidf", "--output", str(out), "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    retrieved = {q.id: q for q in read_phase_a_run(out)}
    answers = {a.question_id: a for a in read_phase_b_run(out)}
    for qid, shown in echo.seen.items():
        assert [s.text for s in shown] == [s.text for s in retrieved[qid].snippets]  # its own snippets, in order
    assert answers["q1"].exact == "yes" and answers["q1"].ideal == retrieved["q1"].snippets[0].text
    assert validate_phase_b(out, inputs=questions).ok


def test_an_answerer_error_leaves_no_submission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(Echo):
        def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
            if question.id == "q2":
                raise RuntimeError("the model fell over")
            return super().answer(question, snippets)

    monkeypatch.setattr(bioasq_task, "build_answerer", lambda settings, ctx, **_: Broken())
    out = tmp_path / "b.json"
    result = _invoke("phase-b", "--questions", str(_write(tmp_path / "q.json", PHASE_B)), "--output", str(out),
                     "--run-dir", str(tmp_path / "run"))
    assert isinstance(result.exception, RuntimeError) and not out.exists()
    assert len((tmp_path / "run" / "answers.jsonl").read_text().splitlines()) == 1  # q1 kept for a resume


def test_phase_b_with_the_llm_answerer_built_from_its_config(tmp_path: Path) -> None:
    """The LLM qa backend (DS@GT style 1, zero-shot) behind the Phase B task, on the `replies` fake LLM."""
    replies = ['{"exact_answer": "yes", "ideal_answer": "Yes, olaparib prolonged survival."}',
               '<JSON>{"exact_answer": ["olaparib", "niraparib"], "ideal_answer": "Olaparib and niraparib."}</JSON>',
               '```json\n{"ideal_answer": "Statins lower LDL cholesterol."}\n```']
    settings = load_settings("offline", ["llm=" + json.dumps({"backend": "replies", "replies": replies})])
    ctx = Context(settings)
    try:
        qa = LLMQA.from_config(LLMQA.Config(shots=0), ctx)
        questions = bioasq_task.PhaseB().read(_write(tmp_path / "b.json", PHASE_B))
        result = bioasq_task.PhaseB(qa).run(questions, RunContext(ctx, tmp_path / "run", output=tmp_path / "b.out"))
    finally:
        ctx.close()
    assert result.ok
    data = {q["id"]: q for q in json.loads((tmp_path / "b.out").read_text())["questions"]}
    assert data["q1"] == {"id": "q1", "ideal_answer": "Yes, olaparib prolonged survival.", "exact_answer": "yes"}
    assert data["q2"]["exact_answer"] == [["olaparib"], ["niraparib"]]
    assert data["q3"]["ideal_answer"] == "Statins lower LDL cholesterol." and "exact_answer" not in data["q3"]


def test_the_answerer_comes_from_settings_qa_through_the_registry(tmp_path: Path) -> None:
    replies = ['{"exact_answer": "no", "ideal_answer": "No."}']
    settings = load_settings("offline", ["llm=" + json.dumps({"backend": "replies", "replies": replies}),
                                         "qa.backend=llm", "qa.shots=0"])
    ctx = Context(settings)
    try:
        answerer = bioasq_task.build_answerer(settings, ctx)
        assert isinstance(answerer, LLMQA)
        result = bioasq_task.PhaseB().run(bioasq_task.PhaseB.read(_write(tmp_path / "b.json", PHASE_B[:1])),
                                            RunContext(ctx, tmp_path / "run", output=tmp_path / "out.json"))
    finally:
        ctx.close()
    assert json.loads((tmp_path / "out.json").read_text())["questions"][0]["exact_answer"] == "no" and result.ok


def test_offline_applies_the_presets_documented_swaps_before_the_users_set_values() -> None:
    from medcite.workflows.tasks import settings_for

    s = settings_for("dsgt-ensemble", ("bioasq.snippets=5",), offline=True, no_llm=False)
    from medcite.presets.offline import is_local_model

    # the cascade keeps its two stages and budgets, each model swapped for a stand-in that is here
    assert s.rerank.backend == "cascade" and [st.k for st in s.rerank.stages] == [30, 10]
    assert all(is_local_model(m) for m in s.rerank.model_names())
    assert s.bioasq.encoder.model_names() == [] and s.bioasq.snippets == 5
    assert s.llm.backend == "local"
    assert settings_for("dsgt-ensemble", (), offline=False, no_llm=True).llm.backend == "none"
    assert settings_for("dsgt-ensemble", (), offline=False, no_llm=False).rerank.backend == "cascade"


@pytest.mark.parametrize("preset", ["pjs-ensemble", "dsgt-ensemble"])
def test_each_bioasq_preset_runs_phase_a_offline(store: Path, tmp_path: Path, preset: str) -> None:
    questions = _write(tmp_path / "q.json", QUESTIONS[:2])
    out = tmp_path / "a.json"
    result = _invoke("phase-a", "--questions", str(questions), "--corpus", str(store), "--preset", preset,
                     "--offline", "--set", "llm.backend=rules",  # the rule-based LLM keeps the listwise stage fast
                     "--output", str(out), "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())["questions"]
    assert URL + "101" in data[0]["documents"] and URL + "102" in data[1]["documents"]
    # the rerank stages run offline (stand-ins keep their budgets): PJs' union of top 5s submits 5 documents here
    assert all(1 <= len(q["documents"]) <= 10 and 2 <= len(q["snippets"]) <= 10 for q in data)
    resolved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert resolved["settings"]["rerank"]["backend"] != "none"


def test_snippets_may_come_from_more_documents_than_are_submitted(store: Path, tmp_path: Path) -> None:
    questions = _write(tmp_path / "q.json", QUESTIONS[1:2])
    out = tmp_path / "a.json"
    result = _invoke("phase-a", "--questions", str(questions), "--corpus", str(store), "--preset", "bm25",
                     "--set", "bioasq.scorer=tfidf", "--set", "bioasq.documents=1", "--set",
                     "bioasq.snippet_documents=3", "--set", "bioasq.per_document=1", "--output", str(out),
                     "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    q = json.loads(out.read_text())["questions"][0]
    assert q["documents"] == [URL + "102"]
    # BM25 finds two documents for this question: both give a snippet, though only the first is submitted
    assert {s["document"] for s in q["snippets"]} == {URL + "101", URL + "102"} and len(q["snippets"]) == 2


def test_a_preset_whose_models_are_not_here_fails_cleanly_and_names_the_offline_swaps(store: Path,
                                                                                    tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    result = _invoke("phase-a", "--questions", str(_write(tmp_path / "q.json", QUESTIONS[:1])), "--corpus",
                     str(store), "--preset", "dsgt-ensemble", "--output", str(out), "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 1 and "indexes.dense.encoder.model=minilm" in result.output, result.output
    assert not out.exists() and not (tmp_path / "r").exists()
