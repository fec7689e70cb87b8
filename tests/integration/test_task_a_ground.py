"""`medcite ground` end to end on a tiny store: Task A submission, validation, resume, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.tasks.biogen_a_format import read_task_a_run
from medcite.types import Article
from stores import store_of

DOCS = [
    Article("11", "Statins and LDL", "Statins lowered LDL cholesterol in adults."),
    Article("12", "Statins again", "Statins lowered LDL cholesterol in older adults."),
    Article("13", "No effect of statins", "Statins never lowered LDL cholesterol in this trial."),
    Article("14", "Vitamin D", "Vitamin D supplementation prevented fractures in women."),
    *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(20)],
]
INPUT = [
    {"meta_data": {"qa_id": "116", "question": "Do statins lower LDL?"},
     "answer": [{"text": "Statins lowered LDL cholesterol.", "existing_supported_citations": [11]},
                {"text": "Vitamin D supplementation prevented fractures.", "existing_supported_citations": None}]},
    {"meta_data": {"qa_id": "117", "question": "Zebrafish?"},
     "answer": [{"text": "Nothing in this corpus says this.", "existing_supported_citations": []}]},
]
SETS = ["--set", "stance.backend=words", "--set", "indexes.dense.encoder.backend=hash-bow",
        # the mechanism, not offline-grounding's tuned policy: every candidate judged, thresholds at 0.5
        "--set", "ground.anchor=0", "--set", "ground.candidates=20", "--set", "ground.min_contradict=0.5",
        "--set", "ground.max_contradicted=3"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("faiss")
    return store_of(tmp_path_factory.mktemp("task-a") / "store", DOCS)


def _ground(store: Path, input_path: Path, out: Path, *extra: str) -> object:
    return CliRunner().invoke(cli, ["-q", "ground", "--input", str(input_path), "--corpus", str(store),
                                    "--out", str(out), *SETS, *extra])


def test_ground_writes_a_valid_submission(store: Path, tmp_path: Path) -> None:
    src = tmp_path / "input.json"
    src.write_text(json.dumps(INPUT))
    result = _ground(store, src, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert "2 question-answer pairs grounded" in result.output and "valid" in result.output
    lines = [json.loads(x) for x in (tmp_path / "run" / "submission.jsonl").read_text().splitlines()]
    first = lines[0]
    assert first["metadata"] == {"team_id": "medcite", "run_id": "run", "qa_id": "116",
                                 "question": "Do statins lower LDL?"}
    s0, s1 = first["answer"]
    assert s0["text"] == "Statins lowered LDL cholesterol." and s0["existing_supported_citations"] == ["11"]
    assert s0["supported_citations"] == ["12"]  # 11 is already cited: never proposed again
    assert s0["contradicted_citations"] == ["13"]
    assert s1["supported_citations"] == ["14"] and s1["contradicted_citations"] == []
    assert lines[1]["answer"][0]["supported_citations"] == []  # nothing supports it: no weak citation
    assert json.loads((tmp_path / "run" / "validation.json").read_text())["ok"] is True
    rec = [json.loads(x) for x in (tmp_path / "run" / "verification.jsonl").read_text().splitlines()]
    assert rec[0]["grounding"][0]["verdicts"]["13"]["stance"] == "contradicts"
    # resumed: nothing is grounded again, the same file comes out
    again = _ground(store, src, tmp_path / "run")
    assert again.exit_code == 0 and read_task_a_run(tmp_path / "run" / "submission.jsonl") == read_task_a_run(
        tmp_path / "run" / "submission.jsonl")
    ints = _ground(store, src, tmp_path / "ints", "--pmid-type", "int")
    assert ints.exit_code == 0
    assert json.loads((tmp_path / "ints" / "submission.jsonl").read_text().splitlines()[0])["answer"][0][
        "existing_supported_citations"] == [11]


@pytest.mark.parametrize(("content", "message"), [
    ("[{", "not valid JSON"),
    (json.dumps([{"meta_data": {"qa_id": "1", "question": "q"}, "answer": [{"text": "  "}]}]), "answer[0]"),
    (json.dumps([{"meta_data": {"qa_id": "1", "question": "q"},
                  "answer": [{"text": "x", "existing_supported_citations": ["PMID1"]}]}]), "PMID"),
    (json.dumps([]), "empty"),
])
def test_bad_input_is_a_clear_error_and_writes_nothing(store: Path, tmp_path: Path, content: str,
                                                       message: str) -> None:
    src = tmp_path / "bad.json"
    src.write_text(content)
    result = _ground(store, src, tmp_path / "run")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert message in result.output
    assert not (tmp_path / "run").exists()


def test_an_unknown_preset_is_named(store: Path, tmp_path: Path) -> None:
    src = tmp_path / "input.json"
    src.write_text(json.dumps(INPUT))
    unknown = CliRunner().invoke(cli, ["ground", "--input", str(src), "--corpus", str(store), "--out",
                                       str(tmp_path / "r2"), "--preset", "nope"])
    assert unknown.exit_code == 1 and "unknown preset 'nope'" in unknown.output
    assert not (tmp_path / "r2").exists()


def test_a_task_a_run_opens_in_the_viewer(store: Path, tmp_path: Path) -> None:
    """Task A runs open like Task B runs: each sentence's citations carry their stance; the span that decided
    it is highlighted in the abstract."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from medcite.viewer.app import create_app

    src = tmp_path / "input.json"
    src.write_text(json.dumps(INPUT))
    assert _ground(store, src, tmp_path / "runs" / "task-a").exit_code == 0
    client = TestClient(create_app(tmp_path / "runs"), raise_server_exceptions=True)
    assert 'href="/run/task-a"' in client.get("/").text
    html = client.get("/run/task-a/topic/116").text
    assert "Statins lowered LDL cholesterol." in html
    assert "st-contradicts" in html and "st-supports" in html  # stance per citation
    assert "<mark" in html  # the deciding span highlighted in the abstract
