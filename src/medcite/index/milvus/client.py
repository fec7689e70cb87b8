"""The connection to a Milvus server: one pymilvus ``MilvusClient`` per settings, and medcite errors for
what goes wrong on the wire.

The same client talks to a single node, a cluster (through its proxy) and Zilliz Cloud; ``index.milvus.uri``
says which, and the token (``user:password`` or an API key) comes from the environment variable named by
``index.milvus.token_env``, so it never lands in settings or run directories.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import ConfigError, IndexMismatchError, InputError, MedciteError
from ...registry import require
from ...set_option import set_line

if TYPE_CHECKING:
    from ...milvus_settings import MilvusSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

#: how to start a server for a URI on this machine (the loopback server the tests use)
START_HINT = (
    "start one (single node: `milvus-lite server --data-dir DIR --host 127.0.0.1 --port 19530`, or Milvus "
    f"standalone in Docker; see docs/SEARCH.md, 'Milvus'), or point {set_line('index.milvus.uri', '...')} at a "
    "running one"
)
#: tries at opening a connection before the server is reported unreachable (pauses 1, 2 s between them)
CONNECT_ATTEMPTS = 3
#: Milvus 2.x status codes (merr) of authentication failures
_AUTH_CODES = {1800, 1801, 1802, 1803}


def pymilvus() -> ModuleType:
    """The pymilvus module, or MissingExtraError naming the ``milvus`` extra."""
    module = require("pymilvus", "milvus", "the Milvus index backends")
    # pymilvus logs every failed call at ERROR with a traceback; medcite reports them as its own errors
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    return module


def token(server: MilvusSettings) -> str:
    return os.environ.get(server.token_env, "") if server.token_env else ""


def connect(server: MilvusSettings) -> Any:
    """A connected ``MilvusClient``; unreachable server, refused credentials or a missing database raise
    medcite errors that name the URI and the fix."""
    pm = pymilvus()
    secret = token(server)
    kwargs: dict[str, Any] = {"uri": server.uri, "timeout": server.timeout_s}
    if secret:
        kwargs["token"] = secret
    if server.db_name:
        kwargs["db_name"] = server.db_name
    # pymilvus retries RPCs on an open connection, not the opening itself: a server that has just sent GOAWAY
    # (gRPC keepalive throttling, "too_many_pings") or is starting refuses for a moment, so the opening is
    # tried CONNECT_ATTEMPTS times with a doubling pause before "cannot reach" is reported
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        client = None
        try:
            client = pm.MilvusClient(**kwargs)
            client.list_collections(timeout=server.timeout_s)  # a call that needs the credentials
            return client
        except Exception as exc:  # noqa: BLE001 - pymilvus raises MilvusException or bare grpc errors
            error = translate(exc, server, "connecting")
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
            if not error.message.startswith("cannot reach") or attempt == CONNECT_ATTEMPTS:
                raise error from None
            log.warning("%s; trying again in %.0f s (%d/%d)", error.message, 2 ** (attempt - 1), attempt,
                        CONNECT_ATTEMPTS)
            time.sleep(2 ** (attempt - 1))
    raise AssertionError("unreachable")  # the loop returns or raises


def translate(exc: BaseException, server: MilvusSettings, doing: str, collection: str | None = None) -> MedciteError:
    """A medcite error for a pymilvus or gRPC failure while ``doing`` something with the server."""
    if isinstance(exc, MedciteError):
        return exc
    code, message = _code_and_message(exc)
    low = message.lower()
    where = f"the Milvus server at {server.uri}"
    if _is_auth(code, low):
        return ConfigError(
            f"{where} refused the credentials while {doing} ({message})",
            hint=f"put valid credentials ('user:password' or an API key) in the environment variable "
            f"{server.token_env}" + ("" if os.environ.get(server.token_env) else " (it is not set now)"),
        )
    if "fail connecting" in low or "unavailable" in low or "failed to connect" in low or "deadline" in low:
        return InputError(
            f"cannot reach {where} while {doing} ({message})",
            hint=START_HINT,
        )
    if "database" in low and ("not found" in low or "not exist" in low):
        return ConfigError(
            f"{where} has no database {server.db_name!r} ({message})",
            hint="create it (client.create_database) or leave index.milvus.db_name empty for the default one",
        )
    if collection and ("not exist" in low or "not found" in low) and "collection" in low:
        return missing_collection(server, collection)
    if "dim" in low and ("mismatch" in low or "expected" in low or "different" in low):
        return IndexMismatchError(
            f"{where}: vector dimension mismatch while {doing} ({message})",
            hint="use the encoder the collection was built with, or rebuild it: medcite index milvus --rebuild",
        )
    return InputError(f"{where} failed while {doing}: {message}",
                      hint="check the server's log; the call can be retried once the server is healthy")


def missing_collection(server: MilvusSettings, collection: str) -> InputError:
    return InputError(
        f"the Milvus server at {server.uri} has no collection {collection!r}",
        hint="build it from the document store: medcite index milvus --store STORE (with the same --preset "
        f"and --set options, e.g. {set_line('index.backend', 'milvus')} {set_line('index.milvus.uri', server.uri)})",
    )


def call(server: MilvusSettings, doing: str, fn: Callable[[], T], collection: str | None = None) -> T:
    """Run one client call, turning its failure into a medcite error."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - see translate
        raise translate(exc, server, doing, collection) from None


def _code_and_message(exc: BaseException) -> tuple[int | None, str]:
    cause = exc.__cause__
    if cause is not None and callable(getattr(cause, "code", None)):
        # pymilvus wraps a refused handshake as "Fail connecting ...": the gRPC status under it says why
        status = cause.code()  # type: ignore[attr-defined]
        if getattr(status, "name", "") in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            exc = cause
    code = getattr(exc, "code", None)
    if callable(code):  # a grpc.RpcError: code() is a grpc.StatusCode
        status = code()
        details = getattr(exc, "details", lambda: "")() or ""
        auth = getattr(status, "name", "") in ("UNAUTHENTICATED", "PERMISSION_DENIED")
        return (16 if auth else None), f"{status.name}: {details}"
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return (code if isinstance(code, int) else None), str(message)


def _is_auth(code: int | None, low: str) -> bool:
    if code == 16 or "unauthenticated" in low or "auth check fail" in low or "authenticat" in low:
        return True
    return code in _AUTH_CODES
