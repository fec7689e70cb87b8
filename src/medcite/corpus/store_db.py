"""The SQLite file of a document store: made atomically, and checked before anything is written to it.

``store.sqlite`` is built under a temporary name and renamed into place once its schema has committed, so
an existing ``store.sqlite`` is always a whole store: a crash while creating it leaves no file, or a
temporary ``.store.sqlite.*.tmp`` that the next writer removes. Anything else found under that name (a
zero-byte file, a text file, another program's database, a damaged store) is reported and never
initialised over or written to: the header, the tables and the format version are checked on a plain
connection before the first PRAGMA that could change the file. A store in a folder that cannot be written (a
read-only mount) is read read-only; a file-system error is never taken for a file that is not a store.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import CorruptIndexError
from ..io import fsync_dir
from ..write_failures import STORE_KEPT, file_size_limit, size_text, write_failure

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
DB_NAME = "store.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS articles(
    pmid INTEGER PRIMARY KEY, version INTEGER NOT NULL, seq INTEGER NOT NULL,
    title TEXT NOT NULL, abstract TEXT NOT NULL, meta TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS articles_seq ON articles(seq);
CREATE TABLE IF NOT EXISTS deleted(pmid INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS deleted_seq ON deleted(seq);
CREATE TABLE IF NOT EXISTS files(
    key TEXT PRIMARY KEY, path TEXT NOT NULL, size INTEGER NOT NULL, status TEXT NOT NULL,
    added INTEGER NOT NULL, replaced INTEGER NOT NULL, deleted INTEGER NOT NULL,
    skipped INTEGER NOT NULL, warnings INTEGER NOT NULL, error TEXT, seq INTEGER NOT NULL,
    finished_at TEXT NOT NULL);
"""

_MAGIC = b"SQLite format 3\x00"
_CHECKS = (
    "SELECT key, value FROM meta LIMIT 1",
    "SELECT pmid, version, seq, title, abstract, meta FROM articles LIMIT 1",
    "SELECT pmid, seq FROM deleted LIMIT 1",
    "SELECT key, status FROM files LIMIT 1",
)


def not_a_store(folder: Path, why: str) -> CorruptIndexError:
    """``store.sqlite`` is not a medcite store: not SQLite, or SQLite without the store's tables. It is someone
    else's file, so the advice is another folder, never removing it."""
    return CorruptIndexError(
        f"{folder}: {DB_NAME} is not a medcite document store ({why}); it was left as it is",
        hint=f"give another folder for --store (not {folder}): medcite does not write over a file it did not make",
    )


def damaged_store(folder: Path, why: str) -> CorruptIndexError:
    """``store.sqlite`` has the store's tables, but SQLite finds pages of it damaged."""
    return CorruptIndexError(
        f"the document store at {folder} is damaged ({why}); it was left as it is",
        hint="ingest the same files into a new folder (keep this one until the new store works), or restore it "
        "from a copy",
    )


def unreadable_store(folder: Path, exc: BaseException) -> CorruptIndexError:
    """The store could not be read for a reason of the file system (an I/O error, a lock, a folder that cannot be
    written), not of the file: nothing about it is wrong, and the advice says so."""
    text = str(exc)
    if "readonly" in text.lower() or "unable to open" in text.lower():
        why = f"read-only: SQLite could not open it ({text}), and the folder cannot be written"
        hint = ("medcite reads a store in a read-only folder when its -wal file holds no unsaved changes: open it "
                "once where the folder can be written (any command that reads it saves them), or make it writable")
    elif "locked" in text.lower() or "busy" in text.lower():
        why = f"another process holds it locked ({text})"
        hint = "wait for the process that writes to it (a `medcite ingest`) to finish, and run the command again"
    else:
        limit = file_size_limit()
        why = f"disk I/O error ({text})" + (f"; the file-size limit is {size_text(limit)} (ulimit -f)"
                                             if limit is not None else "")
        hint = ("the store itself was left as it is: check the disk (dmesg) or raise the file-size limit (ulimit -f), "
                "and run the command again")
    return CorruptIndexError(f"cannot read the document store at {folder}: {why}", hint=hint)


