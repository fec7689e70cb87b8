"""One build at a time per index folder, across processes and threads; the others wait, then use its result.

Several jobs often run against one store (parallel runs, a cluster array, a search while a run goes on), and
the first command that needs an index builds it (``ctx.index(name)``). Two builds of one folder at once both
encode everything, and worse: the first to finish removed the resumable chunk files the second was resuming
from, and the second failed after its own encoding ("no vectors to index").

Every build, update, import or shard encoding of an index folder runs inside :func:`building`, which holds an
exclusive lock on ``.<folder name>.build.lock`` beside the folder (``flock``, :mod:`medcite.locking`: the kernel
drops it when the holder ends, however it ends, so a dead build never blocks). The lock file is beside the
folder, not in it, so the folder holds only what the index writes. The holder publishes its progress in
``.<folder name>.build.json`` beside it once it has progress to tell (pid, host, phase, done and total, refreshed
every :data:`PUBLISH_EVERY_S` seconds from its progress loops, removed when it lets go). A process that has to wait
says whom it waits for and how far that build is (once it has waited :data:`SAY_AFTER_S` seconds: every job holds
the lock a moment to see whether anything is left to do), then logs that progress every :data:`REPORT_EVERY_S`
seconds. Jobs open the index after letting go, so the jobs of an array that only open it do not queue.

Callers decide what to do only once they hold the lock: after a wait, an index the other build finished is
up to date and is opened, not built again; one it left unfinished (killed) is resumed from its chunks, which
from then on belong to the new holder. Everything that writes in the folder or removes from it (chunk files,
superseded data files, an interrupted write's temporary files) does so while holding the lock.

The wait has no limit by default (a first build of a large store takes hours); ``MEDCITE_INDEX_WAIT=SECONDS``
sets one, after which :class:`~medcite.errors.BusyError` names the lock file and the holder's pid. The lock is
reentrant in a thread (a build that ends with an update of the same folder holds it once) and serialises the
threads of one process. On a read-only folder there is no lock (nothing can be built there anyway). Across
machines it holds where the shared file system supports ``flock`` (NFSv4, Lustre mounted with ``flock``).
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import locking
from ..errors import BusyError, ConfigError, WriteError
from ..io import JSONObject, write_json
from ..progress import duration, watched

log = logging.getLogger(__name__)
#: the waiting lines are progress lines: shown by default, hidden by ``-q`` (see :mod:`medcite.progress`)
progress_log = logging.getLogger("medcite.progress")

#: environment variable: seconds to wait for another process's build of the same index (unset: no limit)
WAIT_ENV = "MEDCITE_INDEX_WAIT"
#: seconds a process waits before it says so: every job takes the lock a moment to see whether there is work
#: left, and the jobs of an array that start together should not all warn about it
SAY_AFTER_S = 2.0
#: seconds between two lines of a waiting process about the build it waits for
REPORT_EVERY_S = 15.0
#: seconds between two writes of the holder's progress file (a new phase is written at once)
PUBLISH_EVERY_S = 2.0
#: the wait given by :data:`WAIT_ENV`
FROM_ENV: Literal["env"] = "env"


def lock_file(folder: Path) -> Path:
    """``<parent>/.<name>.build.lock``: the lock of builds of the index ``folder``."""
    return folder.parent / f".{folder.name}.build.lock"


def progress_file(folder: Path) -> Path:
    """``<parent>/.<name>.build.json``: the progress the holder of the lock publishes."""
    return folder.parent / f".{folder.name}.build.json"


def wait_limit() -> float | None:
    """The seconds :data:`WAIT_ENV` allows (None when unset or ``inf``: no limit)."""
    raw = os.environ.get(WAIT_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value >= 0:
        raise ConfigError(f"{WAIT_ENV}={raw!r} is not a number of seconds",
                          hint=f"set {WAIT_ENV} to the seconds a job may wait for another job's build of the same "
                          "index (e.g. 3600), or unset it to wait until that build ends")
    return None if math.isinf(value) else value


@dataclass
class _Held:
    """The lock of one folder between the threads of this process, and the thread that holds it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: int | None = None


