"""Issue 32: a ``rejected`` trace line is not an LLM call: the topic page marks the call it names."""

from __future__ import annotations

import re
from pathlib import Path

from viewer_runs import write_run


def test_a_rejected_reply_is_marked_on_its_call_and_is_not_a_call_itself(tmp_path: Path, client_for) -> None:
    path = write_run(tmp_path / "runs" / "gamma")
    with open(path / "trace.jsonl", "a", encoding="utf-8") as fh:
        for row in (
            '{"topic_id": "t1", "stage": "reformulation", "backend": "openai", "model": "m", "messages": [], '
            '"params": {}, "output": "ok", "latency_s": 0.1, "cache_hit": false, "key": "k1"}',
            '{"topic_id": "t1", "stage": "reformulation", "event": "rejected", "backend": "openai", "model": "m", '
            '"key": "k1", "reason": "no reformulation <b>could</b> be read"}',
        ):
            fh.write(row + "\n")
    html = client_for(tmp_path / "runs").get("/run/gamma/topic/t1").text
    assert re.search(r"LLM calls <small[^>]*>2</small>", html)  # the generate call of the fixture and this one
    calls = re.findall(r'<details class="call" id="call-(\d+)">(.*?)</details>', html, re.S)
    assert [n for n, _ in calls] == ["1", "2"]
    assert "rejected" not in calls[0][1]
    assert "no reformulation &lt;b&gt;could&lt;/b&gt; be read" in calls[1][1]  # escaped
