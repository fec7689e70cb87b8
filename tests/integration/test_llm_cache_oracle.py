"""Issue 32 end to end: a server that answered "ok" to every prompt, then was fixed. The CLaC 2025 run A preset
(one generation per topic, the extractive answer when no cited sentence is left) runs twice against the same
oracle server with the LLM cache on: every topic falls back while the server is broken, and after the fix the
same command asks the server again (the rejected replies are kept in the cache file but never replayed) and
answers every topic from the fixed server. A third run is then served wholly from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracle.gold import load
from oracle.harness import questions, snippet_store
from oracle.server import OracleServer, llm_overrides

pytestmark = pytest.mark.slow  # three short runs of a preset on three topics

PRESET = "clac25-a"


def _run(url: str, qs: list[Any], store: Path, out: Path, cache_dir: Path) -> tuple[list[Any], dict[str, Any]]:
    from medcite.config import load_settings, with_overrides
    from medcite.pipeline import Pipeline
    from medcite.presets.offline import offline_settings
    from medcite.rundir import read_answers
    from medcite.types import Topic

    base = load_settings(PRESET)
    overrides = llm_overrides(url, list(base.llms), cache_dir=cache_dir)
    with Pipeline(with_overrides(offline_settings(base, "local"), overrides), store) as pipeline:
        pipeline.run([Topic(q.id, q.body) for q in qs], out)
    return read_answers(out), json.loads((out / "summary.json").read_text())["llm_calls"]


def test_a_fixed_server_is_asked_again_instead_of_the_cache_replaying_rejected_replies(tmp_path: Path) -> None:
    from medcite.llm.cache import LLMCache

    qs = questions(3)
    store = snippet_store(tmp_path / "store", qs)
    cache_dir = tmp_path / "cache"
    server = OracleServer(load(qs), styles=("plain",), degraded="ok")
    with server.running() as url:
        broken, calls = _run(url, qs, store, tmp_path / "broken", cache_dir)
        assert [a.generator for a in broken] == ["llm+extractive-fallback"] * len(qs)  # every topic, correctly
        assert calls == {"total": len(qs), "from_cache": 0, "failed": 0, "rejected": len(qs)}
        cache = LLMCache.in_folder(cache_dir)
        held = cache.stats()
        cache.close()
        assert (held.replies, held.rejected) == (len(qs), len(qs))  # kept for inspection
        assert [s.server for s in held.sources] == [url]

        server.degraded = None  # the server is fixed; the same command runs again on the same cache
        asked = len(server.log)
        fixed, calls = _run(url, qs, store, tmp_path / "fixed", cache_dir)
        assert [a.generator for a in fixed] == ["llm"] * len(qs)  # 0 fallbacks
        assert all(a.sentences and all(s.pmids for s in a.sentences) for a in fixed)
        assert len(server.log) - asked == len(qs) and not any(r.fault for r in server.log[asked:])
        assert calls == {"total": len(qs), "from_cache": 0, "failed": 0, "rejected": 0}

        asked = len(server.log)
        again, calls = _run(url, qs, store, tmp_path / "again", cache_dir)  # accepted replies are replayed
        assert len(server.log) == asked and calls["from_cache"] == calls["total"] == len(qs)
        assert [(a.topic_id, a.text) for a in again] == [(a.topic_id, a.text) for a in fixed]
    cache = LLMCache.in_folder(cache_dir)
    held = cache.stats()
    cache.close()
    assert (held.replies, held.rejected) == (len(qs), 0)  # the fixed server's replies replaced the rejected ones