def create_db(db: Path, meta: Iterable[tuple[str, str]]) -> None:
    """Create an empty store database at ``db`` (which must not exist) with ``meta`` rows, atomically."""
    fd, tmp = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=MEMORY")  # no side file: a crash leaves only the .tmp file
            conn.execute("BEGIN IMMEDIATE")
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)
            conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", list(meta))
            conn.execute("COMMIT")
        finally:
            conn.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, db)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(db.parent)


def open_db(db: Path, folder: Path, *, writer: bool = False) -> tuple[sqlite3.Connection, bool]:
    """A connection to the store database ``db`` (in ``folder``), checked to be one; and whether it is read-only.

    The connection is set to WAL mode. A reader (``writer`` False) whose folder cannot be written (a read-only
    mount, another user's folder), or whose file system refuses SQLite's side files (``-wal``/``-shm``: a
    file-size limit), opens the file read-only instead; a writer gets a :class:`~medcite.errors.WriteError`. Only
    the header and the schema decide that a file is not a store: an I/O error, a lock or a read-only folder is
    reported as what it is.
    """
    try:
        with open(db, "rb") as fh:
            head = fh.read(len(_MAGIC))
    except OSError as exc:
        raise unreadable_store(folder, exc) from None
    if head != _MAGIC:
        raise not_a_store(folder, "an empty file" if not head else "not a SQLite database")
    if not writer and not _writable(folder, db):
        return _open_read_only(db, folder), True
    try:
        return _open(db, folder, wal=True), False
    except _Unreadable as exc:
        if writer:
            raise write_failure(exc.error, db, kept=STORE_KEPT) or unreadable_store(
                folder, exc.error) from None
        if not _side_files_refused(exc.error):
            raise unreadable_store(folder, exc.error) from None
        log.info("%s: SQLite could not write its side files (%s); reading the store read-only", folder, exc.error)
        return _open_read_only(db, folder), True


class _Unreadable(Exception):
    """The file system, not the file, kept SQLite from reading the store (carries SQLite's error)."""

    def __init__(self, error: sqlite3.Error) -> None:
        super().__init__(str(error))
        self.error = error


def _writable(folder: Path, db: Path) -> bool:
    return os.access(folder, os.W_OK) and os.access(db, os.W_OK)


def _side_files_refused(error: sqlite3.Error) -> bool:
    """SQLite could not make or grow its ``-wal``/``-shm`` files: a read-only connection may still read the store."""
    text = str(error).lower()
    return any(words in text for words in ("readonly", "unable to open", "disk i/o error", "read-only"))


def _open_read_only(db: Path, folder: Path) -> sqlite3.Connection:
    """The store opened read-only: ``mode=ro`` (SQLite reads the ``-wal`` there, making no file), else, when there
    is no ``-wal`` content SQLite could miss, ``immutable=1`` (it then makes no ``-shm`` either)."""
    uri = db.resolve().as_uri()
    try:
        return _open(db, folder, wal=False, uri=f"{uri}?mode=ro")
    except _Unreadable as exc:
        wal = Path(f"{db}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise unreadable_store(folder, exc.error) from None
    log.info("%s: the folder cannot be written; reading the store as an immutable file", folder)
    try:
        return _open(db, folder, wal=False, uri=f"{uri}?immutable=1")
    except _Unreadable as exc:
        raise unreadable_store(folder, exc.error) from None


def _open(db: Path, folder: Path, *, wal: bool, uri: str | None = None) -> sqlite3.Connection:
    """Connect, check the schema and the format version; set WAL mode when ``wal``. SQLite's complaints about the
    file make a "not a store" or "damaged" error, the others :class:`_Unreadable`."""
    try:
        conn = sqlite3.connect(uri or db, isolation_level=None, check_same_thread=False, uri=uri is not None)
    except sqlite3.Error as exc:
        raise _Unreadable(exc) from None
    try:
        for check in _CHECKS:
            conn.execute(check).fetchall()
        row = conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else 0
        if version != FORMAT_VERSION:
            raise CorruptIndexError(
                f"the document store at {folder} has format version {version}, this medcite reads {FORMAT_VERSION}",
                hint="re-ingest into a new folder with this medcite version",
            )
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        text = str(exc).lower()
        if "no such table" in text or "no such column" in text or "not a database" in text:
            raise not_a_store(folder, str(exc)) from None
        if "malformed" in text or "corrupt" in text:
            raise damaged_store(folder, str(exc)) from None
        raise _Unreadable(exc) from None
    except BaseException:
        conn.close()
        raise
    return conn
