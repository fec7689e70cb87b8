"""Exclusive locks between processes: ``flock`` on a lock file that holds the holder's pid.

Shared by the one-writer lock of a store (:mod:`medcite.corpus.lock`) and the build lock of an index
(:mod:`medcite.index.build_lock`). The kernel drops a ``flock`` when its process ends, however it ends
(kill -9 included), so a lock file left behind by a dead process never blocks anyone. Lock files are kept, not
removed on release: removing one while another process waits on it would let two holders in at once. Without
``fcntl`` (Windows) there is no lock.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

#: seconds between two tries while another process holds the lock
POLL_S = 0.1


def acquire(
    path: Path, wait_s: float | None, *, on_wait: Callable[[], None], on_timeout: Callable[[], BaseException],
    poll_s: float = POLL_S,
) -> int | None:
    """Take the exclusive lock of ``path`` (created when missing) and write our pid into it.

    While another process holds it, ``on_wait()`` is called at each try (every ``poll_s`` seconds); once
    ``wait_s`` seconds have passed (None: never) the exception ``on_timeout()`` returns is raised. Returns the
    descriptor that holds the lock (:func:`release` it), or None where there is no ``fcntl``. An unwritable
    folder raises the ``OSError`` of opening the file.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise on_timeout() from None
                on_wait()
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int | None) -> None:
    """Drop a lock :func:`acquire` took (closing its descriptor drops the ``flock``)."""
    if fd is not None:
        os.close(fd)


def holder_pid(path: Path) -> int | None:
    """The pid written by the process that holds (or last held) the lock of ``path``; None when unknown."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
