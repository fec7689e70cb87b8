"""The embedded document store: one SQLite file keyed by PMID, plus a human-readable manifest.

Every committed change (an added/replaced article or a deletion) carries a sequence number, so an
index can record the last sequence it applied and later catch up incrementally with
:meth:`DocumentStore.changes_since`. Each ingested file is one transaction, recorded in the
``files`` table in the same transaction: a crash mid-file rolls back to the last finished file.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InputError, MedciteError
from ..io import remove_stale_temp_files, write_json
from ..types import Article
from ..write_failures import KEPT, STORE_KEPT, write_failure
from .lock import LOCK_NAME, WriterLock
from .serialize import article_from_row, article_meta
from .store_db import DB_NAME, FORMAT_VERSION, create_db, open_db

__all__ = ["DB_NAME", "FORMAT_VERSION", "LOCK_NAME", "Changes", "DocumentStore", "FileStats", "StoreTransaction",
           "WriterLock"]

log = logging.getLogger(__name__)

#: what a failed transaction keeps, in its error
ROLLED_BACK = ("nothing already written was lost: the store holds every change committed before this one, and this "
               "one was rolled back")

@dataclass
class FileStats:
    """What one ingested file did to the store."""

    path: str
    added: int = 0
    replaced: int = 0
    deleted: int = 0
    kept_newer: int = 0
    skipped: int = 0
    warnings: int = 0
    status: str = "done"
    error: str | None = None


@dataclass(frozen=True)
class Changes:
    """Articles added or replaced, and PMIDs deleted, after a given sequence number."""

    upserted: list[Article]
    deleted: list[str]
    seq: int


#: the largest PMID a store holds (SQLite's INTEGER stops at 2**63 - 1; the readers allow 18 digits)
MAX_PMID = 10**18 - 1


def _pmid_int(pmid: str | int) -> int:
    shown = str(pmid) if len(str(pmid)) <= 40 else str(pmid)[:40] + "..."
    try:
        value = int(pmid)
    except (TypeError, ValueError):
        raise InputError(f"PMID {shown!r} is not an integer", hint="PMIDs are bare integers such as 12345678") from None
    if value <= 0:
        raise InputError(f"PMID {shown} must be positive")
    if value > MAX_PMID:
        raise InputError(f"PMID {shown} is too large: PMIDs have at most 18 digits",
                         hint="PMIDs are bare integers such as 12345678")
    return value


class DocumentStore:
    """SQLite store of :class:`Article` keyed by PMID. Open with :meth:`open` or :meth:`create`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock: WriterLock | None = None, *,
                 read_only: bool = False) -> None:
        self.path = path
        self._conn = conn
        self._lock = lock
        #: opened read-only: the folder cannot be written (a read-only mount), so nothing is written there
        self.read_only = read_only

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, *, wait_s: float | None = 60.0) -> DocumentStore:
        """Open the store at ``path`` for writing, creating an empty one if the folder has none.

        Takes the store's writer lock (:class:`WriterLock`) until :meth:`close`: a second writer waits up
        to ``wait_s`` seconds (None: as long as it takes), then fails with "store is busy (held by pid N)".
        """
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise InputError(f"store path {path} is a file", hint="give a folder for --store")
        try:
            path.mkdir(parents=True, exist_ok=True)
            lock = WriterLock(path, wait_s)
        except OSError as exc:
            raise write_failure(exc, path / LOCK_NAME, kept=STORE_KEPT) or exc from exc
        try:
            return cls._create_locked(path, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _create_locked(cls, path: Path, lock: WriterLock) -> DocumentStore:
        remove_stale_temp_files(path)  # a store or manifest write that a crash interrupted (we hold the lock)
        db = path / DB_NAME
        new = not db.exists()  # an existing file, whatever it holds, is never made again (open() checks it)
        if new:
            try:
                create_db(db, [("format_version", str(FORMAT_VERSION)), ("store_id", uuid.uuid4().hex),
                               ("seq", "0"), ("created_at", _now())])
            except (OSError, sqlite3.Error) as exc:
                raise write_failure(exc, db, kept=f"{KEPT} (the folder holds no store yet)") or exc from exc
        store = cls(path, open_db(db, path, writer=True)[0], lock)
        if new:
            store._write_manifest()
        return store

    @classmethod
    def open(cls, path: str | Path) -> DocumentStore:
        """Open an existing store to read it (read-only when its folder cannot be written: :attr:`read_only`);
        refuse a missing, foreign or damaged one with a clear message."""
        path = Path(path)
        db = path / DB_NAME
        if not db.exists():
            raise InputError(
                f"no document store at {path}",
                hint=f"create one with `medcite ingest FILES --store {path}`",
            )
        conn, read_only = open_db(db, path)
        return cls(path, conn, read_only=read_only)

    def close(self) -> None:
        if self._lock is not None:  # a writer leaves a true manifest, even when a killed run left it stale
            self._refresh_manifest()
        self._conn.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> DocumentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------
    def _meta(self, key: str) -> str:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else ""

    @property
    def store_id(self) -> str:
        return self._meta("store_id")

    @property
    def seq(self) -> int:
        """Sequence number of the last committed change."""
        return int(self._meta("seq") or 0)

    def fingerprint(self) -> dict[str, object]:
        """Identifies the store state an index was built from (store id, sequence, count)."""
        return {"store_id": self.store_id, "seq": self.seq, "count": len(self)}

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0])

    def count(self, *, shard: tuple[int, int] | None = None) -> int:
        """Number of articles, or of those in ``shard`` (see :meth:`iter_articles`)."""
        where, extra = _shard_sql(shard)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM articles WHERE 1{where}", extra).fetchone()[0])

    def iter_pmids(self, batch: int = 100_000) -> Iterator[int]:
        """Every PMID in ascending order, read in bounded batches."""
        last = -1
        while True:
            rows = self._conn.execute(
                "SELECT pmid FROM articles WHERE pmid>? ORDER BY pmid LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            yield from (int(r[0]) for r in rows)
            last = rows[-1][0]

    def __contains__(self, pmid: object) -> bool:
        try:
            key = _pmid_int(pmid)  # type: ignore[arg-type]
        except InputError:
            return False
        return self._conn.execute("SELECT 1 FROM articles WHERE pmid=?", (key,)).fetchone() is not None

    def get(self, pmid: str | int) -> Article | None:
        row = self._conn.execute(
            "SELECT pmid, version, title, abstract, meta FROM articles WHERE pmid=?", (_pmid_int(pmid),)
        ).fetchone()
        return article_from_row(*row) if row else None

    def get_many(self, pmids: Sequence[str | int]) -> dict[str, Article]:
        """Articles for the PMIDs that exist, keyed by PMID string (missing ones are left out)."""
        out: dict[str, Article] = {}
        keys = [_pmid_int(p) for p in pmids]
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = ",".join("?" * len(chunk))
            for row in self._conn.execute(
                f"SELECT pmid, version, title, abstract, meta FROM articles WHERE pmid IN ({q})", chunk
            ):
                out[str(row[0])] = article_from_row(*row)
        return out

    def retracted(self, pmids: Iterable[str | int]) -> set[str]:
        """The subset of ``pmids`` whose stored article is marked retracted (read from the metadata only)."""
        out: set[str] = set()
        keys = [_pmid_int(p) for p in pmids]
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT pmid FROM articles WHERE pmid IN ({q}) AND json_extract(meta, '$.retracted') = 1", chunk
            )
            out.update(str(r[0]) for r in rows)
        return out

    def existing(self, pmids: Iterable[str | int]) -> set[str]:
        """The subset of ``pmids`` present in the store."""
        return set(self.get_many(list(pmids)))

    def iter_articles(self, batch: int = 5000, *, shard: tuple[int, int] | None = None) -> Iterator[Article]:
        """Every article in PMID order, read in bounded batches; ``shard=(i, n)``: only those with
        ``pmid % n == i - 1`` (shard i of n, 1-based), a split that needs no coordination between shards."""
        where, extra = _shard_sql(shard)
        yield from self._articles_in_pmid_order(f"pmid>?{where}", lambda last: (last, *extra), batch)

    def iter_changes(self, since: int, batch: int = 5000) -> Iterator[Article]:
        """Articles added or replaced after sequence ``since``, in bounded batches."""
        yield from self._articles_in_pmid_order("seq>? AND pmid>?", lambda last: (since, last), batch)

    def _articles_in_pmid_order(self, where: str, params: Callable[[int], tuple[object, ...]],
                                batch: int) -> Iterator[Article]:
        """The articles ``where`` selects, in PMID order, ``batch`` rows per query (keyset paging: ``params(last)``
        binds the last PMID read, -1 at first, to the ``pmid>?`` of ``where``)."""
        last = -1
        while True:
            rows = self._conn.execute(
                f"SELECT pmid, version, title, abstract, meta FROM articles WHERE {where} ORDER BY pmid LIMIT ?",
                (*params(last), batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield article_from_row(*row)
            last = rows[-1][0]

    def deleted_since(self, since: int) -> list[str]:
        """PMIDs deleted after sequence ``since`` (and not re-added since)."""
        return [str(r[0]) for r in self._conn.execute("SELECT pmid FROM deleted WHERE seq>?", (since,))]

    def count_changes_since(self, since: int) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM articles WHERE seq>?", (since,)).fetchone()[0])

    def stats(self) -> dict[str, object]:
        """Counts for `medcite corpus stats`: articles, deletions, files, retracted, year range (full scan)."""
        row = self._conn.execute(
            "SELECT COUNT(*), SUM(json_extract(meta, '$.retracted') IS NOT NULL), "
            "MIN(json_extract(meta, '$.year')), MAX(json_extract(meta, '$.year')) FROM articles"
        ).fetchone()
        return {
            "store_id": self.store_id,
            "seq": self.seq,
            "articles": int(row[0]),
            "deleted": int(self._conn.execute("SELECT COUNT(*) FROM deleted").fetchone()[0]),
            "files": int(self._conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]),
            "retracted": int(row[1] or 0),
            "year_min": row[2],
            "year_max": row[3],
        }

    def files(self) -> list[dict[str, object]]:
        cur = self._conn.execute("SELECT * FROM files ORDER BY seq")
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur]

    def file_done(self, key: str) -> dict[str, object] | None:
        """The record of a finished file with this content key, or None."""
        cur = self._conn.execute("SELECT * FROM files WHERE key=?", (key,))
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([c[0] for c in cur.description], row, strict=True))

    # -- writing -----------------------------------------------------------------------------
    def transaction(self) -> StoreTransaction:
        """One atomic unit of change (normally one input file)."""
        return StoreTransaction(self)

    def _refresh_manifest(self) -> None:
        """Rewrite manifest.json when its sequence is not the store's: a run killed between a commit and the
        manifest write leaves it one commit behind, and a rerun that finds every file done commits nothing."""
        try:
            current = json.loads((self.path / "manifest.json").read_text(encoding="utf-8")).get("seq")
        except (OSError, ValueError, AttributeError):
            current = None
        if current != self.seq:
            try:
                self._write_manifest()
            except MedciteError as error:
                log.warning("%s; the store itself is committed", error.message)

    def _write_manifest(self) -> None:
        counts = {
            "articles": len(self),
            "deleted": int(self._conn.execute("SELECT COUNT(*) FROM deleted").fetchone()[0]),
            "files": int(self._conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]),
        }
        write_json(
            self.path / "manifest.json",
            {
                "kind": "medcite-document-store",
                "format_version": FORMAT_VERSION,
                "store_id": self.store_id,
                "seq": self.seq,
                "counts": counts,
                "updated_at": _now(),
            },
        )


