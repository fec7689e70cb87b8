"""The run directory writer: crash-safe resume (rows of an unfinished topic dropped) and batched fsyncs."""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import Any

import pytest

from medcite import rundir
from medcite.config import Settings
from medcite.llm.base import Completion
from medcite.llm.trace import record, trace_context, trace_to
from medcite.rundir import RunWriter
from medcite.trec import read_run
from medcite.types import Answer, AnswerSentence, Article, Evidence, Hit, Stance, Topic

SETTINGS = Settings(preset="offline")


class Crash(Exception):
    """Stands in for the process dying in the middle of a write."""


def _topic_parts(tid: str) -> dict[str, Any]:
    n = int(tid[1:])
    pmids = [str(1000 * n + i) for i in range(3)]
    arts = [Article(p, f"Title {p}", f"Abstract of {p}.", journal="J", year=2020) for p in pmids[:2]]
    ev = [Evidence(1, pmids[0], f"Abstract of {pmids[0]}.", "abstract", 0, 10, score=0.9, branches=frozenset({"q0"})),
          Evidence(2, pmids[1], f"Title {pmids[1]}", "title", 0, 5, score=0.5, branches=frozenset({"q0", "q1"}))]
    answer = Answer(tid, [AnswerSentence(f"Answer {tid}.", (pmids[0],), (1,), ((pmids[0], Stance.SUPPORTS),))],
                    [], "extractive")
    return {
        "queries": [{"id": "q0", "text": f"question {tid}", "stage": "original"}],
        "rankings": {"retrieval": [Hit(p, 3.0 - i) for i, p in enumerate(pmids)],
                     "rerank": [Hit(pmids[1], 2.0), Hit(pmids[0], 1.0)]},
        "evidence": ev, "answer": answer, "articles": arts, "timings": {"retrieve_s": 0.5, "generate_s": 0.25},
    }


def _run_topic(writer: RunWriter, tid: str) -> None:
    """What the pipeline does for one topic: LLM calls traced while answering, then the topic's rows."""
    with trace_to(writer.path / "trace.jsonl"), trace_context(topic_id=tid):
        for stage in ("reformulation", "generate"):
            with trace_context(stage=stage):
                record("openai", "m", [{"role": "user", "content": f"{stage} {tid}"}], {"temperature": 0},
                       Completion(f"out {tid}", "m", {"prompt_tokens": 3}, 0.5))
    writer.write_topic(Topic(tid, f"Question {tid}?"), **_topic_parts(tid))


def _run(path: Path, topics: list[str]) -> Path:
    writer = RunWriter(path, SETTINGS, command="test")
    done = writer.done_topics()
    for tid in topics:
        if tid not in done:
            _run_topic(writer, tid)
    return path


