"""`medcite validate` reports format validity and citation support apart; the gate keeps invented sentences
from carrying citations (issue 16, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.types import Article
from stores import store_of

DOCS = [
    Article("11", "Statins and LDL", "Statins lowered LDL cholesterol by 30% in adults after one year."),
    Article("14", "Vitamin D", "Vitamin D supplementation prevented fractures in older women."),
    *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(6)],
]
# sentence 1 paraphrases [1] closely; sentence 2 is invented but cites a real, retrieved abstract
REPLY = ("Statins lowered LDL cholesterol by about 30% in adults [1]. "
         "Statins also reverse Alzheimer's disease in children [1].")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("support") / "store", DOCS)


def _run(store: Path, out: Path, topics: Path, *extra: str) -> None:
    args = ["run", "--topics", str(topics), "--corpus", str(store), "--out", str(out), "--preset", "offline",
            "--set", "generate.backend=llm", "--set", "llm.backend=replies",
            "--set", f"llm.replies={json.dumps([REPLY])}", "--set", "evidence.docs=1", *extra]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


def test_gate_and_validate_lines(store: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"id": "1", "question": "Do statins lower LDL cholesterol?"}]}))
    # the published behaviour (no gate): the invented sentence keeps its real PMID; validate says so
    _run(store, tmp_path / "off", topics, "--set", "verify.gate=off")
    sub = tmp_path / "off" / "submission.jsonl"
    res = CliRunner().invoke(cli, ["validate", "biogen-b", str(sub), "--run-dir", str(tmp_path / "off")])
    assert res.exit_code == 0, res.output
    assert f"{sub}: format OK (1 topics)" in res.output
    assert "citation support: 1 of 2 citations pass the overlap" in res.output
    failures = json.loads(sub.with_name(sub.name + ".support.json").read_text())["failures"]
    assert [f["sentence"] for f in failures] == ["Statins also reverse Alzheimer's disease in children."]
    # the default gate: the invented sentence loses its citation and is dropped, with the reason recorded
    _run(store, tmp_path / "on", topics)
    answer = json.loads((tmp_path / "on" / "answers.jsonl").read_text())
    assert [s["text"] for s in answer["sentences"]] == ["Statins lowered LDL cholesterol by about 30% in adults."]
    assert any(d["what"] == "sentence" and "overlap gate" in d["reason"] for d in answer["dropped"])
    gate = json.loads((tmp_path / "on" / "verification.jsonl").read_text())["gate"]
    assert (gate["judge"], gate["checked"], gate["rejected"]) == ("overlap", 2, 1)
    sub = tmp_path / "on" / "submission.jsonl"
    res = CliRunner().invoke(cli, ["validate", "biogen-b", str(sub), "--run-dir", str(tmp_path / "on")])
    assert "citation support: 1 of 1 citations pass" in res.output and "(100.0%" in res.output
    res = CliRunner().invoke(cli, ["validate", "biogen-b", str(sub)])
    assert "citation support: not checked (give --run-dir DIR" in res.output


def test_an_answer_the_gate_empties_falls_back_to_the_extractive_one(store: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"id": "1", "question": "Do statins lower LDL cholesterol?"}]}))
    args = ["run", "--topics", str(topics), "--corpus", str(store), "--out", str(tmp_path / "run"), "--preset",
            "offline", "--set", "generate.backend=llm", "--set", "llm.backend=replies", "--set",
            "llm.replies=" + json.dumps(["Statins also reverse Alzheimer's disease in children [1]."]),
            "--set", "evidence.docs=1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output  # the submission validates: the answer is not empty
    answer = json.loads((tmp_path / "run" / "answers.jsonl").read_text())
    assert answer["generator"] == "llm+extractive-fallback" and answer["sentences"]
    assert any(d["what"] == "answer" and "gate left no supported sentence" in d["reason"] for d in answer["dropped"])
    gate = json.loads((tmp_path / "run" / "verification.jsonl").read_text())["gate"]
    assert gate["rejected"] == 1 and "extractive answer used" in gate["fallback"]