class StoreTransaction:
    """Context manager: all writes commit together, or none do (on any exception)."""

    def __init__(self, store: DocumentStore) -> None:
        self.store = store
        self._conn = store._conn
        self.seq = 0

    def __enter__(self) -> StoreTransaction:
        self._conn.execute("BEGIN IMMEDIATE")
        self.seq = self.store.seq + 1
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is not None:
            self._rollback()
            failed = write_failure(exc, self.store.path / DB_NAME, kept=ROLLED_BACK) if exc is not None else None
            if failed is not None and failed is not exc:
                raise failed from exc
            return
        try:
            self._conn.execute("UPDATE meta SET value=? WHERE key='seq'", (str(self.seq),))
            self._conn.execute("COMMIT")
        except sqlite3.Error as error:
            self._rollback()
            failed = write_failure(error, self.store.path / DB_NAME, kept=ROLLED_BACK)
            if failed is not None:
                raise failed from error
            raise
        try:
            self.store._write_manifest()
        except MedciteError as error:  # the commit stands; the manifest is a summary, redone at the next commit
            log.warning("%s; the store itself is committed", error.message)

    def _rollback(self) -> None:
        """Roll the transaction back unless SQLite already did: after an I/O error or a full disk it rolls back
        by itself, and a second ROLLBACK ("no transaction is active") would hide the error that caused it."""
        if not self._conn.in_transaction:
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as error:  # the journal or WAL keeps the store at its last commit all the same
            log.warning("rolling back the store transaction failed (%s); the store stays at its last commit", error)

    def upsert(self, articles: Sequence[Article], stats: FileStats) -> None:
        """Add articles; a record replaces a stored one unless the stored version is newer."""
        if not articles:
            return
        keys = [_pmid_int(a.pmid) for a in articles]
        current: dict[int, int] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = ",".join("?" * len(chunk))
            current.update(self._conn.execute(f"SELECT pmid, version FROM articles WHERE pmid IN ({q})", chunk))
        rows = []
        for key, a in zip(keys, articles, strict=True):
            old = current.get(key)
            if old is not None and old > a.version:
                stats.kept_newer += 1
                continue
            if old is None:
                stats.added += 1
            else:
                stats.replaced += 1
            current[key] = a.version
            rows.append((key, a.version, self.seq, a.title, a.abstract, article_meta(a)))
        self._conn.executemany("INSERT OR REPLACE INTO articles VALUES (?, ?, ?, ?, ?, ?)", rows)
        self._conn.executemany("DELETE FROM deleted WHERE pmid=?", [(r[0],) for r in rows])

    def delete(self, pmids: Sequence[str | int], stats: FileStats) -> None:
        keys = [_pmid_int(p) for p in pmids]
        for key in keys:
            cur = self._conn.execute("DELETE FROM articles WHERE pmid=?", (key,))
            if cur.rowcount:
                stats.deleted += 1
            self._conn.execute("INSERT OR REPLACE INTO deleted(pmid, seq) VALUES (?, ?)", (key, self.seq))

    def record_file(self, key: str, size: int, stats: FileStats) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, stats.path, size, stats.status, stats.added, stats.replaced, stats.deleted,
             stats.skipped, stats.warnings, stats.error, self.seq, _now()),
        )


def _shard_sql(shard: tuple[int, int] | None) -> tuple[str, tuple[int, ...]]:
    if shard is None:
        return "", ()
    index, of = shard
    if not 1 <= index <= of:
        raise InputError(f"shard {index}/{of} does not exist", hint="shards are numbered 1/N to N/N")
    return " AND pmid % ? = ?", (of, index - 1)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
