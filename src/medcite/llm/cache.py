"""Persistent LLM cache: a re-run with the same requests makes no model calls and gives identical output.

One SQLite file; the key is the SHA-256 of the canonical JSON of (backend, model, messages, params), where
params are the fully resolved call parameters (temperature, max_tokens, stop, seed and any extras). The
request itself is stored beside the answer so the cache can be inspected with any SQLite client.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CorruptIndexError
from ..paths import cache_dir
from .completion import Completion, Message

log = logging.getLogger(__name__)

CACHE_FILE = "llm-cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    response_model TEXT NOT NULL,
    usage TEXT NOT NULL,
    finish_reason TEXT,
    latency_s REAL NOT NULL,
    created_at TEXT NOT NULL
)
"""


def canonical_json(value: object) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: equal requests give byte-equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(backend: str, model: str, messages: Sequence[Message], params: dict[str, object]) -> str:
    """SHA-256 hex of the canonical JSON of (backend, model, messages, params)."""
    blob = canonical_json({"backend": backend, "model": model, "messages": list(messages), "params": params})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """A thread-safe SQLite completion cache (WAL mode, so several processes may share one file)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path, timeout=30.0, check_same_thread=False, isolation_level=None
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise CorruptIndexError(
                f"the LLM cache {self.path} cannot be opened: {exc}",
                hint="delete that file (it only holds cached answers) or set llm.cache_dir to another folder",
            ) from exc

    @classmethod
    def in_folder(cls, folder: str | None) -> LLMCache:
        """The cache file in ``folder`` (an LLM config's ``cache_dir``; None: the user's cache folder)."""
        return cls(Path(folder or cache_dir()) / CACHE_FILE)

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"the LLM cache {self.path} is closed")
        return self._conn

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db().execute(
                "SELECT text, response_model, usage, finish_reason, latency_s FROM completions WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, model, usage, finish_reason, latency = row
        return Completion(text=text, model=model, usage=json.loads(usage), latency_s=latency,
                          cache_hit=True, finish_reason=finish_reason)

    def put(
        self,
        key: str,
        backend: str,
        model: str,
        messages: Sequence[Message],
        params: dict[str, object],
        completion: Completion,
    ) -> None:
        request = canonical_json(
            {"backend": backend, "model": model, "messages": list(messages), "params": params}
        )
        with self._lock:
            self._db().execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, backend, model, request, completion.text, completion.model,
                 canonical_json(completion.usage), completion.finish_reason, completion.latency_s,
                 datetime.now(timezone.utc).isoformat(timespec="seconds")),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def clear(self) -> int:
        """Delete every cached answer; returns how many there were."""
        with self._lock:
            return int(self._db().execute("DELETE FROM completions").rowcount)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
