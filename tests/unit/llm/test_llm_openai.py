"""The openai backend against a real HTTP server on 127.0.0.1 (see conftest.FakeOpenAIServer)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest

from medcite.config import Settings, load_settings
from medcite.errors import ConfigError, LLMError
from medcite.llm.base import LLM
from medcite.llm.cache import LLMCache
from medcite.llm.openai_backend import OpenAIBackend, parse_retry_after
from medcite.llm.trace import trace_context, trace_to
from medcite.pipeline.context import Context


def built_llm(settings: Settings) -> LLM:
    """The LLM ``settings.llm`` names, made by a store-less build context (as every command makes one)."""
    return Context(settings).build("llm", settings.llm)


MSG = [{"role": "user", "content": "What treats scurvy?"}]


def backend(server, sleeps: list[float] | None = None, **kw) -> OpenAIBackend:
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff_s", 0.0)
    kw.setdefault("timeout_s", 5.0)
    record = sleeps if sleeps is not None else []
    return OpenAIBackend("fake-model", base_url=server.base_url, sleep=record.append, **kw)


def test_normal_completion_and_request_body(openai_server, monkeypatch):
    monkeypatch.delenv("MEDCITE_TEST_KEY", raising=False)
    openai_server.push({"kind": "ok", "text": "Vitamin C [1]."})
    llm = backend(openai_server, api_key_env="MEDCITE_TEST_KEY", max_tokens=64)
    out = llm.complete(MSG, stop=["\n\n"])
    assert out.text == "Vitamin C [1]."
    assert out.model == "fake-model"
    assert out.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert out.cache_hit is False and out.finish_reason == "stop" and out.latency_s > 0
    (req,) = openai_server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"] == {"model": "fake-model", "messages": MSG, "stream": False, "temperature": 0.0,
                           "max_tokens": 64, "stop": ["\n\n"], "seed": 0}
    assert "Authorization" not in req["headers"]


def test_only_the_named_variable_gives_the_key(openai_server, monkeypatch):
    monkeypatch.delenv("MEDCITE_TEST_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")  # the SDK's own default: not used
    backend(openai_server, api_key_env="MEDCITE_TEST_KEY").complete(MSG)
    assert "Authorization" not in openai_server.requests[0]["headers"]


def test_api_key_from_named_environment_variable(openai_server, monkeypatch):
    monkeypatch.setenv("MEDCITE_TEST_KEY", "sk-test-123")
    backend(openai_server, api_key_env="MEDCITE_TEST_KEY").complete(MSG)
    assert openai_server.requests[0]["headers"]["Authorization"] == "Bearer sk-test-123"


def test_500_then_success_retries_once(openai_server):
    openai_server.push({"kind": "status", "status": 500})
    sleeps: list[float] = []
    llm = backend(openai_server, sleeps)
    assert llm.complete(MSG).text == "echo: What treats scurvy?"
    assert len(openai_server.requests) == 2
    assert llm.retries == 1 and len(sleeps) == 1


def test_429_honours_retry_after(openai_server):
    openai_server.push({"kind": "status", "status": 429, "headers": {"Retry-After": "2"}},
                       {"kind": "status", "status": 429, "headers": {"Retry-After": "0.5"}})
    sleeps: list[float] = []
    llm = backend(openai_server, sleeps, backoff_s=30.0)
    assert llm.complete(MSG).text.startswith("echo:")
    assert sleeps == [2.0, 0.5]  # the server's delay, not the (much longer) backoff
    assert len(openai_server.requests) == 3


def test_retry_after_ms_is_preferred(openai_server):
    openai_server.push({"kind": "status", "status": 429, "headers": {"retry-after-ms": "250", "Retry-After": "3"}})
    sleeps: list[float] = []
    assert backend(openai_server, sleeps, backoff_s=30.0).complete(MSG).text.startswith("echo:")
    assert sleeps == [0.25]


def test_persistent_429_gives_up_retryable(openai_server):
    openai_server.push(*[{"kind": "status", "status": 429} for _ in range(5)])
    llm = backend(openai_server, max_retries=3)
    with pytest.raises(LLMError) as info:
        llm.complete(MSG)
    assert info.value.retryable is True
    assert "HTTP 429" in info.value.message and "gave up after 4 attempts" in info.value.message
    assert "llm.concurrency" in (info.value.hint or "")
    assert len(openai_server.requests) == 4


def test_backoff_doubles_with_jitter(openai_server):
    openai_server.push(*[{"kind": "status", "status": 503} for _ in range(4)])
    sleeps: list[float] = []
    llm = backend(openai_server, sleeps, max_retries=3, backoff_s=1.0)
    with pytest.raises(LLMError):
        llm.complete(MSG)
    assert len(sleeps) == 3
    for attempt, delay in enumerate(sleeps):
        ceiling = 2.0**attempt
        assert ceiling / 2 <= delay <= ceiling


def test_malformed_json_is_not_retried(openai_server):
    openai_server.push({"kind": "malformed"})
    with pytest.raises(LLMError) as info:
        backend(openai_server).complete(MSG)
    assert info.value.retryable is False
    assert "not JSON" in info.value.message and "/v1" in (info.value.hint or "")
    assert len(openai_server.requests) == 1


def test_empty_choices_is_not_retried(openai_server):
    openai_server.push({"kind": "empty"})
    with pytest.raises(LLMError) as info:
        backend(openai_server).complete(MSG)
    assert info.value.retryable is False and "no choices" in info.value.message
    assert len(openai_server.requests) == 1


def test_slow_response_times_out_then_retry_succeeds(openai_server):
    openai_server.push({"kind": "ok", "text": "late", "delay": 4.0})
    llm = backend(openai_server, timeout_s=0.3)
    start = time.perf_counter()
    out = llm.complete(MSG)
    assert out.text == "echo: What treats scurvy?"  # the second, fast answer
    assert llm.retries == 1 and len(openai_server.requests) == 2
    assert time.perf_counter() - start < 3.5  # did not wait for the slow answer


def test_always_slow_gives_retryable_timeout(openai_server):
    openai_server.push(*[{"kind": "ok", "text": "late", "delay": 1.0} for _ in range(2)])
    with pytest.raises(LLMError) as info:
        backend(openai_server, timeout_s=0.2, max_retries=1).complete(MSG)
    assert info.value.retryable is True and "within 0.2 s" in info.value.message
    assert "llm.timeout_s" in (info.value.hint or "")


@pytest.mark.parametrize("case", [{}, {"headers": True}, {"stream": True}])
def test_a_server_that_drips_is_cut_off_at_the_deadline_and_retried(openai_server, case):
    """Issue 42: a byte every 0.1 s never lets one read wait timeout_s (5 s); the request as a whole stops at
    deadline_s, counts as a retryable failure, and the retry gets the answer."""
    then = ({"kind": "stream", "pieces": ["Vitamin ", "C."]} if case.get("stream")
            else {"kind": "ok", "text": "Vitamin C."})
    openai_server.push({"kind": "drip", "every": 0.1, "headers": case.get("headers", False)}, then)
    llm = backend(openai_server, timeout_s=5.0, deadline_s=0.8, stream=case.get("stream", False))
    start = time.perf_counter()
    out = llm.complete(MSG)
    assert time.perf_counter() - start < 3.0
    assert out.text == "Vitamin C." and llm.retries == 1 and len(openai_server.requests) == 2


def test_a_server_that_always_drips_gives_a_retryable_deadline_error(openai_server):
    openai_server.push(*[{"kind": "drip", "every": 0.1} for _ in range(2)])
    llm = backend(openai_server, timeout_s=5.0, deadline_s=0.5, max_retries=1)
    start = time.perf_counter()
    with pytest.raises(LLMError) as info:
        llm.complete(MSG)
    assert time.perf_counter() - start < 3.0
    assert info.value.retryable is True and "within llm.deadline_s = 0.5 s" in info.value.message
    assert "llm.deadline_s" in (info.value.hint or "")


def test_the_deadline_is_a_setting_with_a_default():
    from medcite.llm.openai_backend import OpenAIConfig

    assert OpenAIConfig().deadline_s == 300.0
    llm = built_llm(load_settings("offline", ["llm.backend=openai", "llm.model=m", "llm.deadline_s=7"]))
    assert isinstance(llm, OpenAIBackend) and llm.deadline_s == 7.0


@pytest.mark.parametrize(("status", "hint_part"), [(401, "MEDCITE_TEST_KEY"), (404, "llm.base_url"),
                                                   (400, "llm.max_tokens")])
def test_client_errors_are_not_retried(openai_server, status, hint_part):
    openai_server.push({"kind": "status", "status": status, "json": {"error": {"message": "nope"}}})
    with pytest.raises(LLMError) as info:
        backend(openai_server, api_key_env="MEDCITE_TEST_KEY").complete(MSG)
    assert info.value.retryable is False
    assert f"HTTP {status}: nope" in info.value.message and hint_part in (info.value.hint or "")
    assert len(openai_server.requests) == 1


def test_connection_refused_is_retryable():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    llm = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.0,
                        sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        llm.complete(MSG)
    assert info.value.retryable is True and "cannot reach" in info.value.message
    assert len(sleeps) == 2


def test_model_name_required():
    with pytest.raises(ConfigError, match="needs a model name"):
        OpenAIBackend(None)


def test_complete_many_keeps_order_and_respects_concurrency(openai_server):
    openai_server.push(*[{"kind": "echo", "delay": 0.15} for _ in range(6)])
    llm = backend(openai_server, concurrency=2)
    chats = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
    start = time.perf_counter()
    outs = llm.complete_many(chats)
    elapsed = time.perf_counter() - start
    assert [o.text for o in outs] == [f"echo: q{i}" for i in range(6)]
    assert openai_server.max_in_flight == 2
    assert elapsed > 0.4  # at most 2 at a time: 3 rounds of 0.15 s


def test_semaphore_limits_threads_calling_complete(openai_server):
    openai_server.push(*[{"kind": "echo", "delay": 0.1} for _ in range(4)])
    llm = backend(openai_server, concurrency=1)
    threads = [threading.Thread(target=llm.complete, args=(MSG,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(openai_server.requests) == 4 and openai_server.max_in_flight == 1


def test_streaming_assembles_chunks(openai_server):
    openai_server.push({"kind": "stream", "pieces": ["Vita", "min ", "C."]})
    out = backend(openai_server, stream=True).complete(MSG)
    assert out.text == "Vitamin C." and out.finish_reason == "stop"
    assert openai_server.requests[0]["body"]["stream"] is True


def test_streaming_error_status_is_retried(openai_server):
    openai_server.push({"kind": "status", "status": 502}, {"kind": "stream", "pieces": ["ok"]})
    llm = backend(openai_server, stream=True)
    assert llm.complete(MSG).text == "ok" and llm.retries == 1


def test_stalled_stream_is_retried(openai_server):
    openai_server.push({"kind": "stream", "pieces": ["Vita", "lost"], "stall": 2.0},
                       {"kind": "stream", "pieces": ["Vita", "min C."]})
    llm = backend(openai_server, stream=True, timeout_s=0.3)
    assert llm.complete(MSG).text == "Vitamin C." and llm.retries == 1  # nothing of the broken stream kept


def test_streamed_error_event_fails_without_retry(openai_server):
    openai_server.push({"kind": "stream", "pieces": ["Vita"], "error": "the model crashed"})
    llm = backend(openai_server, stream=True)
    with pytest.raises(LLMError) as info:
        llm.complete(MSG)
    assert info.value.retryable is False and "the model crashed" in info.value.message
    assert len(openai_server.requests) == 1 and llm.retries == 0


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert 8 < parse_retry_after(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 10))) <= 10


def test_cache_makes_second_run_silent_and_identical(openai_server, tmp_path):
    settings = load_settings("offline", ["llm.backend=openai", "llm.model=fake-model",
                                         f"llm.base_url={openai_server.base_url}", f"llm.cache_dir={tmp_path}"])
    openai_server.push({"kind": "ok", "text": "first answer"}, {"kind": "ok", "text": "second answer"})
    trace_file = tmp_path / "run" / "trace.jsonl"
    with trace_to(trace_file), trace_context(topic_id="t1", stage="reformulation"):
        first = built_llm(settings).complete(MSG)
        again = built_llm(settings).complete(MSG)  # a re-run: new backend, same cache folder
        other = built_llm(settings).complete(MSG, max_tokens=7)  # other parameters: not a hit
    assert first.text == again.text == "first answer"
    assert (first.cache_hit, again.cache_hit, other.cache_hit) == (False, True, False)
    assert other.text == "second answer"
    assert len(openai_server.requests) == 2
    rows = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert [r["cache_hit"] for r in rows] == [False, True, False]
    assert rows[0]["topic_id"] == "t1" and rows[0]["stage"] == "reformulation"
    assert rows[0]["backend"] == "openai" and rows[0]["model"] == "fake-model"
    assert rows[0]["messages"] == MSG and rows[0]["output"] == "first answer"
    assert rows[0]["params"]["temperature"] == 0.0 and rows[2]["params"]["max_tokens"] == 7


def test_failed_call_is_traced(openai_server, tmp_path):
    openai_server.push({"kind": "empty"})
    trace_file = tmp_path / "trace.jsonl"
    with trace_to(trace_file), trace_context(topic_id="t9", stage="generate"), pytest.raises(LLMError):
        backend(openai_server).complete(MSG)
    (row,) = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert row["topic_id"] == "t9" and row["output"] == "" and "no choices" in row["error"]


def test_one_failed_request_keeps_the_rest_of_its_batch(openai_server, tmp_path, caplog):
    chats = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    openai_server.by_content["q2"] = {"kind": "status", "status": 400, "json": {"error": {"message": "bad q2"}}}
    cache = LLMCache(tmp_path / "c.sqlite")
    llm = backend(openai_server, concurrency=3, cache=cache)
    trace_file = tmp_path / "trace.jsonl"
    with trace_to(trace_file), trace_context(topic_id="t3", stage="summaries"), \
            caplog.at_level(logging.WARNING, logger="medcite.llm"), pytest.raises(LLMError) as info:
        llm.complete_many(chats)
    assert len(openai_server.requests) == 5 and len(cache) == 4  # the other four finished and were kept
    assert info.value.retryable is False and "HTTP 400: bad q2" in info.value.message
    assert "batch of 5: 1 failed, the first at position 2" in info.value.message
    assert "llm.max_tokens" in (info.value.hint or "")
    rows = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert [r["messages"] for r in rows] == chats  # one line each, in input order
    assert [r["output"] for r in rows] == ["echo: q0", "echo: q1", "", "echo: q3", "echo: q4"]
    assert "bad q2" in rows[2]["error"] and all("error" not in r for r in rows[:2] + rows[3:])
    (record,) = [r for r in caplog.records if "failed" in r.getMessage()]
    assert all(part in record.getMessage() for part in ("request 2 of a batch of 5", "t3", "summaries", "bad q2"))

    del openai_server.by_content["q2"]  # the server is fixed: the re-run asks for the failed one only
    outs = llm.complete_many(chats)
    assert [o.text for o in outs] == [f"echo: q{i}" for i in range(5)]
    assert [o.cache_hit for o in outs] == [True, True, False, True, True]
    assert len(openai_server.requests) == 6 and openai_server.requests[-1]["body"]["messages"] == chats[2]


def test_batch_answers_are_cached_as_they_arrive(openai_server, tmp_path):
    openai_server.by_content["slow"] = {"kind": "ok", "text": "late", "delay": 3.0}
    path = tmp_path / "c.sqlite"
    llm = backend(openai_server, concurrency=3, cache=LLMCache(path))
    chats = [[{"role": "user", "content": q}] for q in ("slow", "fast1", "fast2")]
    batch = threading.Thread(target=llm.complete_many, args=(chats,))
    batch.start()
    watcher = LLMCache(path)  # another connection, as a second process would see the file
    deadline = time.perf_counter() + 2.5
    while len(watcher) < 2 and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert len(watcher) == 2 and batch.is_alive()  # both fast answers kept while the slow one still runs
    batch.join()
    assert len(watcher) == 3


# -- issue 16: hostile replies give one-line errors, never tracebacks or unbounded work ----------------
def test_usage_figure_1e999_is_dropped_not_a_traceback(openai_server):
    raw = ('{"id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model", "choices": [{"index": 0, '
           '"message": {"role": "assistant", "content": "Vitamin C [1]."}, "finish_reason": "stop"}], '
           '"usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 1e999}}')
    openai_server.push({"kind": "raw", "data": raw})
    out = backend(openai_server).complete(MSG)
    assert out.text == "Vitamin C [1]." and out.usage == {"prompt_tokens": 7, "completion_tokens": 3}


@pytest.mark.parametrize("event", [
    '{"choices": "nope"}', '{"choices": [5]}', '{"choices": [{"delta": "text"}]}', '[1, 2]',
])
def test_malformed_streamed_chunk_is_one_llm_error(openai_server, event):
    openai_server.push({"kind": "rawstream", "events": [event]})
    with pytest.raises(LLMError) as info:
        backend(openai_server, stream=True).complete(MSG)
    assert info.value.retryable is False
    assert "streamed a malformed chunk" in info.value.message or "not JSON" in info.value.message
    assert openai_server.base_url in info.value.message


def test_huge_reply_is_capped(openai_server):
    from medcite.llm.openai_backend import MAX_REPLY_CHARS

    openai_server.push({"kind": "ok", "text": "Statins lower LDL [1]. " * (MAX_REPLY_CHARS // 10)})
    out = backend(openai_server).complete(MSG)
    assert len(out.text) <= MAX_REPLY_CHARS and out.finish_reason == "length"


def test_huge_streamed_reply_stops_reading_at_the_cap(openai_server):
    from medcite.llm.openai_backend import MAX_REPLY_CHARS

    piece = json.dumps({"model": "m", "choices": [{"index": 0, "delta": {"content": "x" * 100_000}}]})
    openai_server.push({"kind": "rawstream", "events": [piece] * (MAX_REPLY_CHARS // 100_000 + 5)})
    out = backend(openai_server, stream=True).complete(MSG)
    assert len(out.text) == MAX_REPLY_CHARS and out.finish_reason == "length"


def test_the_openai_backend_marks_a_reply_over_the_cap_rejected_in_the_cache(openai_server, tmp_path):
    """Issue 42: a 2 MB reply was cut, then cached as a good reply and replayed."""
    from medcite.llm.openai_backend import MAX_REPLY_CHARS

    openai_server.push({"kind": "ok", "text": "Statins lower LDL [1]. " * (MAX_REPLY_CHARS // 20)})
    cache = LLMCache(tmp_path / "c.sqlite")
    llm = OpenAIBackend("m", base_url=openai_server.base_url, cache=cache, max_retries=0)
    out = llm.complete([{"role": "user", "content": "Do statins lower LDL?"}])
    assert len(out.text) == MAX_REPLY_CHARS and out.finish_reason == "length"
    assert "reply cap" in (cache.rejection(out.key) or "")
