"""Every LLM call traced as one JSON line of the run's ``trace.jsonl`` (docs/RUNDIR.md), and every reply medcite
rejected as one more line (``"event": "rejected"``, the call's ``key`` and the reason).

Pipeline code says where to write and what the call is for; the backends record automatically:

    with trace_to(run_dir / "trace.jsonl"), trace_context(topic_id=topic.id):
        with trace_context(stage="reformulation"):
            llm.complete(...)

Both are :mod:`contextvars`, so they follow the code that sets them (threads started with
``contextvars.copy_context().run`` inherit them; plain thread-pool workers do not, which is why
:meth:`medcite.llm.base.BaseLLM.complete_many` records in the calling thread).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..write_failures import RUN_KEPT, write_failure

if TYPE_CHECKING:
    from .completion import Completion, Message

log = logging.getLogger(__name__)


class TraceWriter:
    """Appends JSON lines to one file; safe to share between threads.

    Each line is flushed as it is written (a reader such as the viewer sees it at once) and the file is
    fsynced once, by :meth:`sync` or :meth:`close`: a run directory fsyncs a topic's trace when the topic
    ends, before its answer line is written (docs/RUNDIR.md). Writing after :meth:`close` reopens the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None

    def write(self, row: dict[str, object]) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock, self._refused():
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")  # kept open until close()
            self._fh.write(line)
            self._fh.flush()

    def sync(self) -> None:
        """Make every line written so far durable."""
        with self._lock, self._refused():
            if self._fh is not None:
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Fsync and close the file (a no-op when nothing was written since the last close)."""
        with self._lock, self._refused():
            if self._fh is not None:
                os.fsync(self._fh.fileno())  # every line was flushed as it was written
                fh, self._fh = self._fh, None
                fh.close()

    @contextmanager
    def _refused(self) -> Iterator[None]:
        """A write the file system refuses (full disk, file-size limit) becomes one error naming the file; the
        run directory drops the unfinished topic's lines when it is opened again."""
        try:
            yield
        except OSError as exc:
            failed = write_failure(exc, self.path, kept=RUN_KEPT)
            if failed is None:
                raise
            if self._fh is not None:  # a half-written buffer would be written again on close: let it go
                fh, self._fh = self._fh, None
                with suppress(OSError):
                    fh.close()
            raise failed from exc

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WRITER: ContextVar[TraceWriter | None] = ContextVar("medcite_llm_trace_writer", default=None)
_CONTEXT: ContextVar[dict[str, object]] = ContextVar("medcite_llm_trace_context", default={})  # noqa: B039


@contextmanager
def trace_to(path: str | Path | TraceWriter | None) -> Iterator[TraceWriter | None]:
    """Send the trace of every LLM call made inside this block to ``path`` (None: no trace).

    A writer made here from a path is closed (fsynced) when the block ends; one passed in stays open.
    """
    owned: TraceWriter | None = None
    if isinstance(path, TraceWriter) or path is None:
        writer = path
    else:
        writer = owned = TraceWriter(path)
    token = _WRITER.set(writer)
    try:
        yield writer
    finally:
        _WRITER.reset(token)
        if owned is not None:
            owned.close()


@contextmanager
def trace_context(**fields: object) -> Iterator[dict[str, object]]:
    """Label the calls made inside this block (``topic_id``, ``stage``); nested blocks add or override."""
    merged = {**_CONTEXT.get(), **fields}
    token = _CONTEXT.set(merged)
    try:
        yield merged
    finally:
        _CONTEXT.reset(token)


def current_context() -> dict[str, object]:
    return dict(_CONTEXT.get())


def _row(backend: str, model: str, messages: Sequence[Message], params: dict[str, object]) -> dict[str, object]:
    ctx = _CONTEXT.get()
    row: dict[str, object] = {"topic_id": ctx.get("topic_id"), "stage": ctx.get("stage")}
    row.update({k: v for k, v in ctx.items() if k not in row})
    row.update({"backend": backend, "model": model, "messages": list(messages), "params": params})
    return row


def record(
    backend: str, model: str, messages: Sequence[Message], params: dict[str, object], completion: Completion
) -> None:
    """Write one trace line for a finished call (no-op outside :func:`trace_to`)."""
    outcome: dict[str, object] = {
        "output": completion.text,
        "response_model": completion.model,
        "usage": completion.usage,
        "latency_s": round(completion.latency_s, 6),
        "cache_hit": completion.cache_hit,
    }
    if completion.key:
        outcome["key"] = completion.key
    _write_call(backend, model, messages, params, outcome)


def _write_call(backend: str, model: str, messages: Sequence[Message], params: dict[str, object],
                outcome: dict[str, object]) -> None:
    """Write the trace line of one call: its labels and request (:func:`_row`), then ``outcome``."""
    writer = _WRITER.get()
    if writer is None:
        return
    row = _row(backend, model, messages, params)
    row.update(outcome)
    writer.write(row)


def record_rejection(backend: str, model: str, key: str, reason: str,
                     context: dict[str, object] | None = None) -> None:
    """Write one ``rejected`` line: the call whose ``key`` it names gave a reply medcite could not use (no-op
    outside :func:`trace_to`). ``context``: the labels of that call (default: the current ones). It is not a
    call: readers that count calls skip lines with an ``event``."""
    writer = _WRITER.get()
    if writer is None:
        return
    ctx = {**_CONTEXT.get(), **(context or {})}
    row: dict[str, object] = {"topic_id": ctx.get("topic_id"), "stage": ctx.get("stage")}
    row.update({k: v for k, v in ctx.items() if k not in row})
    row.update({"event": "rejected", "backend": backend, "model": model, "key": key, "reason": reason})
    writer.write(row)


def record_error(
    backend: str, model: str, messages: Sequence[Message], params: dict[str, object], error: Exception
) -> None:
    """Write one trace line for a call that failed (``output`` empty, ``error`` says why)."""
    _write_call(backend, model, messages, params,
                {"output": "", "latency_s": None, "cache_hit": False, "error": str(error)})
