"""A local OpenAI-compatible chat server that plays a capable model from held-out gold data.

``POST /v1/chat/completions`` (a JSON body, or server-sent events when the request asks to stream) and
``GET /v1/models``. Each request is recognised by the prompt file medcite rendered (:mod:`.templates`),
answered right (:mod:`.answers`), written in a style (:mod:`.styles`: one style, or each request its own
style picked from the request's text, so a run meets all of them and a re-run the same ones), and, when a
fault class is set, broken on purpose at its rate (:mod:`.faults`). A message no prompt file produced gets
HTTP 400 and is counted: a test asserts there is none.

Every request is logged (:attr:`OracleServer.log`): the prompt, the style, the fault planted and its text.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .answers import Oracle
from .faults import CONTENT, REPLY, Planted, plant
from .gold import Gold, key
from .styles import STYLES, write
from .templates import recognise

MODEL = "oracle"


@dataclass
class Request:
    prompt: str | None
    style: str = ""
    fault: str = ""
    planted: str = ""
    retry: bool = False
    topic: str = ""  # the gold question id the answer came from ("" when none)
    sentences: int = 0  # prose: the sentences of the right answer (before any fault)
    framing: str | None = None  # the Dalhousie framing medcite applied to the request, if any


@dataclass
class OracleServer:
    """The server's settings and what it saw. ``styles``: the styles requests are written in (each request
    picks one by a hash of its messages); ``fault``/``rate``: the fault class planted and the share of the
    requests it can break that it breaks (seeded); ``timeout_s``: how long a ``timeout`` fault sleeps.
    ``degraded`` plays a weak or broken model instead of a capable one (it may be changed while the server runs,
    to play a server that is fixed between two runs): ``"ok"`` answers every prompt with the line "ok";
    ``"plain"`` answers every prompt with one plain line, the gold question itself for half of the prompts (by a
    hash of the messages; the prompt's own question when the oracle knows none) and "I cannot help with that."
    for the rest. A degraded reply is logged with the fault ``degraded``."""

    gold: Gold
    styles: Sequence[str] = ("plain",)
    fault: str | None = None
    rate: float = 0.0
    seed: int = 0
    timeout_s: float = 3.0
    degraded: str | None = None
    log: list[Request] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = [s for s in self.styles if s not in STYLES]
        if self.degraded not in DEGRADED:
            raise ValueError(f"unknown degraded mode {self.degraded!r}: one of {DEGRADED}")
        if unknown or (self.fault is not None and self.fault not in CONTENT + REPLY):
            raise ValueError(f"unknown style {unknown} or fault {self.fault!r}")
        self.oracle = Oracle(self.gold)
        self._lock = threading.Lock()
        self._rng = random.Random(self.seed)
        self._httpd: ThreadingHTTPServer | None = None

    # -- answering -----------------------------------------------------------------------------------
    def reply(self, messages: list[dict[str, Any]]) -> tuple[int, str, Request]:
        """(HTTP status, text, log entry) for one request."""
        found = recognise(messages)
        if found is None:
            return 400, "the oracle does not recognise this prompt: no prompt file of medcite renders it", Request(None)
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
        style = self.styles[digest[0] % len(self.styles)]
        entry = Request(found.name, style, retry=found.retry is not None, framing=found.framing)
        meaning = self.oracle.answer(found.name, found.values)
        if self.degraded is not None:
            entry.fault = "degraded"
            entry.topic = meaning.question.id if meaning.question is not None else ""
            with self._lock:
                self.log.append(entry)
            return 200, degraded_reply(self.degraded, meaning, found.values, digest), entry
        entry.topic = meaning.question.id if meaning.question is not None else ""
        entry.sentences = len(meaning.sentences) if meaning.kind == "prose" else 0
        if meaning.kind == "prose" and meaning.cited and meaning.question is not None:
            for text, _ in meaning.sentences:
                self.gold.written[key(text)] = meaning.question.id
        with self._lock:
            roll = self._rng.random()
        breakable = self.fault in REPLY or (meaning.kind == "prose" and meaning.cited and not entry.retry)
        if self.fault and breakable and roll < self.rate:
            entry.fault = self.fault
            if self.fault in CONTENT:
                entry.planted = plant(meaning, self.fault, self._rng)
        text = write(meaning, style)
        if entry.fault == "malformed":
            text = text[: max(1, len(text) // 2)]
        elif entry.fault == "empty":
            text = ""
        with self._lock:
            self.log.append(entry)
            if entry.fault:
                self.planted.append(Planted(entry.fault, found.name, entry.planted))
        return 200, text, entry

    def counts(self) -> Counter[str]:
        return Counter(r.prompt or "UNRECOGNISED" for r in self.log)

    # -- HTTP ----------------------------------------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve on 127.0.0.1 (a free port) for the block; yields the base URL (``http://127.0.0.1:N/v1``)."""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, text, entry = outer.reply(body.get("messages") or [])
                if status != 200:
                    with outer._lock:
                        outer.log.append(entry)
                    self._json(status, {"error": {"message": text, "type": "invalid_request_error"}})
                    return
                if entry.fault == "http500":
                    self._json(500, {"error": {"message": "oracle: planted server error", "type": "server_error"}})
                    return
                if entry.fault == "timeout":
                    time.sleep(outer.timeout_s)
                if entry.fault == "malformed" and not body.get("stream"):
                    data = json.dumps(completion(text, body.get("model")))
                    self._raw(200, data[: len(data) // 2].encode())
                    return
                if body.get("stream"):
                    self._stream(text, body.get("model"))
                else:
                    self._json(200, completion(text, body.get("model")))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                self._raw(status, json.dumps(payload).encode())

            def _raw(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a planted timeout)

            def _stream(self, text: str, model: str | None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                pieces = [text[i:i + 40] for i in range(0, len(text), 40)] or [""]
                for piece in pieces:
                    delta = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                    chunk = {"model": model, "choices": [delta]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                end = {"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        finally:
            httpd.shutdown()
            httpd.server_close()


DEGRADED = (None, "ok", "plain")
PLAIN_LINE = "I cannot help with that."


def degraded_reply(mode: str, meaning: Any, values: dict[str, Any], digest: bytes) -> str:
    """What a ``degraded`` server answers (see :class:`OracleServer`)."""
    if mode == "ok":
        return "ok"
    question = meaning.question.body if meaning.question is not None else str(values.get("question") or "")
    question = " ".join(question.split())
    return question if question and digest[1] % 2 == 0 else PLAIN_LINE


def completion(text: str, model: str | None) -> dict[str, Any]:
    return {"id": "oracle-1", "object": "chat.completion", "created": int(time.time()), "model": model or MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": max(1, len(text.split())), "total_tokens": 2}}


def llm_overrides(url: str, llm_names: Sequence[str] = (), *, timeout_s: float = 60.0,
                  max_retries: int = 2, cache_dir: str | Path | None = None) -> list[str]:
    """``--set`` values pointing the default LLM and each named one at the oracle (no cache: every call is
    answered by the server, so what it planted is what the run read; ``cache_dir``: the LLM cache on, in that
    folder)."""
    cache = ["cache=false"] if cache_dir is None else ["cache=true", f"cache_dir={cache_dir}"]
    out = []
    for prefix in ("llm", *(f"llms.{n}" for n in llm_names)):
        out += [f"{prefix}.backend=openai", f"{prefix}.base_url={url}", f"{prefix}.model={MODEL}",
                *(f"{prefix}.{c}" for c in cache), f"{prefix}.timeout_s={timeout_s}",
                f"{prefix}.max_retries={max_retries}", f"{prefix}.backoff_s=0.05"]
    return out