_held: dict[Path, _Held] = {}
_guard = threading.Lock()
_publisher: ContextVar[_Publisher | None] = ContextVar("medcite_build_publisher", default=None)


@contextmanager
def building(folder: str | Path, what: str = "the index", *,
             wait_s: float | Literal["env"] | None = FROM_ENV) -> Iterator[None]:
    """Hold the build lock of the index ``folder`` for the block, waiting for another build of it first.

    ``what`` names the index in messages (``the dense index``); ``wait_s``: seconds to wait at most (None: no
    limit; default: :data:`WAIT_ENV`). Raises :class:`BusyError` when the wait runs out.
    """
    folder = Path(folder).resolve()
    limit = wait_limit() if isinstance(wait_s, str) else wait_s
    with _guard:
        held = _held.setdefault(folder, _Held())
    me = threading.get_ident()
    if held.owner == me:  # a build inside a build of the same folder, which holds the lock already
        yield
        return
    waiter = _Waiter(folder, what, limit)
    while not held.lock.acquire(timeout=locking.POLL_S):  # another thread of this process builds it
        waiter.waiting()
    try:
        fd = _take_file_lock(folder, waiter)
    except BaseException:
        held.lock.release()
        raise
    held.owner = me
    waiter.over()
    publisher = _Publisher(progress_file(folder), what, folder, enabled=fd is not None)
    token = _publisher.set(publisher)
    try:
        with watched(publisher.count):
            yield
    finally:
        _publisher.reset(token)
        publisher.remove()
        held.owner = None
        locking.release(fd)
        held.lock.release()


def phase(text: str) -> None:
    """Publish the step the current build is in when it has no progress loop (``assembling the FAISS index``)."""
    publisher = _publisher.get()
    if publisher is not None:
        publisher.phase(text)


