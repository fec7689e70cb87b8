"""Issue 32: a run directory says how many of its LLM calls came from the cache and how many replies medcite
rejected (``summary.json``, counted from ``trace.jsonl``, resumed sessions included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medcite.config import Settings
from medcite.errors import LLMError
from medcite.llm.base import BaseLLM, Completion, Message, reject
from medcite.llm.cache import LLMCache
from medcite.llm.trace import record_error, trace_context, trace_to
from medcite.rundir import RunWriter
from medcite.rundir_read import llm_call_counts, read_summary
from medcite.types import Answer, Topic


class Echo(BaseLLM):
    name = "echo"

    def __init__(self, cache: LLMCache) -> None:
        super().__init__("echo-model", cache=cache)
        self.asked = 0

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.asked += 1
        return Completion(messages[-1]["content"].upper(), self.model)


def _topic(writer: RunWriter, llm: Echo, tid: str) -> None:
    """Three calls (one answered from the cache, one whose reply is rejected) and one failed call."""
    with trace_to(writer.path / "trace.jsonl"), trace_context(topic_id=tid):
        llm.complete([{"role": "user", "content": f"a {tid}"}])
        llm.complete([{"role": "user", "content": f"a {tid}"}])  # the same request: from the cache
        reply = llm.complete([{"role": "user", "content": f"b {tid}"}])
        reject(llm, reply, "not a list")
        record_error("echo", "echo-model", [{"role": "user", "content": "c"}], {}, LLMError("HTTP 500"))
    writer.write_topic(Topic(tid, "Q?"), queries=[], rankings={}, evidence=[], answer=Answer(tid, [], [], "x"),
                       articles=[], timings={})


def test_the_summary_counts_calls_cache_hits_failures_and_rejections(tmp_path: Path) -> None:
    llm = Echo(LLMCache(tmp_path / "cache.sqlite"))
    out = tmp_path / "run"
    with RunWriter(out, Settings(preset="offline")) as writer:
        _topic(writer, llm, "t1")
        summary = writer.write_summary()
    expected = {"topics": 1, "llm_calls": {"total": 4, "from_cache": 1, "failed": 1, "rejected": 1}}
    assert summary == expected and llm.asked == 2
    assert json.loads((out / "summary.json").read_text()) == expected
    assert read_summary(out) == expected

    # a resumed run: the summary covers the topics of both sessions
    with RunWriter(out, Settings(preset="offline")) as writer:
        _topic(writer, llm, "t2")
        summary = writer.write_summary()
    assert summary == {"topics": 2, "llm_calls": {"total": 8, "from_cache": 2, "failed": 2, "rejected": 2}}


def test_a_run_without_a_summary_is_counted_from_its_files(tmp_path: Path) -> None:
    llm = Echo(LLMCache(tmp_path / "cache.sqlite"))
    out = tmp_path / "run"
    with RunWriter(out, Settings(preset="offline")) as writer:  # an older medcite, or an interrupted run
        _topic(writer, llm, "t1")
    assert not (out / "summary.json").exists()
    with open(out / "trace.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"torn": \n')  # an unreadable line is skipped, not counted
    assert read_summary(out) == {"topics": 1, "llm_calls": {"total": 4, "from_cache": 1, "failed": 1, "rejected": 1}}
    assert llm_call_counts(tmp_path / "nothing") == {"total": 0, "from_cache": 0, "failed": 0, "rejected": 0}
