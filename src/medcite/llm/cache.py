"""Persistent LLM cache: a re-run with the same requests makes no model calls and gives identical output.

One SQLite file; the key is the SHA-256 of the canonical JSON of (backend, model, server, messages, params),
where params are the fully resolved call parameters (temperature, max_tokens, stop, seed and any extras) and
server is where the model runs (an ``openai`` backend's base URL; empty for in-process backends, whose model
path already names the model, and then left out of the JSON so their older keys still match). The request
itself is stored beside the answer so the cache can be inspected with any SQLite client.

A reply medcite rejected (it could not be parsed, or broke the answer's rules, and the caller fell back or
retried: :func:`medcite.llm.base.reject`) stays in the file, marked with the reason, but is never replayed:
the next run asks the server again, and the new answer replaces the row. A cache written before the
``server`` and ``rejected`` columns existed is migrated in place when opened: its in-process rows still match,
its server rows (keyed without the server) no longer do and stay as inspection data until cleared. A file that is
not a medcite LLM cache is set aside under another name, never written to (:class:`LLMCache`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CorruptIndexError
from ..paths import cache_dir
from ..write_failures import write_failure
from .completion import Completion, Message

log = logging.getLogger(__name__)

CACHE_FILE = "llm-cache.sqlite"

#: the columns of the ``completions`` table, in order
_COLUMNS = (("key", "TEXT PRIMARY KEY"), ("backend", "TEXT NOT NULL"), ("model", "TEXT NOT NULL"),
            ("request", "TEXT NOT NULL"), ("text", "TEXT NOT NULL"), ("response_model", "TEXT NOT NULL"),
            ("usage", "TEXT NOT NULL"), ("finish_reason", "TEXT"), ("latency_s", "REAL NOT NULL"),
            ("created_at", "TEXT NOT NULL"), ("server", "TEXT NOT NULL DEFAULT ''"), ("rejected", "TEXT"),
            ("rejected_at", "TEXT"))
_SCHEMA = "CREATE TABLE IF NOT EXISTS completions (" + ", ".join(f"{n} {d}" for n, d in _COLUMNS) + ")"
#: columns added after the first release: a cache file without them gets them when opened
_ADDED_COLUMNS = _COLUMNS[-3:]


def canonical_json(value: object) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: equal requests give byte-equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _request(backend: str, model: str, messages: Sequence[Message], params: dict[str, object],
             server: str) -> dict[str, object]:
    request: dict[str, object] = {"backend": backend, "model": model, "messages": list(messages), "params": params}
    if server:  # in-process backends have none: their keys stay what they were before servers were keyed
        request["server"] = server
    return request


def cache_key(backend: str, model: str, messages: Sequence[Message], params: dict[str, object],
              server: str = "") -> str:
    """SHA-256 hex of the canonical JSON of (backend, model, server, messages, params); ``server`` is left out
    when empty."""
    blob = canonical_json(_request(backend, model, messages, params, server))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _utc_iso(when: datetime) -> str:
    """``when`` as the cache stores times (UTC, ISO 8601 to the second); a naive time is taken as UTC."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat(timespec="seconds")


def _what_it_is(conn: sqlite3.Connection) -> tuple[str, str]:
    """What the file of ``conn`` holds: ("new", "") for an empty file, ("ok", "") for this medcite's cache,
    ("older", why) for an older medcite's (columns to add), ("foreign", why) for anything else."""
    try:
        tables = sorted(name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        columns = {row[1]: row for row in conn.execute("PRAGMA table_info(completions)")}
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc) or "malformed" in str(exc):  # not SQLite, or damaged
            return "foreign", f"SQLite cannot read it: {exc}"
        raise  # locked, an I/O error: nothing to say about the file itself
    if not columns:
        return ("new", "") if not tables else ("foreign", f"it holds the tables {', '.join(tables[:5])} and no "
                                                           "completions table")
    added = {name for name, _ in _ADDED_COLUMNS}
    missing = [name for name, _ in _COLUMNS if name not in columns]
    if [m for m in missing if m not in added]:
        return "foreign", f"its completions table has no column {', '.join(m for m in missing if m not in added)}"
    if columns["key"][5] != 1:  # the pk flag: INSERT OR REPLACE keys on it
        return "foreign", "the key column of its completions table is not its primary key"
    ours = {name for name, _ in _COLUMNS}
    required = [row[1] for name, row in columns.items() if name not in ours and row[3] and row[4] is None]
    if required:
        return "foreign", f"its completions table requires the columns {', '.join(required)}, which medcite never fills"
    if missing:
        return "older", f"its completions table had no column {', '.join(missing)}"
    return "ok", ""