def _files(path: Path) -> dict[str, bytes]:
    """Every per-topic file (config.json holds a timestamp; leftover temporary files would show here)."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.name != "config.json"}


class _TornFile:
    """A file whose first write stores only the first half of its text, then the process 'dies'."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh

    def __enter__(self) -> _TornFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()

    def write(self, text: Any) -> int:
        self.fh.write(text[: len(text) // 2])
        raise Crash

    def writelines(self, lines: Any) -> None:
        self.write("".join(lines) if lines and isinstance(lines[0], str) else b"".join(lines))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fh, name)


def _crash_after(monkeypatch: pytest.MonkeyPatch, k: int, torn: bool) -> list[str]:
    """Make the run writer die when it opens its (k+1)-th file for appending (torn: after half a write)."""
    opened: list[str] = []

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "a" in mode:
            opened.append(Path(file).name)
            if len(opened) > k:
                if not torn:
                    raise Crash
                return _TornFile(builtins.open(file, mode, *args, **kwargs))
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(rundir, "open", fake_open, raising=False)
    return opened


def _appends_per_topic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    _run(tmp_path / "count", ["t1"])
    opened = _crash_after(monkeypatch, 10**6, torn=False)
    _run(tmp_path / "count", ["t1", "t2"])
    monkeypatch.undo()
    return len(opened)


@pytest.mark.parametrize("torn", [False, True], ids=["clean-cut", "torn-line"])
def test_a_crash_after_any_write_resumes_to_the_uninterrupted_run(tmp_path, monkeypatch, torn):
    reference = _files(_run(tmp_path / "ref", ["t1", "t2", "t3"]))
    assert set(reference) >= {"topics.jsonl", "queries.jsonl", "retrieval.trec", "rerank.trec", "evidence.jsonl",
                              "articles.jsonl", "timings.jsonl", "answers.jsonl", "trace.jsonl"}
    n = _appends_per_topic(tmp_path, monkeypatch)
    assert n >= 8
    for k in range(n + 1):  # k = n: the topic was fully written before the crash
        path = tmp_path / f"crash-{k}"
        _run(path, ["t1"])
        _crash_after(monkeypatch, k, torn)
        with pytest.raises(Crash):
            _run(path, ["t1", "t2", "t3"])
        monkeypatch.undo()
        if torn:  # a trace line cut short as well (the trace is written while the topic is answered)
            with open(path / "trace.jsonl", "a", encoding="utf-8") as fh:
                fh.write('{"topic_id": "t2", "stage": "gen')
        assert RunWriter(path, SETTINGS).done_topics() == ({"t1", "t2"} if k == n else {"t1"})
        _run(path, ["t1", "t2", "t3"])
        assert _files(path) == reference, f"crash after {k} of {n} appends"
        assert list(read_run(path / "retrieval.trec")) == ["t1", "t2", "t3"]


def test_an_unfinished_topic_leaves_no_row_when_it_is_not_run_again(tmp_path, monkeypatch):
    reference = _files(_run(tmp_path / "ref", ["t1", "t3"]))
    n = _appends_per_topic(tmp_path, monkeypatch)
    for k in range(n):
        path = tmp_path / f"crash-{k}"
        _run(path, ["t1"])
        _crash_after(monkeypatch, k, torn=True)
        with pytest.raises(Crash):
            _run(path, ["t1", "t2"])
        monkeypatch.undo()
        _run(path, ["t1", "t3"])
        got = _files(path)
        assert got == reference, f"crash after {k} of {n}"
        assert b"t2" not in b"".join(got.values())


def test_resume_repairs_trec_and_jsonl_files_by_topic(tmp_path):
    path = _run(tmp_path / "run", ["t1"])
    with open(path / "retrieval.trec", "a", encoding="utf-8") as fh:
        fh.write("t2 Q0 2000 1 3.000000 medcite-offline-retrieval\nt2 Q0 2001 2 2.0")
    with open(path / "evidence.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"topic_id": "t2", "evidence": []}\n')
    before = (path / "retrieval.trec").read_bytes()
    RunWriter(path, SETTINGS)
    after = (path / "retrieval.trec").read_bytes()
    assert after == before[: before.index(b"t2 Q0")]
    assert read_run(path / "retrieval.trec").keys() == {"t1"}
    assert b"t2" not in (path / "evidence.jsonl").read_bytes()


def test_rows_without_a_topic_and_rows_of_finished_topics_are_kept(tmp_path):
    path = _run(tmp_path / "run", ["t1"])
    with open(path / "trace.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"topic_id": null, "stage": "setup"}\n')
    before = (path / "trace.jsonl").read_bytes()
    RunWriter(path, SETTINGS)
    assert (path / "trace.jsonl").read_bytes() == before


def test_a_bad_line_before_good_ones_is_removed_without_touching_the_rest(tmp_path):
    path = _run(tmp_path / "run", ["t1", "t2"])
    lines = (path / "rerank.trec").read_bytes().splitlines(keepends=True)
    (path / "rerank.trec").write_bytes(lines[0] + b"\x00\x00\x00\n" + b"t9 Q0 1 1 1.0 x\n" + b"".join(lines[1:]))
    RunWriter(path, SETTINGS)
    assert (path / "rerank.trec").read_bytes().splitlines(keepends=True) == lines
    assert not [p for p in path.iterdir() if p.name.endswith(".tmp")]


def _fsynced_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name the file behind a descriptor")
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_one_fsync_per_file_per_topic_and_the_answer_last(tmp_path, monkeypatch):
    _run(tmp_path / "run", ["t1"])
    synced = _fsynced_files(monkeypatch)
    _run(tmp_path / "run", ["t1", "t2"])  # resumes: nothing to repair, one topic to write
    files = ["topics.jsonl", "queries.jsonl", "retrieval.trec", "rerank.trec", "evidence.jsonl", "articles.jsonl",
             "timings.jsonl", "trace.jsonl", "answers.jsonl"]
    assert sorted(synced) == sorted(files)  # articles.jsonl holds 2 rows, trace.jsonl 2 calls: still one each
    assert synced[-1] == "answers.jsonl"


def test_rows_added_with_append_are_fsynced_with_the_next_topic_or_on_close(tmp_path, monkeypatch):
    synced = _fsynced_files(monkeypatch)
    with RunWriter(tmp_path / "run", SETTINGS) as writer:
        synced.clear()
        writer.append("trace.jsonl", {"topic_id": "t1", "stage": "generate"})
        writer.append("trace.jsonl", {"topic_id": "t1", "stage": "generate"})
        assert synced == []
        writer.write_topic(Topic("t1", "Q?"), **_topic_parts("t1"))
        assert synced.count("trace.jsonl") == 1 and synced.index("trace.jsonl") < synced.index("answers.jsonl")
        synced.clear()
        writer.append("trace.jsonl", {"topic_id": None, "stage": "late"})
    assert synced == ["trace.jsonl"]


def test_a_topic_that_cannot_be_written_touches_no_file(tmp_path):
    writer = RunWriter(tmp_path / "run", SETTINGS)
    parts = _topic_parts("t1")
    parts["rankings"] = {"retrieval": [Hit("12 34", 1.0)]}  # a document id TREC files cannot hold
    with pytest.raises(Exception, match="12 34"):
        writer.write_topic(Topic("t1", "Q?"), **parts)
    assert sorted(p.name for p in writer.path.iterdir()) == ["config.json", "run.lock"]


def test_done_topics_come_from_complete_answer_lines(tmp_path):
    path = _run(tmp_path / "run", ["t1", "t2"])
    data = (path / "answers.jsonl").read_bytes()
    (path / "answers.jsonl").write_bytes(data[:-5])  # t2's answer cut short: t2 is unfinished
    writer = RunWriter(path, SETTINGS)
    assert writer.done_topics() == {"t1"}
    assert all(json.loads(line)["topic_id"] != "t2" for f in ("queries.jsonl", "articles.jsonl", "trace.jsonl")
               for line in (path / f).read_text().splitlines())
