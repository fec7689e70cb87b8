"""The one-writer lock of a folder (a document store, a PubMed mirror): ``flock`` on a lock file holding the pid."""

from __future__ import annotations

import logging
from pathlib import Path

from .. import locking
from ..errors import InputError

log = logging.getLogger(__name__)

LOCK_NAME = "store.lock"


class WriterLock:
    """The one-writer lock of a store folder: an exclusive ``flock`` on ``store.lock``, which holds the pid.

    The kernel drops the lock when its process ends, however it ends (kill -9 included), so a stale lock
    cannot block a store. A second writer waits up to ``wait_s`` seconds, saying once whom it waits for,
    then fails with "store is busy (held by pid N)". Readers (search, index) never take it: SQLite's WAL
    mode lets them read the last committed state while a writer works. Without ``fcntl`` (Windows) there
    is no lock and SQLite's own locking applies. (:mod:`medcite.locking` takes the lock.)
    """

    POLL_S = locking.POLL_S

    def __init__(
        self, folder: Path, wait_s: float | None, *, name: str = LOCK_NAME, what: str = "store",
        hint: str = "another `medcite ingest` is writing to it: wait for it to finish, or pass --wait SECONDS to "
        "wait longer",
    ) -> None:
        self.path = folder / name
        said = False

        def waiting() -> None:
            nonlocal said
            if not said:
                log.warning("%s %s is busy (held by pid %s); waiting%s", what, folder, self.holder() or "unknown",
                            "" if wait_s is None else f" up to {wait_s:g} s")
                said = True

        def busy() -> InputError:
            return InputError(f"{what} {folder} is busy (held by pid {self.holder() or 'unknown'})", hint=hint)

        self._fd = locking.acquire(self.path, wait_s, on_wait=waiting, on_timeout=busy, poll_s=self.POLL_S)

    def holder(self) -> str | None:
        """The pid written by the process that holds (or last held) the lock."""
        pid = locking.holder_pid(self.path)
        return None if pid is None else str(pid)

    def release(self) -> None:
        locking.release(self._fd)  # closing the descriptor drops the flock
        self._fd = None