def _take_file_lock(folder: Path, waiter: _Waiter) -> int | None:
    path = lock_file(folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return locking.acquire(path, waiter.left(), on_wait=waiter.waiting, on_timeout=waiter.timed_out)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        log.debug("no build lock for %s (%s): the folder is read-only, so nothing is built there", folder, exc)
        return None


def read_progress(folder: Path) -> JSONObject | None:
    """What the holder of the build lock of ``folder`` last published (None: nothing readable)."""
    try:
        data = json.loads(progress_file(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_progress(state: JSONObject | None, now: float | None = None) -> str:
    """``dense build: 10,000 of 19,089 (52 %), 3 s ago`` from a published progress record."""
    if not state:
        return "no progress published yet"
    text = str(state.get("phase") or "working")
    done, total = state.get("done"), state.get("total")
    if isinstance(done, (int, float)):
        text += f": {done:,.0f}"
        if isinstance(total, (int, float)) and total > 0:
            text += f" of {total:,.0f} ({100 * done / total:.0f} %)"
    updated = state.get("updated_at")
    if isinstance(updated, (int, float)):
        text += f", {duration((now if now is not None else time.time()) - updated)} ago"
    return text


class _Waiter:
    """The messages (and the time limit) of one wait for the lock of ``folder``."""

    def __init__(self, folder: Path, what: str, limit: float | None) -> None:
        self.folder, self.what, self.limit = folder, what, limit
        self.lock = lock_file(folder)
        self.started: float | None = None
        self.said = False
        self.reported_at = 0.0

    def left(self) -> float | None:
        if self.limit is None:
            return None
        spent = 0.0 if self.started is None else time.monotonic() - self.started
        return max(self.limit - spent, 0.0)

    def holder(self) -> tuple[int | None, str, str]:
        """The holder's pid, how to name it (``pid 4242 on node17``) and how far its build is."""
        pid = locking.holder_pid(self.lock)
        state = read_progress(self.folder)
        if state is not None and state.get("pid") != pid:
            state = None  # left by a killed holder: not this build's progress
        who = f"pid {pid if pid is not None else 'unknown'}"
        if state and state.get("host") and state.get("host") != socket.gethostname():
            who += f" on {state['host']}"
        if pid == os.getpid():
            who += " (another thread of this process)"
        return pid, who, describe_progress(state)

    def waiting(self) -> None:
        """Called at each try while another build holds the lock: say so after SAY_AFTER_S seconds, then report
        every REPORT_EVERY_S; raise once the time allowed has passed."""
        now = time.monotonic()
        if self.started is None:
            self.started = now
        if self.limit is not None and now - self.started >= self.limit:
            raise self.timed_out()
        if not self.said:
            if now - self.started < SAY_AFTER_S:
                return
            self.said, self.reported_at = True, now
            _, who, how_far = self.holder()
            log.warning("%s %s is being built by %s (lock %s; %s); waiting for that build to end, then using "
                        "it%s", self.what, self.folder, who, self.lock, how_far,
                        "" if self.limit is None else f" (at most {duration(self.limit)}, {WAIT_ENV})")
        elif now - self.reported_at >= REPORT_EVERY_S:
            self.reported_at = now
            _, who, how_far = self.holder()
            progress_log.info("waiting %s for %s to build %s %s: %s", duration(now - self.started), who, self.what,
                              self.folder, how_far)

    def timed_out(self) -> BusyError:
        pid, who, how_far = self.holder()
        waited = 0.0 if self.started is None else time.monotonic() - self.started
        return BusyError(
            f"{self.what} {self.folder} is still being built by {who} after {duration(waited)} of waiting (lock file "
            f"{self.lock}; {how_far})",
            hint=f"let that build end and run this again (it then uses the index), or allow a longer wait: "
            f"{WAIT_ENV}=SECONDS (unset: no limit)",
            lock=str(self.lock), holder=pid)

    def over(self) -> None:
        """The lock is ours: after a wait it announced, say so (the caller now finds the index built, or resumes
        it)."""
        if self.said and self.started is not None:
            progress_log.info("%s %s: the other build is over after %s of waiting; using what it built (anything "
                              "still missing is built now)", self.what, self.folder,
                              duration(time.monotonic() - self.started))


class _Publisher:
    """The holder's side: its progress, written to the progress file for the processes that wait."""

    def __init__(self, path: Path, what: str, folder: Path, *, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        now = time.time()
        self.state: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname(), "what": what,
                                      "folder": str(folder), "phase": None, "done": None, "total": None,
                                      "started_at": now, "updated_at": now}
        self.written_at = -math.inf  # nothing is written before there is progress: a job that only checks that
        # the index is up to date (every job of an array) writes nothing but its pid in the lock file

    def count(self, desc: str, done: float, total: float | None) -> None:
        """A progress loop's count (:func:`medcite.progress.watched`): written now and then, a new phase at once."""
        new = desc != self.state["phase"] or self.state["done"] is None
        self.state.update(phase=desc, done=done, total=total)
        if new or time.monotonic() - self.written_at >= PUBLISH_EVERY_S or (total is not None and done >= total):
            self._write()

    def phase(self, text: str) -> None:
        self.state.update(phase=text, done=None, total=None)
        self._write()

    def _write(self) -> None:
        if not self.enabled:
            return
        self.state["updated_at"] = time.time()
        self.written_at = time.monotonic()
        try:
            write_json(self.path, self.state)
        except (OSError, WriteError) as exc:  # a courtesy to the waiting jobs: never stop the build for it
            log.debug("could not publish the build progress at %s: %s", self.path, exc)

    def remove(self) -> None:
        """Remove the progress file (ours, or one a killed holder left)."""
        if self.enabled:
            self.path.unlink(missing_ok=True)
