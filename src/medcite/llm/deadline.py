"""An overall deadline per HTTP request to an LLM server: connecting, waiting and reading the whole reply.

httpx bounds each step (``timeout_s``: a connect, one read), not a request: a server that sends its headers and
then a byte every two seconds never lets one read wait ``timeout_s``, and would hold a run forever. A
:class:`Deadline` bounds the request as a whole. While one is active (``with deadline:``, in the thread that sends
the request), the request hook of :func:`deadline_client`

- caps every step's timeout (connect, read, write, pool) at the time left, and
- asks httpcore (its documented ``trace`` extension) for the connection's socket as soon as it is connected;

when the time is up, a timer shuts that socket down, which ends the read that waits on it at once, whatever the
server sends. The caller sees the error this causes (a broken connection), finds :attr:`Deadline.expired` set and
reports the deadline instead. Every request connects anew (the client keeps no idle connection), so every request's
socket is known from its start; with an LLM's replies taking seconds, the connect costs nothing that shows.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

_current = threading.local()


class Deadline:
    """The deadline of one request, ``seconds`` from when the ``with`` block starts (see the module docstring)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._at = 0.0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Deadline:
        self._at = time.monotonic() + self.seconds
        self._timer = threading.Timer(self.seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()
        _current.deadline = self
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _current.deadline = None
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._sockets.clear()

    def left(self) -> float:
        """Seconds left (0 once expired)."""
        return max(0.0, self._at - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        """Cut ``sock`` when the time is up (at once when it already is)."""
        with self._lock:
            if not self.expired:
                self._sockets.append(sock)
                return
        _cut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _cut(sock)

    def trace(self, event: str, info: Mapping[str, object]) -> None:
        """httpcore's trace callback: the socket of each new connection is watched."""
        if event.endswith((".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")):
            extra = getattr(info.get("return_value"), "get_extra_info", None)
            sock = extra("socket") if callable(extra) else None
            if isinstance(sock, socket.socket):
                self.watch(sock)


def _cut(sock: socket.socket) -> None:
    """Shut the socket down for reading and writing: a read blocked on it returns at once. The plain socket's
    shutdown, not an SSL socket's own (which also drops its TLS state under the reading thread)."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _on_request(request: httpx.Request) -> None:
    """httpx request hook: a request sent inside a :class:`Deadline` gets step timeouts capped at the time left
    and its connection's socket watched."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is None:
        return
    left = max(deadline.left(), 0.001)
    timeout = dict(request.extensions.get("timeout") or {})
    for step in ("connect", "read", "write", "pool"):
        value = timeout.get(step)
        timeout[step] = left if value is None else min(float(value), left)
    request.extensions["timeout"] = timeout
    request.extensions["trace"] = deadline.trace


def deadline_client(openai: ModuleType, timeout_s: float) -> httpx.Client:
    """The httpx client of an OpenAI SDK client whose requests keep their :class:`Deadline`: the SDK's default
    client (its redirects, proxies from the environment, TLS), with no idle connections and the request hook."""
    import httpx

    client: httpx.Client = openai.DefaultHttpxClient(
        timeout=timeout_s, limits=httpx.Limits(max_connections=1000, max_keepalive_connections=0),
        event_hooks={"request": [_on_request]},
    )
    return client
