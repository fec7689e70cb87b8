"""A loopback Milvus Lite server for the tests: started in a temporary folder on a free port, waited for,
stopped. ``milvus-lite server`` is the real Milvus gRPC protocol, so pymilvus talks to it as to any server.

``python tests/milvus_server.py --auth user:password DATA PORT`` serves the same with Milvus's
authentication in front (a wrong token gets gRPC UNAUTHENTICATED and Milvus's own message), which Milvus
Lite lacks; the test of refused credentials runs against it.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

READY_S = 90.0


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(data_dir: Path, *, auth: str | None = None) -> Iterator[str]:
    """Start a server on 127.0.0.1, wait until it answers, yield its URI, stop it."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir.parent / f"milvus-{port}.log", "wb")  # noqa: SIM115 - closed below
    if auth is None:
        cmd = [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir), "--host", "127.0.0.1",
               "--port", str(port)]
    else:
        cmd = [sys.executable, __file__, "--auth", auth, str(data_dir), str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    uri = f"http://127.0.0.1:{port}"
    try:
        _wait(proc, port, data_dir.parent / f"milvus-{port}.log")
        yield uri
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


def _wait(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"milvus-lite server exited with {proc.returncode}: {log.read_text(errors='replace')}")
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"milvus-lite server did not listen on port {port} within {READY_S:.0f} s")


def _serve_with_auth(secret: str, data_dir: str, port: int) -> None:
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from pymilvus.grpc_gen import milvus_pb2_grpc

    wanted = base64.b64encode(secret.encode()).decode()

    def deny(request: object, context: grpc.ServicerContext) -> None:
        # Milvus's proxy answers a bad or missing token so (internal/proxy/authentication_interceptor.go)
        context.abort(grpc.StatusCode.UNAUTHENTICATED,
                      "auth check failure, please check username, password or API key are correct")

    class Auth(grpc.ServerInterceptor):
        def intercept_service(self, continuation, details):  # type: ignore[no-untyped-def]
            metadata = dict(details.invocation_metadata or ())
            if metadata.get("authorization") != wanted:
                return grpc.unary_unary_rpc_method_handler(deny)
            return continuation(details)

    db = MilvusLite(data_dir)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[Auth()])
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        server.wait_for_termination()
    finally:
        db.close()


if __name__ == "__main__":
    if sys.argv[1:2] != ["--auth"] or len(sys.argv) != 5:
        raise SystemExit("usage: milvus_server.py --auth USER:PASSWORD DATA_DIR PORT")
    _serve_with_auth(sys.argv[2], sys.argv[3], int(sys.argv[4]))
