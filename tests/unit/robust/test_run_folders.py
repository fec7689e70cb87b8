"""Issue 42, item 5: one writer per run folder, and resuming drops the topics an older medcite wrote twice.

Two `medcite run` (or `bioasq phase-b`) into one folder wrote every topic twice and resuming never repaired it.
Now a second command is refused at once, naming the pid of the first, and a folder that already holds a topic
twice gets it answered again, once, with every per-topic file consistent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from robust_helpers import corpus_lines

from medcite.cli.main import cli
from medcite.types import QAAnswer, Question, Snippet

TOPICS = [{"id": f"t{i}", "question": q} for i, q in enumerate(
    ["Do statins lower LDL?", "Does exercise raise HDL?", "What treats scurvy?"], 1)]


PHASE_B = [{"id": f"q{i}", "type": "summary", "body": body, "documents": [f"http://www.ncbi.nlm.nih.gov/pubmed/{i}"],
            "snippets": [{"document": f"http://www.ncbi.nlm.nih.gov/pubmed/{i}", "text": text,
                          "beginSection": "abstract", "offsetInBeginSection": 0, "endSection": "abstract",
                          "offsetInEndSection": len(text)}]}
           for i, (body, text) in enumerate([("What do statins do?", "Statins lower LDL."),
                                             ("What does exercise do?", "Exercise raises HDL."),
                                             ("What treats scurvy?", "Vitamin C treats scurvy.")], 1)]


class Echo:
    """A stand-in answerer: the first snippet as the ideal answer; it records the questions it answered."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def answer(self, question: Question, snippets: list[Snippet]) -> QAAnswer:
        self.seen[question.id] = len(snippets)
        return QAAnswer(question.id, None, snippets[0].text)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    (folder / "c.jsonl").write_text(corpus_lines(30))
    result = CliRunner().invoke(cli, ["-q", "ingest", str(folder / "c.jsonl"), "--store", str(folder / "store")])
    assert result.exit_code == 0, result.output
    return folder / "store"


@pytest.fixture
def topics(tmp_path: Path) -> Path:
    path = tmp_path / "topics.json"
    path.write_text(json.dumps(TOPICS))
    return path


def _run(store: Path, topics: Path, out: Path) -> object:
    return CliRunner().invoke(cli, ["-q", "run", "--topics", str(topics), "--corpus", str(store), "--out", str(out),
                                    "--preset", "bm25"])


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """Another process holding the lock of the run folder ``tmp_path/run`` (as a running `medcite run` does)."""
    out = tmp_path / "run"
    out.mkdir()
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, f'{os.getpid()}\\n'.encode()); print('held', flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out / "run.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield out, proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_second_run_into_a_folder_in_use_is_refused_naming_the_holder(store: Path, topics: Path,
                                                                        held: tuple[Path, int]) -> None:
    out, pid = held
    start = time.perf_counter()
    result = _run(store, topics, out)
    assert result.exit_code == 1 and time.perf_counter() - start < 30
    assert f"run folder {out} is in use by another medcite (pid {pid})" in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in out.iterdir()) == ["run.lock"]  # nothing written


def test_a_second_phase_b_into_a_folder_in_use_is_refused(tmp_path: Path, held: tuple[Path, int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite.tasks import bioasq_task

    monkeypatch.setattr(bioasq_task, "build_answerer", lambda settings, ctx, **_: Echo())
    out, pid = held
    questions = tmp_path / "b.json"
    questions.write_text(json.dumps({"questions": PHASE_B}))
    result = CliRunner().invoke(cli, ["-q", "bioasq", "phase-b", "--questions", str(questions), "--run-dir", str(out),
                                      "--output", str(tmp_path / "sub.json")])
    assert result.exit_code == 1 and f"is in use by another medcite (pid {pid})" in result.output, result.output
    assert not (tmp_path / "sub.json").exists()


def _double(out: Path) -> None:
    """Every per-topic row written twice, as two commands writing into one folder left it."""
    for path in [*out.glob("*.jsonl"), *out.glob("*.trec")]:
        if not path.name.startswith("submission"):
            path.write_bytes(path.read_bytes() * 2)


def _topics_in(path: Path) -> Counter[str]:
    if path.suffix == ".trec":
        rows = {(line.split()[0], line.split()[2]) for line in path.read_text().splitlines()}
        lines = path.read_text().splitlines()
        assert len(rows) == len(lines), f"{path.name}: a document ranked twice for one topic"
        return Counter(tid for tid, _ in rows)
    return Counter(str(json.loads(line).get("topic_id", json.loads(line).get("id")))
                   for line in path.read_text().splitlines())


def test_resume_answers_again_the_topics_a_folder_holds_twice(store: Path, topics: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(store, topics, out).exit_code == 0
    once = {p.name: _topics_in(p) for p in [*out.glob("*.jsonl"), *out.glob("*.trec")]
            if not p.name.startswith(("submission", "trace"))}
    _double(out)
    result = _run(store, topics, out)
    assert result.exit_code == 0, result.output
    for name, counts in once.items():
        assert _topics_in(out / name) == counts, name  # every topic once again, in every file
    submission = [json.loads(line) for line in (out / "submission.jsonl").read_text().splitlines()]
    assert sorted(row["metadata"]["topic_id"] for row in submission) == ["t1", "t2", "t3"]
    assert json.loads((out / "validation.json").read_text())["ok"]
    assert _run(store, topics, out).exit_code == 0  # a third run finds everything done and changes nothing
    assert _topics_in(out / "answers.jsonl") == once["answers.jsonl"]


def test_resume_of_phase_b_answers_again_the_questions_a_folder_holds_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite.tasks import bioasq_task

    echo = Echo()
    monkeypatch.setattr(bioasq_task, "build_answerer", lambda settings, ctx, **_: echo)
    questions = tmp_path / "b.json"
    questions.write_text(json.dumps({"questions": PHASE_B}))
    out = tmp_path / "run"
    args = ["-q", "bioasq", "phase-b", "--questions", str(questions), "--run-dir", str(out), "--output",
            str(tmp_path / "sub.json")]
    assert CliRunner().invoke(cli, args).exit_code == 0
    _double(out)
    echo.seen.clear()
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert sorted(echo.seen) == ["q1", "q2", "q3"]  # answered again
    for name in ("answers.jsonl", "bioasq.jsonl", "topics.jsonl", "evidence.jsonl"):
        assert _topics_in(out / name) == Counter({"q1": 1, "q2": 1, "q3": 1}), name
    assert [q["id"] for q in json.loads((tmp_path / "sub.json").read_text())["questions"]] == ["q1", "q2", "q3"]


def test_a_run_folder_lock_is_let_go_when_the_command_ends(store: Path, topics: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(store, topics, out).exit_code == 0
    code = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')")
    free = subprocess.run([sys.executable, "-c", code, str(out / "run.lock")], capture_output=True, text=True)
    assert free.stdout.strip() == "free", free.stderr
    assert os.path.exists(out / "run.lock")  # kept: removing a lock file others may wait on is unsafe
