"""The ``openai`` backend: any OpenAI-compatible chat-completions server, through the official ``openai`` SDK.

Works with vLLM, Ollama, a llama.cpp server, OpenAI and others serving ``POST {base_url}/chat/completions``.
Retries with exponential backoff and jitter on 408/409/425/429, 5xx, timeouts and connection errors (a
``Retry-After`` or ``retry-after-ms`` header is honoured); a semaphore limits the requests in flight, and
:meth:`complete_many` runs a batch on a thread pool of that size. Streaming is off by default.

Why the SDK sends and medcite retries: the SDK does the transport, the auth header, the status errors and the
server-sent-event parsing, but is built with ``max_retries=0`` and the retry loop stays here. The SDK's own
retries would drop behaviour the settings promise: its backoff starts at a fixed 0.5 s capped at 8 s (so
``llm.backoff_s`` would mean nothing), it does not retry 425, it treats a long ``Retry-After`` by its own fixed
limit rather than waiting at most ``max_backoff_s``, it sleeps with ``time.sleep`` (tests could only see the
delays by patching the SDK) and it counts retries nowhere a caller can read (:attr:`OpenAIBackend.retries`).
Non-streamed answers are read from the raw response (``with_raw_response``) so that a body that is not JSON,
not an object or without choices fails with medcite's hints instead of passing through the SDK's lenient
model; streamed chunks come parsed from the SDK.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..errors import ConfigError, LLMError
from ..registry import require
from ..set_option import set_line
from .base import BaseLLM, Completion, LLMConfig, Message
from .deadline import Deadline, deadline_client

if TYPE_CHECKING:
    from ..context import BuildContext
    from .cache import LLMCache

MAX_REPLY_CHARS = 400_000
"""At most this much of one reply is read (about 100k tokens, far above any max_tokens): a runaway or hostile
server cannot make parsing and storing the answer unbounded."""

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

Answer = tuple[str, str, dict[str, int], str | None]  # text, model, usage, finish_reason
#: the finish reason of a reply cut at MAX_REPLY_CHARS (a server's own "length" stays "length")
OVER_CAP = "medcite-reply-cap"


class _RetryableError(LLMError):
    """A failure that may pass on retry; carries the server's Retry-After in seconds when it sent one."""

    def __init__(self, message: str, hint: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message, hint, retryable=True)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date (RFC 9110); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIConfig(LLMConfig):
    """Any OpenAI-compatible chat server: vLLM, Ollama, a llama.cpp server, OpenAI."""

    backend: Literal["openai"] = "openai"
    needs_server: ClassVar[bool] = True
    base_url: str = Field("http://127.0.0.1:8000/v1", description="Root of the OpenAI-compatible API, including /v1.")
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the API key (unset is fine for local servers)."
    )
    timeout_s: float = Field(120.0, gt=0, description="Seconds to wait for data at each step of one HTTP request "
                             "(connect, each read of the reply) before retrying.")
    deadline_s: float = Field(300.0, gt=0, description="Seconds one request may take in all: connecting, waiting and "
                              "reading the whole reply, streamed or not. A request still running then is cut off "
                              "and retried like a timeout (a server that sends a byte now and then never passes "
                              "llm.timeout_s, and would hold the run forever).")
    max_retries: int = Field(4, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay in seconds; doubles per retry, with jitter.")
    concurrency: int = Field(4, ge=1, description="Most requests in flight at once.")
    stream: bool = Field(False, description="Stream tokens from the server (server-sent events) instead of one body.")

    def check_reachable(self) -> None:
        """The server answers ``GET {base_url}/models`` (every OpenAI-compatible server lists its models there)."""
        import httpx

        url = self.base_url.rstrip("/") + "/models"
        try:
            httpx.get(url, timeout=min(5.0, self.timeout_s))
        except httpx.HTTPError as exc:
            raise LLMError(
                f"the LLM server for model {self.model!r} at {self.base_url} does not answer ({type(exc).__name__})",
                hint=f"start an OpenAI-compatible server for it there (vLLM: `vllm serve {self.model}`; llama.cpp: "
                "`llama-server -m FILE.gguf`; Ollama: `ollama serve`), or set llm.base_url to the address of one "
                "(its API root, including /v1)",
                retryable=False,
            ) from exc


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The server's wait: ``retry-after-ms`` (OpenAI, Azure) first, then ``Retry-After``."""
    try:
        return max(0.0, float(headers.get("retry-after-ms", "")) / 1000)
    except (TypeError, ValueError):
        return parse_retry_after(headers.get("retry-after"))


class OpenAIBackend(BaseLLM):
    """Chat completions from an OpenAI-compatible server. ``model`` is required (what the server serves)."""

    name = "openai"
    Config = OpenAIConfig

    def __init__(
        self,
        model: str | None,
        *,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        deadline_s: float = 300.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        concurrency: int = 4,
        stream: bool = False,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        cache: LLMCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError(
                "the openai LLM backend needs a model name, and llm.model is empty",
                hint=f"{set_line('llm.model', 'NAME')}, a model your server serves (GET <base_url>/models lists them)",
            )
        if concurrency < 1 or max_retries < 0:
            raise ConfigError(f"llm.concurrency must be >= 1 and llm.max_retries >= 0, got {concurrency} and "
                              f"{max_retries}")
        super().__init__(model, temperature=temperature, max_tokens=max_tokens, seed=seed, cache=cache)
        self._openai = openai = require("openai", "llm", "the openai LLM backend")
        self.base_url = base_url.rstrip("/")
        self.server = self.base_url  # in the cache key: a fixed or different server is not answered from the cache
        self.url = f"{self.base_url}/chat/completions"
        self.api_key_env = api_key_env
        api_key = os.environ.get(api_key_env) if api_key_env else None
        self._has_key = bool(api_key)
        # The SDK refuses to start without a key, and a local server needs none: without one it gets a
        # placeholder and every request omits the Authorization header (the SDK's own opt-out).
        self._headers: dict[str, object] = {} if api_key else {"Authorization": openai.Omit()}
        # every request connects anew (no keep-alive): the deadline watches the socket it connects, and cuts it
        # when the time is up (:mod:`.deadline`); an LLM reply takes seconds, a local connect a fraction of a ms
        self._client = openai.OpenAI(api_key=api_key or "no-key", base_url=self.base_url, timeout=timeout_s,
                                     max_retries=0, http_client=deadline_client(openai, timeout_s))
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.concurrency = concurrency
        self.stream = stream
        self._sleep = sleep
        self._random = random.Random()
        self._semaphore = threading.BoundedSemaphore(concurrency)
        self.retries = 0  # retries made over this backend's lifetime (for logs and tests)

    @classmethod
    def from_config(cls, s: OpenAIConfig, ctx: BuildContext | None = None, *,
                    cache: LLMCache | None = None) -> OpenAIBackend:
        return cls(
            s.model, base_url=s.base_url, api_key_env=s.api_key_env, timeout_s=s.timeout_s, deadline_s=s.deadline_s,
            max_retries=s.max_retries, backoff_s=s.backoff_s, concurrency=s.concurrency, stream=s.stream,
            temperature=s.temperature, max_tokens=s.max_tokens, seed=s.seed, cache=cache,
        )

    # -- the retry loop and the batch ----------------------------------------------------------------
    def _generate(self, messages: list[Message], params: dict[str, object]) -> Completion:
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                with self._semaphore:
                    text, model, usage, finish = self._attempt(messages, params)
                over = finish == OVER_CAP
                return Completion(text=text, model=model, usage=usage, latency_s=time.perf_counter() - start,
                                  finish_reason="length" if over else finish, over_cap=over)
            except _RetryableError as exc:
                if attempt >= self.max_retries:
                    raise LLMError(
                        f"{exc.message} (gave up after {attempt + 1} attempts)", exc.hint, retryable=True
                    ) from exc
                delay = self._delay(attempt, exc.retry_after)
                log.warning("%s; retry %d/%d in %.2fs", exc.message, attempt + 1, self.max_retries, delay)
                self.retries += 1
                attempt += 1
                self._sleep(delay)

    def _generate_each(
        self, batch: list[list[Message]], params: dict[str, object]
    ) -> Generator[tuple[int, Completion | Exception], None, None]:
        if len(batch) <= 1 or self.concurrency == 1:
            yield from super()._generate_each(batch, params)
            return
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            futures = {pool.submit(self._generate, m, params): i for i, m in enumerate(batch)}
            try:
                for future in as_completed(futures):
                    exc = future.exception()
                    if exc is None:
                        yield futures[future], future.result()
                    elif isinstance(exc, Exception):
                        yield futures[future], exc
                    else:
                        raise exc
            finally:  # the caller stopped early: do not start what is still queued
                for future in futures:
                    future.cancel()

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Retry-After when the server gave one, else exponential backoff with "equal jitter"."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        return ceiling / 2 + self._random.uniform(0, ceiling / 2)

    # -- one attempt through the SDK -----------------------------------------------------------------
    def _attempt(self, messages: list[Message], params: dict[str, object]) -> Answer:
        """One request within llm.deadline_s; SDK errors become LLMErrors with hints, _RetryableError for what may
        pass (the deadline included)."""
        chat: Any = self._client.chat.completions
        request = {
            "model": self.model, "messages": messages, "stream": self.stream, "extra_headers": self._headers,
            # the resolved parameters travel as they are (None: not sent), extras such as top_p included
            "extra_body": {k: v for k, v in params.items() if v is not None},
        }
        deadline = Deadline(self.deadline_s)
        try:
            with deadline:
                answer = self._send(chat, request)
        except Exception as exc:  # re-raised as it is unless the deadline cut the connection (any error can follow)
            if deadline.expired:  # the deadline cut the connection: whatever error that made, it is the deadline
                raise self._past_deadline() from exc
            raise
        if deadline.expired and self.stream:  # a stream cut off by the deadline ends like a whole one
            raise self._past_deadline()
        return answer

    def _past_deadline(self) -> _RetryableError:
        return _RetryableError(
            f"{self.url} did not finish its reply within llm.deadline_s = {self.deadline_s:g} s",
            hint="the server is too slow or sends its reply a little at a time: check its load, or raise "
            "llm.deadline_s (or lower llm.max_tokens)",
        )

    def _send(self, chat: Any, request: dict[str, Any]) -> Answer:
        openai = self._openai
        try:
            if self.stream:
                return self._read_stream(chat.create(**request))
            return self._read_body(chat.with_raw_response.create(**request).http_response)
        except openai.APIStatusError as exc:
            raise self._status_error(exc.status_code, exc.response) from exc
        except openai.APITimeoutError as exc:
            raise _RetryableError(
                f"no answer from {self.url} within {self.timeout_s:g} s ({type(exc).__name__})",
                hint="raise llm.timeout_s, lower llm.concurrency or llm.max_tokens, or check the server load",
            ) from exc
        except openai.APIConnectionError as exc:
            raise _RetryableError(
                f"cannot reach {self.url}: {exc.__cause__ or exc}",
                hint="start the server, or set llm.base_url to its address including /v1",
            ) from exc

    def _status_error(self, status: int, response: Any) -> LLMError:
        message = f"{self.url} answered HTTP {status}: {_error_detail(response)}"
        if status in RETRY_STATUS or status >= 500:
            hint = ("the server is rate-limiting: lower llm.concurrency or wait" if status == 429
                    else "the server failed; check its log if this persists")
            return _RetryableError(message, hint, retry_after=retry_after_s(response.headers))
        if status in (401, 403):
            state = "set" if self._has_key else "not set"
            hint = f"put a valid API key in the environment variable {self.api_key_env} (it is {state}), " \
                   "or set llm.api_key_env to the variable that holds it"
        elif status == 404:
            hint = (f"check that llm.base_url ({self.base_url}) is the API root including /v1 and that "
                    f"llm.model ({self.model!r}) is served there")
        else:
            hint = "the server rejected the request: check llm.model and that llm.max_tokens fits its context"
        return LLMError(message, hint, retryable=False)

    def _read_body(self, response: Any) -> Answer:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LLMError(
                f"{self.url} returned a body that is not JSON: {response.text[:200]!r}",
                hint="llm.base_url must be an OpenAI-compatible API root (ending in /v1), not a web page",
                retryable=False,
            ) from exc
        if not isinstance(data, dict):
            raise LLMError(f"{self.url} returned JSON that is not an object: {str(data)[:200]!r}",
                           hint="check that llm.base_url is an OpenAI-compatible API root", retryable=False)
        choices = data.get("choices")
        if not choices or not isinstance(choices, list):
            raise LLMError(
                f"{self.url} returned no choices for model {self.model!r}",
                hint="the server or a content filter returned an empty answer; check the server log and "
                "that llm.model is loaded",
                retryable=False,
            )
        first = choices[0] if isinstance(choices[0], dict) else {}
        message = first.get("message") or {}
        text = message.get("content") if isinstance(message, dict) else None
        if text is None:
            text = first.get("text")  # some servers answer in the legacy completions shape
        if not isinstance(text, str):
            raise LLMError(f"{self.url} returned a choice without text content: {str(first)[:200]!r}",
                           hint="tool calls are not supported; ask for a plain text answer", retryable=False)
        model = str(data.get("model") or self.model)
        finish = first.get("finish_reason")
        if len(text) > MAX_REPLY_CHARS:
            log.warning("%s: the reply has %d characters; keeping the first %d", self.url, len(text),
                        MAX_REPLY_CHARS)
            text, finish = text[:MAX_REPLY_CHARS], OVER_CAP
        return text, model, _usage(data.get("usage"), self.url), finish if isinstance(finish, str) else None

    def _read_stream(self, stream: Any) -> Answer:
        """Join the streamed deltas; a stream that stalls or breaks off is retried, an error event is not."""
        openai = self._openai
        parts: list[str] = []
        model, finish = self.model, None
        usage: dict[str, int] = {}
        size = 0
        try:
            for event in stream:
                chunk = _chunk_dict(event)
                choices = (chunk.get("choices") or []) if isinstance(chunk, dict) else None
                if not isinstance(choices, list) or not all(
                    isinstance(c, dict) and isinstance(c.get("delta") or {}, dict) for c in choices
                ):
                    raise LLMError(f"{self.url} streamed a malformed chunk: {json.dumps(chunk)[:200]}",
                                   hint="the server is not OpenAI-compatible; turn streaming off "
                                   "(llm.stream=false)", retryable=False)
                model = chunk.get("model") if isinstance(chunk.get("model"), str) else model
                usage = _usage(chunk.get("usage"), self.url) or usage
                for choice in choices:
                    content = (choice.get("delta") or {}).get("content")
                    if isinstance(content, str) and content:
                        parts.append(content)
                        size += len(content)
                    reason = choice.get("finish_reason")
                    finish = reason if isinstance(reason, str) else finish
                if size > MAX_REPLY_CHARS:  # stop reading: the rest would only be thrown away
                    log.warning("%s: the streamed reply passed %d characters; keeping the first %d",
                                self.url, MAX_REPLY_CHARS, MAX_REPLY_CHARS)
                    finish = OVER_CAP
                    break
        except json.JSONDecodeError as exc:
            raise LLMError(f"{self.url} streamed a chunk that is not JSON: {exc.doc[:200]!r}",
                           hint="turn streaming off (llm.stream=false)", retryable=False) from exc
        except openai.APITimeoutError as exc:
            raise _RetryableError(f"the stream from {self.url} stalled for {self.timeout_s:g} s",
                                  hint="raise llm.timeout_s or check the server's load") from exc
        except openai.APIConnectionError as exc:
            raise _RetryableError(f"the stream from {self.url} broke off: {exc.__cause__ or exc}",
                                  hint="check the server; the call will be retried") from exc
        except openai.APIError as exc:
            raise LLMError(f"the stream from {self.url} carried an error: {exc.message}",
                           hint="check the server log; llm.stream=false shows the HTTP status instead",
                           retryable=False) from exc
        finally:
            stream.close()
        return "".join(parts)[:MAX_REPLY_CHARS], str(model), usage, finish

    def close(self) -> None:
        self._client.close()
        super().close()


def _chunk_dict(event: Any) -> Any:
    """The decoded JSON of one streamed event (the SDK hands non-object JSON through as it is)."""
    if not hasattr(event, "to_dict"):
        return event
    with warnings.catch_warnings():  # a malformed chunk is reported by the caller, not as serializer noise
        warnings.simplefilter("ignore")
        return event.to_dict()


def _usage(raw: Any, url: str = "the server") -> dict[str, int]:
    """Token counts of a reply; figures that are not finite non-negative counts (``1e999``) are dropped."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, int] = {}
    for k, v in raw.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue  # nested details (prompt_tokens_details, ...) are not counts
        if not (math.isfinite(v) and 0 <= v < 2**53):
            log.warning("%s: ignoring the usage figure %s=%r (not a token count)", url, k, v)
            continue
        out[str(k)] = int(v)
    return out


def _error_detail(response: Any) -> str:
    """The server's error message when it sent the OpenAI error shape, else the start of the body."""
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    except Exception:  # noqa: BLE001 - any unreadable body falls back to raw text
        pass
    return (response.text or "(empty body)")[:300]
