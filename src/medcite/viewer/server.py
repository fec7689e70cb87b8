"""Run the viewer with uvicorn in a background thread on a free loopback port (tests, scripts, notebooks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import MissingExtraError


@contextmanager
def serve_in_thread(runs_dir: Path, host: str = "127.0.0.1", timeout_s: float = 15.0) -> Iterator[str]:
    """Serve ``runs_dir`` until the block ends; yields the base URL (``http://127.0.0.1:PORT``).

    The listening socket is bound before the server starts (port 0), so there is no race for the port.
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "web", "the run viewer") from exc
    from .app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(Path(runs_dir)), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name="medcite-viewer")
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the viewer did not start on {host}:{port} within {timeout_s} s")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout_s)
        sock.close()
