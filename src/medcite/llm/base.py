"""The LLM protocol and the shared base class every backend extends (the build context makes them).

A backend implements only :meth:`BaseLLM._generate` (and, when it can run requests in parallel,
:meth:`BaseLLM._generate_each`). The base class resolves default parameters, looks each request up in the
persistent cache (:mod:`medcite.llm.cache`) and records every call to the run's ``trace.jsonl``
(:mod:`medcite.llm.trace`), so all backends behave the same way for re-runs and inspection.

A batch is never all-or-nothing: each answer goes into the cache the moment it arrives, a request that fails
with an :class:`~medcite.errors.LLMError` does not stop the others, and only when the whole batch is done is
the first failure raised. A re-run after a failure therefore pays only for the requests that failed.

A caller that cannot use a reply (it does not parse, or breaks the answer's rules, and the caller falls back
or retries) says so with :func:`reject`: the reply stays in the cache marked rejected, with the reason, and is
never replayed, so the next run asks the server again; the trace gets a ``rejected`` line naming the call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, NoReturn, Protocol, runtime_checkable

from pydantic import Field

from ..errors import LLMError
from ..settings_base import BackendConfig
from . import trace
from .cache import cache_key
from .completion import Completion, Message

if TYPE_CHECKING:
    from .cache import LLMCache

log = logging.getLogger(__name__)


class LLMConfig(BackendConfig):
    """Base of every LLM backend's settings (``settings.llm``, and each named entry of ``settings.llms``)."""

    model: str | None = Field(
        None, description="Model name. Required for 'openai'; for 'local'/'llamacpp' None means the packaged "
        "SmolLM2-135M-Instruct GGUF, else a Hugging Face model name or local folder/file."
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature; 0 is greedy and deterministic.")
    max_tokens: int = Field(512, ge=1, description="Most tokens generated per call.")
    seed: int | None = Field(0, description="Sampling seed sent with every call (None: not sent).")
    cache: bool = Field(True, description="Keep every completion in a persistent cache so re-runs make no calls.")
    cache_dir: str | None = Field(
        None, description="Folder of the LLM cache (None: $MEDCITE_CACHE_DIR or ~/.cache/medcite)."
    )

    #: what the offline swap sets over this LLM's settings to run it on this machine (the packaged SmolLM2,
    #: in-process); None for a backend that already runs in process
    offline_stand_in: ClassVar[dict[str, object] | None] = {"backend": "local", "model": None}
    #: True for a backend that answers no call (``none``): a stage that needs an LLM stops before any work
    calls_nothing: ClassVar[bool] = False
    #: True for a backend that calls a server at ``base_url`` (checked before a run starts)
    needs_server: ClassVar[bool] = False
    #: the model it runs when ``model`` is None (a packaged one), as named in model listings
    packaged_model: ClassVar[str | None] = None

    def check_reachable(self) -> None:
        """Raise :class:`~medcite.errors.LLMError` (or a ConfigError), before any work, when what this backend
        calls is not there -- a server that does not answer, a model file missing from this machine -- with this
        backend's own hint. The build context calls it before making the LLM. Default: nothing to reach."""


@runtime_checkable
class LLM(Protocol):
    """A chat model. ``name`` is the backend name (``openai``, ``local``, ``llamacpp``, ``none``)."""

    name: str
    model: str

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **params: object,
    ) -> Completion:
        """Answer one chat; ``None`` parameters take the backend's defaults (from the settings)."""
        ...

    def complete_many(
        self,
        batch: Sequence[list[Message]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **params: object,
    ) -> list[Completion]:
        """Answer many chats (in parallel where the backend can); results keep the input order."""
        ...


def validate_messages(messages: Sequence[Message]) -> list[Message]:
    """Check the chat shape early, with a message that says what was received."""
    if not messages:
        raise ValueError("messages is empty: pass at least one {'role': ..., 'content': ...} dict")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"message {i} is {m!r}: each message needs 'role' and 'content' keys")
        if m["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"message {i} has role {m['role']!r}: use 'system', 'user' or 'assistant'")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


class BaseLLM:
    """Shared behaviour: default parameters, the persistent cache and the trace."""

    name: str = "base"
    #: where the model runs, part of the cache key (an ``openai`` backend's base URL; "" for in-process models,
    #: whose ``model`` already names the file or folder)
    server: str = ""

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        cache: LLMCache | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.cache = cache
        # the trace labels (topic, stage, attempt) of recent calls by key, for the rejected line of a reply that
        # is read after its call's trace_context block ended
        self._labels: dict[str, dict[str, object]] = {}
        self._labels_lock = threading.Lock()

    # -- what a backend implements -------------------------------------------------------------------
    def _generate(self, messages: list[Message], params: dict[str, object]) -> Completion:
        raise NotImplementedError

    def _generate_each(
        self, batch: list[list[Message]], params: dict[str, object]
    ) -> Generator[tuple[int, Completion | Exception], None, None]:
        """Yield ``(position in batch, answer or the exception it raised)`` as each request finishes.

        Any order is allowed. The caller stops iterating (closing this generator) on an exception that is
        not an :class:`LLMError`; a backend that runs requests in parallel cancels what has not started.
        """
        for i, messages in enumerate(batch):
            try:
                yield i, self._generate(messages, params)
            except Exception as exc:  # noqa: BLE001 - handed to complete_many, which decides
                yield i, exc

    # -- public API ----------------------------------------------------------------------------------
    def resolve_params(
        self,
        temperature: float | None,
        max_tokens: int | None,
        stop: Sequence[str] | None,
        seed: int | None,
        params: dict[str, object],
    ) -> dict[str, object]:
        """The full parameter set of a call (part of the cache key): defaults filled in, stop as a list."""
        resolved: dict[str, object] = {
            "temperature": float(self.temperature if temperature is None else temperature),
            "max_tokens": int(self.max_tokens if max_tokens is None else max_tokens),
            "stop": list(stop) if stop else None,
            "seed": self.seed if seed is None else seed,
        }
        resolved.update(params)
        return resolved

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **params: object,
    ) -> Completion:
        return self.complete_many(
            [messages], temperature=temperature, max_tokens=max_tokens, stop=stop, seed=seed, **params
        )[0]

    def complete_many(
        self,
        batch: Sequence[list[Message]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **params: object,
    ) -> list[Completion]:
        chats = [validate_messages(m) for m in batch]
        resolved = self.resolve_params(temperature, max_tokens, stop, seed, params)
        results: list[Completion | None] = [None] * len(chats)
        # every request is keyed, cache or not: the key names the call in the trace and in reject()
        keys = [cache_key(self.name, self.model, chat, resolved, self.server) for chat in chats]
        if self.cache is not None:
            for i, key in enumerate(keys):
                start = time.perf_counter()
                hit = self.cache.get(key)
                if hit is not None:
                    results[i] = replace(hit, latency_s=time.perf_counter() - start, cache_hit=True, key=key)
        todo = [i for i, r in enumerate(results) if r is None]
        failed: dict[int, LLMError] = {}
        outcomes = self._generate_each([chats[i] for i in todo], resolved) if todo else None
        try:
            for j, outcome in outcomes or ():
                i = todo[j]
                if isinstance(outcome, Completion):
                    results[i] = outcome = replace(outcome, key=keys[i])
                    if self.cache is not None:  # at once: a later failure loses nothing
                        self.cache.put(keys[i], self.name, self.model, chats[i], resolved, outcome, self.server)
                    continue
                if not isinstance(outcome, LLMError):
                    raise outcome  # a defect or a configuration error: the other requests would fail alike
                failed[i] = outcome
                self._log_failure(i, len(chats), outcome)
        finally:
            if outcomes is not None:
                outcomes.close()  # a parallel backend cancels the requests not yet started
            self._trace(chats, resolved, results, failed)
        for result in results:  # a runaway reply is used as cut, never replayed from the cache as a good one
            if result is not None and result.over_cap:
                self.reject(result, f"the reply passed the reply cap and was cut at {len(result.text):,} characters")
        if failed:
            self._raise_failure(failed, len(chats))
        return [_visible(r) for r in results if r is not None]

    def reject(self, completion: Completion, reason: str) -> None:
        """Mark ``completion`` as a reply medcite could not use: kept in the cache with ``reason`` but never
        replayed (the next run asks again), and a ``rejected`` line in the trace. Call it through :func:`reject`."""
        if not completion.key:
            return
        kept = self.cache.reject(completion.key, reason) if self.cache is not None else False
        with self._labels_lock:
            labels = self._labels.get(completion.key, {})
        ctx = {**trace.current_context(), **labels}
        log.info("topic %s: a %s reply of %s %s was rejected (%s)%s", ctx.get("topic_id"), ctx.get("stage") or "",
                 self.name, self.model, reason, "; the cache will not replay it" if kept else "")
        trace.record_rejection(self.name, self.model, completion.key, reason, labels)

    def _trace(self, chats: list[list[Message]], params: dict[str, object], results: list[Completion | None],
               failed: dict[int, LLMError]) -> None:
        """One trace line per request that finished or failed, in input order (none for a request never sent)."""
        labels = trace.current_context()
        with self._labels_lock:
            for key in (r.key for r in results if r is not None and r.key):
                self._labels.pop(key, None)
                self._labels[key] = labels
            while len(self._labels) > 256:  # a reply is read soon after its call
                self._labels.pop(next(iter(self._labels)))
        for i, chat in enumerate(chats):
            completion = results[i]
            if completion is not None:
                trace.record(self.name, self.model, chat, params, completion)
            elif i in failed:
                trace.record_error(self.name, self.model, chat, params, failed[i])

    def _log_failure(self, position: int, size: int, error: LLMError) -> None:
        ctx = trace.current_context()
        log.warning("LLM request %d of a batch of %d failed (topic %s, stage %s; %s %s): %s", position, size,
                    ctx.get("topic_id"), ctx.get("stage"), self.name, self.model, error.message)

    def _raise_failure(self, failed: dict[int, LLMError], size: int) -> NoReturn:
        """Raise the failure at the lowest position; in a batch of several, say how many failed."""
        position = min(failed)
        first = failed[position]
        if size == 1:
            raise first
        kept = "; the answers that arrived are cached" if self.cache is not None else ""
        raise LLMError(
            f"{first.message} (batch of {size}: {len(failed)} failed, the first at position {position}{kept})",
            first.hint, retryable=first.retryable,
        ) from first

    def close(self) -> None:
        """Release connections or models held by the backend (the base holds only the cache)."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> BaseLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


def reject(llm: LLM | None, completion: Completion, reason: str) -> None:
    """Say that ``completion`` (a reply of ``llm``) was not used: it failed parsing or validation and the caller
    falls back, retries or leaves the output out. The cache keeps it, marked with ``reason``, and never replays it.

    Every call site that reads a reply uses this one line; an LLM without a ``reject`` method (a test double that
    only implements the :class:`LLM` protocol) is left alone.
    """
    mark = getattr(llm, "reject", None)
    if callable(mark):
        mark(completion, reason)


def llm_enabled(llm: LLM | None) -> bool:
    """False for the ``none`` backend: callers then take their extractive (no-LLM) path."""
    return llm is not None and llm.name != "none"


def _visible(completion: Completion) -> Completion:
    """The completion with a reasoning model's ``<think>`` block moved from its text to ``reasoning`` (the
    cache and the trace keep the reply as the server sent it)."""
    if "think>" not in completion.text.lower():
        return completion
    from .reply import split_reasoning

    reasoning, answer = split_reasoning(completion.text)
    return replace(completion, text=answer, reasoning=reasoning)
