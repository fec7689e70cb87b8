"""The one-writer lock of a folder (a document store, a PubMed mirror): ``flock`` on a lock file holding the pid."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..errors import InputError

log = logging.getLogger(__name__)

LOCK_NAME = "store.lock"


class WriterLock:
    """The one-writer lock of a store folder: an exclusive ``flock`` on ``store.lock``, which holds the pid.

    The kernel drops the lock when its process ends, however it ends (kill -9 included), so a stale lock
    cannot block a store. A second writer waits up to ``wait_s`` seconds, saying once whom it waits for,
    then fails with "store is busy (held by pid N)". Readers (search, index) never take it: SQLite's WAL
    mode lets them read the last committed state while a writer works. Without ``fcntl`` (Windows) there
    is no lock and SQLite's own locking applies.
    """

    POLL_S = 0.1

    def __init__(
        self, folder: Path, wait_s: float | None, *, name: str = LOCK_NAME, what: str = "store",
        hint: str = "another `medcite ingest` is writing to it: wait for it to finish, or pass --wait SECONDS to "
        "wait longer",
    ) -> None:
        self.path = folder / name
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if wait_s is None else time.monotonic() + wait_s
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = self.holder()
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise InputError(f"{what} {folder} is busy (held by pid {holder or 'unknown'})",
                                     hint=hint) from None
                if not said:
                    log.warning("%s %s is busy (held by pid %s); waiting%s", what, folder, holder or "unknown",
                                "" if wait_s is None else f" up to {wait_s:g} s")
                    said = True
                time.sleep(self.POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def holder(self) -> str | None:
        """The pid written by the process that holds (or last held) the lock."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return None
        return text if text.isdigit() else None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
