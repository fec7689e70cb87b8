"""Fixtures of the llm tests: a real OpenAI-compatible HTTP server on 127.0.0.1 and a scripted LLM.

The server answers ``POST /v1/chat/completions`` from a script of actions (normal answer, malformed JSON,
empty choices, slow answer, any HTTP status with headers, a server-sent-event stream that may stall or carry
an error event); when the script is empty it echoes the last user message. ``by_content`` maps a last user
message to the action for it, whatever the order requests arrive in (a parallel batch). It records every
request it received.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from medcite.llm.base import BaseLLM, Completion, Message


class FakeOpenAIServer:
    """A scripted OpenAI-compatible chat server running in a thread."""

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.by_content: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    # the parsed headers, not a dict: header names are case-insensitive (RFC 9110), and
                    # `"Authorization" in headers` must hold whatever case the client sent
                    outer.requests.append({"path": self.path, "headers": self.headers, "body": body})
                    users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
                    action = outer.by_content.get(users[-1] if users else "")
                    if action is None:
                        action = outer.script.popleft() if outer.script else {"kind": "echo"}
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                self._in_flight = True
                try:
                    self._act(action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    self._answered()

            def send_response(self, code: int, message: str | None = None) -> None:
                # a request stops being in flight when its answer starts: the client may send the next one
                # as soon as it has read this answer, before this handler thread returns
                self._answered()
                super().send_response(code, message)

            def _answered(self) -> None:
                if getattr(self, "_in_flight", False):
                    self._in_flight = False
                    with outer._lock:
                        outer.in_flight -= 1

            def _act(self, action: dict[str, Any], body: dict[str, Any]) -> None:
                kind = action["kind"]
                if action.get("delay"):
                    time.sleep(action["delay"])
                if kind == "echo":
                    user = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
                    self._send(200, completion_json(f"echo: {user[-1] if user else ''}", body.get("model")))
                elif kind == "ok":
                    self._send(200, completion_json(action["text"], body.get("model")))
                elif kind == "malformed":
                    self._raw(200, b'{"choices": [{"message": {"content": "trunc', "application/json")
                elif kind == "empty":
                    self._send(200, {"id": "x", "object": "chat.completion", "model": body.get("model"),
                                     "choices": []})
                elif kind == "status":
                    self._send(action["status"], action.get("json", {"error": {"message": "scripted failure"}}),
                               headers=action.get("headers", {}))
                elif kind == "raw":  # a JSON body exactly as given
                    self._raw(200, action["data"].encode(), "application/json")
                elif kind == "rawstream":  # server-sent events exactly as given
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for data in action["events"]:
                        self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                elif kind == "stream":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for n, piece in enumerate(action["pieces"]):
                        chunk = {"model": body.get("model"),
                                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if n == 0 and action.get("stall"):  # the stream stops in the middle for a while
                            time.sleep(action["stall"])
                    if action.get("error"):  # a server that fails mid-answer sends an error event
                        self.wfile.write(f"data: {json.dumps({'error': {'message': action['error']}})}\n\n".encode())
                    end = {"model": body.get("model"), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                    self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                    self.wfile.flush()
                elif kind == "drip":  # a server that sends a byte now and then: no read ever waits long
                    self._drip(action, body)
                else:
                    raise ValueError(kind)

            def _drip(self, action: dict[str, Any], body: dict[str, Any]) -> None:
                """One byte every ``every`` seconds (at most ``seconds`` long): of the reply's body, of its headers
                too with ``headers``, or of an endless event stream when the request streams."""
                every, end = action.get("every", 0.1), time.monotonic() + action.get("seconds", 10.0)
                data = json.dumps(completion_json("x" * 200, body.get("model"))).encode()
                head = (f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                        ).encode()
                if body.get("stream"):
                    head = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
                    data = f"data: {json.dumps(chunk)}\n\n".encode() * 10_000
                self._answered()
                if not action.get("headers"):
                    self.wfile.write(head)
                    head = b""
                for byte in head + data:
                    if time.monotonic() > end:
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(every)

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._raw(status, json.dumps(payload).encode(), "application/json", headers)

            def _raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *actions: dict[str, Any]) -> None:
        self.script.extend(actions)


def completion_json(text: str, model: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model or "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


class ScriptedLLM(BaseLLM):
    """A fake LLM for stage tests: answers from a list (or a function of the messages), records prompts."""

    name = "scripted"

    def __init__(self, answers: Sequence[str] | Any = (), *, cache: Any = None) -> None:
        super().__init__("scripted-model", cache=cache)
        self.answers = list(answers) if not callable(answers) else answers
        self.prompts: list[list[Message]] = []

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.prompts.append(messages)
        if callable(self.answers):
            text = self.answers(messages)
        else:
            text = self.answers.pop(0)
        return Completion(text=text, model=self.model, latency_s=0.0)


@pytest.fixture
def scripted_llm() -> type[ScriptedLLM]:
    return ScriptedLLM