@dataclass(frozen=True, slots=True)
class SourceStats:
    """The replies of one (backend, model, server)."""

    backend: str
    model: str
    server: str
    replies: int
    rejected: int


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What ``medcite cache stats`` reports."""

    path: str
    size_bytes: int
    replies: int
    rejected: int
    oldest: str | None
    newest: str | None
    sources: list[SourceStats] = field(default_factory=list)
    #: what opening the file found, when it was not simply this medcite's cache (:attr:`LLMCache.found`)
    found: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"file": self.path, "size_bytes": self.size_bytes, "replies": self.replies,
                "rejected": self.rejected, "oldest": self.oldest, "newest": self.newest, "found": self.found,
                "by_source": [{"backend": s.backend, "model": s.model, "server": s.server, "replies": s.replies,
                               "rejected": s.rejected} for s in self.sources]}


class LLMCache:
    """A thread-safe SQLite completion cache (WAL mode, so several processes may share one file).

    Opening checks what the file is (:attr:`found` says it, in words, when it was not simply this medcite's
    cache): a file from an older medcite gets its new columns (its replies kept); a file that is not a medcite
    LLM cache (another program's database, another tool's cache under this name, not SQLite at all, a damaged
    one) is set aside, renamed ``NAME.set-aside-<time>`` beside it, and a new cache starts in its place. Each says
    so in one warning. SQLite's own errors never reach the caller: a write the file system refuses is a
    :class:`~medcite.errors.WriteError`, anything else a :class:`~medcite.errors.CorruptIndexError` naming the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        #: what opening found, when it was not this medcite's cache (migrated, or set aside); None otherwise
        self.found: str | None = None
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failure(exc, self.path) or exc from exc
        with self._sqlite("open"):
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        try:
            kind, why = _what_it_is(conn)
            if kind == "older":
                self._migrate(conn)
                self.found = f"a cache of an older medcite ({why}): added them, its replies are kept"
                log.warning("LLM cache %s: %s", self.path, self.found)
            if kind == "foreign":
                conn.close()
                aside = self._set_aside()
                self.found = (f"{self.path.name} was not a medcite LLM cache ({why}): set aside as {aside.name}, "
                              "and a new cache started in its place")
                log.warning("LLM cache %s: %s", self.path, self.found)
                conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_aside(self) -> Path:
        """Rename the file (and its SQLite side files) to ``NAME.set-aside-<UTC time>``; returns the new name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.set-aside-{stamp}")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.name}.set-aside-{stamp}-{n}")
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            except FileNotFoundError:  # no such side file, or another process set the file aside first
                continue
        return aside

    @contextmanager
    def _sqlite(self, doing: str) -> Iterator[None]:
        """SQLite's errors as medcite's: a refused write names the reason, anything else the file and what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            failed = write_failure(exc, self.path, kept="nothing already written was lost: the cache keeps every "
                                   "reply stored before (a reply not stored is asked again next time)")
            if failed is not None:
                raise failed from exc
            raise CorruptIndexError(
                f"the LLM cache {self.path} failed to {doing}: {exc}",
                hint="another program may hold it; if it persists, move that file away (it only holds cached "
                "replies: the next run makes a new one) or set llm.cache_dir to another folder",
            ) from exc

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Add the columns a cache file from an older medcite lacks (its rows are kept)."""
        have = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
        for name, decl in _ADDED_COLUMNS:
            if name in have:
                continue
            try:
                conn.execute(f"ALTER TABLE completions ADD COLUMN {name} {decl}")
            except sqlite3.OperationalError as exc:  # another process added it in the meantime
                if "duplicate column" not in str(exc).lower():
                    raise

    @classmethod
    def in_folder(cls, folder: str | Path | None) -> LLMCache:
        """The cache file in ``folder`` (an LLM config's ``cache_dir``; None: the user's cache folder)."""
        return cls(cache_file(folder))

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"the LLM cache {self.path} is closed")
        return self._conn

    def get(self, key: str) -> Completion | None:
        """The cached reply of ``key``; None when there is none or when medcite rejected it."""
        with self._lock, self._sqlite("read a reply"):
            row = self._db().execute(
                "SELECT text, response_model, usage, finish_reason, latency_s FROM completions "
                "WHERE key = ? AND rejected IS NULL",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, model, usage, finish_reason, latency = row
        return Completion(text=text, model=model, usage=json.loads(usage), latency_s=latency,
                          cache_hit=True, finish_reason=finish_reason, key=key)

    def put(
        self,
        key: str,
        backend: str,
        model: str,
        messages: Sequence[Message],
        params: dict[str, object],
        completion: Completion,
        server: str = "",
    ) -> None:
        """Store a reply (replacing the row of the same key, a rejected one included)."""
        request = canonical_json(_request(backend, model, messages, params, server))
        with self._lock, self._sqlite("store a reply"):
            self._db().execute(
                "INSERT OR REPLACE INTO completions (key, backend, model, request, text, response_model, usage, "
                "finish_reason, latency_s, created_at, server, rejected, rejected_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                (key, backend, model, request, completion.text, completion.model,
                 canonical_json(completion.usage), completion.finish_reason, completion.latency_s, _now(), server),
            )

    def reject(self, key: str, reason: str) -> bool:
        """Mark the reply of ``key`` rejected (kept for inspection, never replayed); False when it is not here."""
        with self._lock, self._sqlite("mark a reply rejected"):
            cur = self._db().execute("UPDATE completions SET rejected = ?, rejected_at = ? WHERE key = ?",
                                     (reason or "rejected", _now(), key))
        return bool(cur.rowcount)

    def rejection(self, key: str) -> str | None:
        """Why the reply of ``key`` was rejected; None when it was not (or is not here)."""
        with self._lock, self._sqlite("read a reply"):
            row = self._db().execute("SELECT rejected FROM completions WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def __len__(self) -> int:
        with self._lock, self._sqlite("count its replies"):
            return int(self._db().execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def stats(self) -> CacheStats:
        """Counts of the file: replies, rejected ones, per (backend, model, server), oldest and newest."""
        with self._lock, self._sqlite("count its replies"):
            db = self._db()
            total, rejected, oldest, newest = db.execute(
                "SELECT COUNT(*), COUNT(rejected), MIN(created_at), MAX(created_at) FROM completions").fetchone()
            rows = db.execute(
                "SELECT backend, model, server, COUNT(*), COUNT(rejected) FROM completions "
                "GROUP BY backend, model, server ORDER BY COUNT(*) DESC, backend, model, server").fetchall()
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return CacheStats(str(self.path), size, int(total), int(rejected), oldest, newest,
                          [SourceStats(b, m, s, int(n), int(r)) for b, m, s, n, r in rows], self.found)

    def clear(self, *, older_than: datetime | None = None, rejected_only: bool = False) -> int:
        """Delete cached replies: all of them, or only those stored before ``older_than`` and/or only the
        rejected ones; returns how many were deleted."""
        where, args = [], []
        if older_than is not None:
            where.append("created_at < ?")
            args.append(_utc_iso(older_than))
        if rejected_only:
            where.append("rejected IS NOT NULL")
        sql = "DELETE FROM completions" + (" WHERE " + " AND ".join(where) if where else "")
        with self._lock, self._sqlite("delete replies"):
            return int(self._db().execute(sql, args).rowcount)

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system."""
        with self._lock, self._sqlite("give the space back"):
            self._db().execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def cache_file(folder: str | Path | None) -> Path:
    """The cache file of ``folder`` (None: ``$MEDCITE_CACHE_DIR`` or the user's cache folder)."""
    return Path(folder or cache_dir()) / CACHE_FILE


def has_cache(folder: str | Path | None) -> bool:
    """Whether ``folder`` holds a cache file (opening one creates it)."""
    return os.path.isfile(cache_file(folder))
