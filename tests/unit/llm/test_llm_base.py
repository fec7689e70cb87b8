"""The base class (defaults, cache, trace), the cache itself, the factory and the none/llamacpp backends."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3

import pytest

from medcite.config import Settings, load_settings
from medcite.errors import ConfigError, LLMError, MissingExtraError
from medcite.llm.base import LLM, llm_enabled
from medcite.llm.cache import LLMCache, cache_key
from medcite.llm.none_backend import NoneLLM
from medcite.llm.trace import TraceWriter, trace_context, trace_to
from medcite.pipeline.context import Context


def built_llm(settings: Settings) -> LLM:
    """The LLM ``settings.llm`` names, made by a store-less build context (as every command makes one)."""
    return Context(settings).build("llm", settings.llm)


MSG = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


def test_cache_key_is_canonical():
    a = cache_key("openai", "m", MSG, {"temperature": 0.0, "max_tokens": 5, "stop": None, "seed": 0})
    b = cache_key("openai", "m", [dict(reversed(list(m.items()))) for m in MSG],
                  {"seed": 0, "stop": None, "max_tokens": 5, "temperature": 0.0})
    assert a == b and len(a) == 64
    assert a != cache_key("local", "m", MSG, {"temperature": 0.0, "max_tokens": 5, "stop": None, "seed": 0})
    assert a != cache_key("openai", "m2", MSG, {"temperature": 0.0, "max_tokens": 5, "stop": None, "seed": 0})
    assert a != cache_key("openai", "m", MSG[1:], {"temperature": 0.0, "max_tokens": 5, "stop": None, "seed": 0})
    assert a != cache_key("openai", "m", MSG, {"temperature": 0.0, "max_tokens": 6, "stop": None, "seed": 0})


def test_cache_persists_across_processes_and_is_inspectable(tmp_path, scripted_llm):
    path = tmp_path / "c.sqlite"
    llm = scripted_llm(["one"], cache=LLMCache(path))
    assert llm.complete(MSG).text == "one"
    llm.close()
    reopened = scripted_llm([], cache=LLMCache(path))  # no answers left: a miss would raise IndexError
    hit = reopened.complete(MSG)
    assert (hit.text, hit.cache_hit, hit.model) == ("one", True, "scripted-model")
    assert len(reopened.cache) == 1 and reopened.prompts == []
    with sqlite3.connect(path) as conn:
        request = json.loads(conn.execute("SELECT request FROM completions").fetchone()[0])
    assert request["messages"] == MSG and request["params"]["max_tokens"] == 512
    assert reopened.cache.clear() == 1 and len(reopened.cache) == 0


def test_corrupt_cache_file_is_set_aside_never_written_to(tmp_path):
    """Issue 42 (was: refused, with a hint to delete it): a file that is not a cache is renamed aside, untouched,
    and a new cache starts in its place."""
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = LLMCache(path)
    assert len(cache) == 0 and "not a medcite LLM cache" in (cache.found or "")
    cache.close()
    (aside,) = tmp_path.glob("c.sqlite.set-aside-*")
    assert aside.read_bytes() == b"this is not a database" * 100


def test_defaults_and_overrides_reach_the_backend(scripted_llm):
    seen = []

    class Recorder(scripted_llm):
        def _generate(self, messages, params):
            seen.append(params)
            return super()._generate(messages, params)

    llm = Recorder(["a", "b"])
    llm.temperature, llm.max_tokens, llm.seed = 0.0, 100, 7
    llm.complete(MSG)
    llm.complete(MSG, temperature=0.5, max_tokens=3, stop=("x",), seed=1, top_p=0.9)
    assert seen == [{"temperature": 0.0, "max_tokens": 100, "stop": None, "seed": 7},
                    {"temperature": 0.5, "max_tokens": 3, "stop": ["x"], "seed": 1, "top_p": 0.9}]


def test_complete_many_mixes_hits_and_misses_in_order(tmp_path, scripted_llm):
    cache = LLMCache(tmp_path / "c.sqlite")
    llm = scripted_llm(lambda m: "A:" + m[-1]["content"], cache=cache)
    llm.complete([{"role": "user", "content": "2"}])
    outs = llm.complete_many([[{"role": "user", "content": str(i)}] for i in range(4)])
    assert [o.text for o in outs] == ["A:0", "A:1", "A:2", "A:3"]
    assert [o.cache_hit for o in outs] == [False, False, True, False]
    assert [p[-1]["content"] for p in llm.prompts] == ["2", "0", "1", "3"]


def test_a_failure_in_a_sequential_batch_keeps_the_others(tmp_path, scripted_llm):
    broken = {"1"}

    def answer(messages):
        if messages[-1]["content"] in broken:
            raise LLMError("the model failed on 1", "try again", retryable=True)
        return "A:" + messages[-1]["content"]

    llm = scripted_llm(answer, cache=LLMCache(tmp_path / "c.sqlite"))
    chats = [[{"role": "user", "content": str(i)}] for i in range(3)]
    with pytest.raises(LLMError, match="the model failed on 1") as info:
        llm.complete_many(chats)
    assert [p[-1]["content"] for p in llm.prompts] == ["0", "1", "2"] and len(llm.cache) == 2
    assert info.value.retryable is True and info.value.hint == "try again"
    assert "batch of 3: 1 failed, the first at position 1" in info.value.message
    broken.clear()
    assert [o.text for o in llm.complete_many(chats)] == ["A:0", "A:1", "A:2"]
    assert [p[-1]["content"] for p in llm.prompts] == ["0", "1", "2", "1"]


def test_a_single_failed_call_raises_its_own_error(scripted_llm):
    def answer(messages):
        raise LLMError("no", "fix it")

    with pytest.raises(LLMError) as info:
        scripted_llm(answer).complete(MSG)
    assert info.value.message == "no" and info.value.__cause__ is None


def test_an_error_that_is_not_an_llm_error_stops_the_batch(tmp_path, scripted_llm):
    def answer(messages):
        if messages[-1]["content"] == "1":
            raise TypeError("a bug")
        return "A:" + messages[-1]["content"]

    llm = scripted_llm(answer, cache=LLMCache(tmp_path / "c.sqlite"))
    with pytest.raises(TypeError, match="a bug"):
        llm.complete_many([[{"role": "user", "content": str(i)}] for i in range(3)])
    assert [p[-1]["content"] for p in llm.prompts] == ["0", "1"] and len(llm.cache) == 1


def test_messages_are_validated(scripted_llm):
    llm = scripted_llm(["x"])
    with pytest.raises(ValueError, match="messages is empty"):
        llm.complete([])
    with pytest.raises(ValueError, match="role 'bot'"):
        llm.complete([{"role": "bot", "content": "x"}])
    with pytest.raises(ValueError, match="needs 'role' and 'content'"):
        llm.complete([{"text": "x"}])


def test_trace_context_nests_and_is_off_outside_trace_to(tmp_path, scripted_llm):
    llm = scripted_llm(["a", "b", "c"])
    llm.complete(MSG)  # no trace file configured: nothing written anywhere
    path = tmp_path / "trace.jsonl"
    with trace_to(path), trace_context(topic_id="T1"):
        with trace_context(stage="decomposition"):
            llm.complete(MSG)
        llm.complete(MSG)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["topic_id"], r["stage"], r["output"]) for r in rows] == [("T1", "decomposition", "b"),
                                                                        ("T1", None, "c")]
    assert set(rows[0]) >= {"topic_id", "stage", "backend", "model", "messages", "params", "output",
                            "latency_s", "cache_hit"}


def _count_fsyncs(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    return calls


def test_trace_lines_are_flushed_at_once_and_fsynced_once_per_block(tmp_path, scripted_llm, monkeypatch):
    llm = scripted_llm(["a", "b", "c"])
    fsyncs = _count_fsyncs(monkeypatch)
    path = tmp_path / "trace.jsonl"
    with trace_to(path), trace_context(topic_id="T1"):
        for n in range(3):
            llm.complete([{"role": "user", "content": f"q{n}"}])
            assert len(path.read_text().splitlines()) == n + 1  # a reader sees each call as it ends
        assert fsyncs == []
    assert len(fsyncs) == 1
    with trace_to(path):  # no call made: nothing opened, nothing to fsync
        pass
    assert len(fsyncs) == 1


def test_a_trace_writer_passed_in_is_left_open_and_reopens_after_close(tmp_path, monkeypatch):
    fsyncs = _count_fsyncs(monkeypatch)
    writer = TraceWriter(tmp_path / "trace.jsonl")
    with trace_to(writer) as got:
        assert got is writer
        writer.write({"n": 1})
    assert fsyncs == []  # the caller owns it
    writer.sync()
    writer.close()
    writer.close()
    assert len(fsyncs) == 2
    with writer:
        writer.write({"n": 2})
    assert len(fsyncs) == 3
    assert [json.loads(x)["n"] for x in writer.path.read_text().splitlines()] == [1, 2]


def test_context_llm_none_and_its_clear_error():
    llm = built_llm(load_settings("offline"))
    assert isinstance(llm, NoneLLM) and isinstance(llm, LLM) and not llm_enabled(llm)
    with trace_context(stage="summaries"), pytest.raises(ConfigError) as info:
        llm.complete(MSG)
    assert "'summaries' stage needs a language model" in info.value.message
    assert "llm.backend=local" in (info.value.hint or "")


def test_context_llm_unknown_backend_lists_choices():
    with pytest.raises(ConfigError, match="unknown llm backend 'gpt5'") as info:
        built_llm(load_settings("offline", ["llm.backend=gpt5"]))
    assert "llamacpp, local, none, openai" in info.value.message


def test_context_llm_openai_without_model_says_so():
    with pytest.raises(ConfigError, match="needs a model name"):
        built_llm(load_settings("offline", ["llm.backend=openai", "llm.cache=false"]))


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed")
def test_llamacpp_without_the_extra_names_the_install_command():
    with pytest.raises(MissingExtraError) as info:
        built_llm(load_settings("offline", ["llm.backend=llamacpp", "llm.cache=false"]))
    assert info.value.hint == "pip install 'medcite[llamacpp]'"


def test_default_cache_location_follows_medcite_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDCITE_CACHE_DIR", str(tmp_path / "cache"))
    llm = built_llm(load_settings("offline", ["llm.backend=openai", "llm.model=m"]))
    assert llm.cache is not None and llm.cache.path == tmp_path / "cache" / "llm-cache.sqlite"
    assert built_llm(load_settings("offline", ["llm.backend=openai", "llm.model=m", "llm.cache=false"])).cache is None
