"""The SQLite file of a document store: made atomically, and checked before anything is written to it.

``store.sqlite`` is built under a temporary name and renamed into place once its schema has committed, so
an existing ``store.sqlite`` is always a whole store: a crash while creating it leaves no file, or a
temporary ``.store.sqlite.*.tmp`` that the next writer removes. Anything else found under that name (a
zero-byte file, a text file, another program's database, a damaged store) is reported and never
initialised over or written to: the header, the tables and the format version are checked on a plain
connection before the first PRAGMA that could change the file.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import CorruptIndexError
from ..io import fsync_dir

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
    return CorruptIndexError(
        f"{folder}: {DB_NAME} is not a medcite document store ({why}); it was left as it is",
        hint=f"if it is a store that a crash or a full disk damaged, remove the folder and run `medcite ingest` "
        f"again; if the file is someone else's, give another folder for --store (not {folder})",
    )


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


def open_db(db: Path, folder: Path) -> sqlite3.Connection:
    """A connection to the store database ``db`` (in ``folder``), checked to be one, then set to WAL mode."""
    try:
        with open(db, "rb") as fh:
            head = fh.read(len(_MAGIC))
    except OSError as exc:
        raise not_a_store(folder, f"cannot read it: {exc.strerror or exc}") from None
    if head != _MAGIC:
        raise not_a_store(folder, "an empty file" if not head else "not a SQLite database")
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
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
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise not_a_store(folder, str(exc)) from None
    except BaseException:
        conn.close()
        raise
    return conn
