"""Progress of long loops: a tqdm bar on a terminal, log lines with the rate and the time left elsewhere.

Every long loop of medcite (index builds, dense encoding, ingest, training and feature loops) goes through
:func:`progress`, so all of them behave the same:

- on a terminal, a tqdm bar (off with ``--quiet``);
- when stderr is not a terminal (CI logs, ``nohup``, a pipe to a file) there is no bar, so the loop logs a
  line on the ``medcite.progress`` logger (INFO; the CLI shows it by default, ``-q`` hides it) once it has
  run :data:`FIRST_AFTER_S` seconds, then every :data:`EVERY_S` seconds or each tenth of the total, and a
  last line when it ends: done/total, rate, time left;
- work announced by :mod:`medcite.announce` (an index built on first use) logs its first line with the
  measured rate and time left under a bar too: the announcement promised it.

A loop started inside another one of the same unit (the encoder's batches of 32 abstracts inside a dense
build's chunk of 10,000) is part of its parent's work: it shows no bar of its own and moves its parent's
count, so the parent's rate and time left are measured within seconds, not once per chunk.

Another process can follow a loop too: :func:`watched` hands the counts of the outermost loops of a block to a
callback, which an index build uses to publish its progress to the jobs waiting for it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar, overload

from tqdm.auto import tqdm

T = TypeVar("T")

log = logging.getLogger(__name__)

#: seconds a loop runs before its first line with the measured rate and time left
FIRST_AFTER_S = 10.0
#: where no bar shows: at most this many seconds between two lines
EVERY_S = 30.0
#: ... and a line at each tenth of the total, but not within this many seconds of the last one
MIN_GAP_S = 5.0

#: the clock of every loop (seconds); tests put a fake one here
clock: Callable[[], float] = time.monotonic

_quiet = False
_announced: ContextVar[bool] = ContextVar("medcite_progress_announced", default=False)
#: told ``(desc, done, total)`` at each count of the outermost loops started in a :func:`watched` block
Watcher = Callable[[str, float, float | None], None]
_watchers: ContextVar[tuple[Watcher, ...]] = ContextVar("medcite_progress_watchers", default=())
_local = threading.local()  # .open: the loops of this thread not yet closed, innermost last


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def enabled() -> bool:
    """True when progress bars show: not ``--quiet`` and stderr is a terminal."""
    return not _quiet and sys.stderr.isatty()


@contextmanager
def announced() -> Iterator[None]:
    """The loops started in this block (and not inside another loop) log their first line with the measured
    rate and time left even under a progress bar: the work was announced with the promise of that line."""
    token = _announced.set(True)
    try:
        yield
    finally:
        _announced.reset(token)


@contextmanager
def watched(callback: Watcher) -> Iterator[None]:
    """``callback(desc, done, total)`` hears every count of the outermost loops started in this block (the loops
    inside them move their count, as for the bar), whether or not a bar or lines show, ``--quiet`` included. It
    is called at every update: it throttles itself."""
    token = _watchers.set((*_watchers.get(), callback))
    try:
        yield
    finally:
        _watchers.reset(token)


@overload
def progress(iterable: Iterable[T], **kwargs: object) -> Progress[T]: ...
@overload
def progress(iterable: None = None, **kwargs: object) -> Progress[object]: ...
def progress(iterable: Iterable[T] | None = None, **kwargs: object) -> Progress[T] | Progress[object]:
    """A progress bar over ``iterable`` (or updated by hand: ``total=``, ``.update(n)``) that takes tqdm's
    keyword arguments; ``disable=True`` makes it silent (no bar, no lines)."""
    return Progress(iterable, **kwargs)


class Rate:
    """Work done against a total in one run: the measured rate, the time left, and when a line is due.

    Times are given (``now``), never read, so the arithmetic is tested without a clock. ``initial`` is work
    done before this run (a resumed build): it counts toward the total, not toward the rate.
    """

    def __init__(self, total: float | None, *, start: float, initial: float = 0.0, first_after: float = FIRST_AFTER_S,
                 every: float = EVERY_S, min_gap: float = MIN_GAP_S) -> None:
        self.total = total or None
        self.initial = float(initial)
        self.done = 0.0  # in this run
        self.start = start
        self.first_after, self.every, self.min_gap = first_after, every, min_gap
        self.reported_at: float | None = None
        self._tenth = self._tenths()

    def _tenths(self) -> int:
        return int(10 * (self.initial + self.done) / self.total) if self.total else 0

    def rate(self, now: float) -> float | None:
        """Units per second in this run; None before any unit is done."""
        elapsed = now - self.start
        return self.done / elapsed if self.done > 0 and elapsed > 0 else None

    def left(self, now: float) -> float | None:
        """Seconds to the total at the rate measured so far; None without a total or a rate."""
        rate = self.rate(now)
        if self.total is None or rate is None:
            return None
        return max(self.total - self.initial - self.done, 0.0) / rate

    def finished(self) -> bool:
        return self.total is not None and self.initial + self.done >= self.total

    def due(self, now: float, *, periodic: bool) -> bool:
        """The first line once :attr:`first_after` seconds of work are measured (unless less than that is left);
        then (``periodic``) every :attr:`every` seconds, or at a new tenth of the total at least :attr:`min_gap`
        after the last line."""
        if self.done <= 0 or self.finished():
            return False
        if self.reported_at is None:  # not for a loop about to end: nobody waits for it
            left = self.left(now)
            return now - self.start >= self.first_after and (left is None or left >= self.first_after)
        if not periodic:
            return False
        since = now - self.reported_at
        return since >= self.every or (self._tenths() > self._tenth and since >= self.min_gap)

    def mark(self, now: float) -> None:
        """A line was written at ``now``."""
        self.reported_at = now
        self._tenth = self._tenths()

    def line(self, now: float, desc: str, unit: str = "it", *, unit_scale: bool = False) -> str:
        """``dense build: 360 of 65,000 docs (1 %) in 10 s, 36 docs/s: about 30 min left``."""
        done = self.initial + self.done
        text = f"{desc}: {amount(done, unit, unit_scale)}"
        if self.total is not None:
            text += f" of {amount(self.total, unit, unit_scale)}"
        text += "" if unit_scale else f" {plural(unit)}"
        if self.total is not None:
            text += f" ({100 * done / self.total:.0f} %)"
        text += f" in {duration(now - self.start)}"
        rate = self.rate(now)
        if rate is not None:
            text += f", {per_second(rate, unit, unit_scale)}"
        left = self.left(now)
        if left is not None:
            text += f": about {duration(left)} left"
        return text

    def summary(self, now: float, desc: str, unit: str = "it", *, unit_scale: bool = False) -> str:
        """The last line: ``dense build: done, 65,000 docs in 30 min (36 docs/s)`` (or ``stopped at ...``)."""
        done = self.initial + self.done
        if self.total is None or done >= self.total:
            text = f"{desc}: done, {amount(done, unit, unit_scale)}"
        else:
            text = f"{desc}: stopped at {amount(done, unit, unit_scale)} of {amount(self.total, unit, unit_scale)}"
        text += "" if unit_scale else f" {plural(unit)}"
        text += f" in {duration(now - self.start)}"
        rate = self.rate(now)
        if rate is not None:
            text += f" ({per_second(rate, unit, unit_scale)})"
        return text


class Progress(Generic[T]):
    """tqdm plus :class:`Rate`: what :func:`progress` returns (see the module for what it shows where)."""

    def __init__(self, iterable: Iterable[T] | None = None, **kwargs: Any) -> None:
        self.unit = str(kwargs.get("unit", "it"))
        self.desc = str(kwargs.get("desc") or "progress")
        self.unit_scale = bool(kwargs.get("unit_scale", False))
        silent = kwargs.get("disable") is True
        outer = _innermost()
        self._parent = outer if outer is not None and outer.unit == self.unit and not silent else None
        total = kwargs.pop("total", None)
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        bar = not silent and self._parent is None and enabled()
        kwargs["disable"] = not bar
        kwargs.setdefault("dynamic_ncols", True)
        self._bar = tqdm(total=total, **kwargs)
        self._iterable = iterable
        self._silent = silent or self._parent is not None  # a part of its parent's work: the parent reports
        self._lines = not bar  # no bar: periodic lines
        self._announced = _announced.get() and self._parent is None
        self._watchers = _watchers.get() if outer is None and not silent else ()
        self.total = total
        self._committed = float(kwargs.get("initial", 0) or 0)
        self._credit = 0.0  # what the loops inside reported since this loop's last update
        self._shown = self._committed
        self._postfix = ""
        self.rate = Rate(total, start=clock(), initial=self._committed)
        self.closed = False
        if not silent:
            _open().append(self)

    # -- what callers use ---------------------------------------------------------------------------
    def update(self, n: float = 1) -> None:
        fresh = max(0.0, n - self._credit)  # the part the loops inside did not already pass up
        self._committed += n
        self._credit = 0.0
        self._show()
        if self._parent is not None and fresh:
            self._parent._add_credit(fresh)

    def set_postfix(self, **kwargs: object) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        self._bar.set_postfix(**kwargs)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self._silent and not _quiet and self._lines and self.rate.reported_at is not None:
            self._write(self.rate.summary(clock(), self.desc, self.unit, unit_scale=self.unit_scale))
        self._bar.close()
        stack = _open()
        if self in stack:
            stack.remove(self)

    def __iter__(self) -> Iterator[T]:
        if self._iterable is None:
            raise TypeError("progress() without an iterable is updated by hand: use .update(n)")
        try:
            for item in self._iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Progress[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:  # the rest of tqdm's interface (n, set_description, ...)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._bar, name)

    # -- own -------------------------------------------------------------------------------------------
    def _add_credit(self, n: float) -> None:
        self._credit += n
        self._show()
        if self._parent is not None:
            self._parent._add_credit(n)

    def _show(self) -> None:
        shown = self._committed + self._credit
        if self.total:
            shown = min(shown, float(self.total))
        if shown != self._shown:
            self._bar.update(shown - self._shown)
            self._shown = shown
        self.rate.done = shown - self.rate.initial
        for watcher in self._watchers:
            watcher(self.desc, shown, self.total)
        if self._silent or _quiet or not (self._lines or self._announced):
            return
        now = clock()
        if self.rate.due(now, periodic=self._lines):
            line = self.rate.line(now, self.desc, self.unit, unit_scale=self.unit_scale)
            self._write(f"{line} ({self._postfix})" if self._postfix else line)
            self.rate.mark(now)

    def _write(self, text: str) -> None:
        if self._bar.disable:
            log.info("%s", text)
            return
        self._bar.clear()  # a log line on the bar's terminal line would leave both garbled
        log.info("%s", text)
        self._bar.refresh()


def _open() -> list[Progress[Any]]:
    if not hasattr(_local, "open"):
        _local.open = []
    stack: list[Progress[Any]] = _local.open
    return stack


def _innermost() -> Progress | None:
    stack = _open()
    return stack[-1] if stack else None


# -- wording -------------------------------------------------------------------------------------------
def duration(seconds: float) -> str:
    """``40 s``, ``30 min``, ``2 h 05 min``."""
    if seconds < 59.5:
        return f"{max(seconds, 0):.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def speed(rate: float) -> str:
    """A rate with the digits that matter: ``1,200``, ``36``, ``2.5``, ``0.25``."""
    if rate >= 100:
        return f"{rate:,.0f}"
    if rate >= 10:
        return f"{rate:.0f}"
    return f"{rate:.1f}" if rate >= 1 else f"{rate:.2f}"


def plural(unit: str) -> str:
    """``doc`` -> ``docs``, ``query`` -> ``queries``; abbreviations (``B``, ``q``, ``qa``) stay."""
    if len(unit) <= 2 or unit.endswith("s"):
        return unit
    if unit.endswith("y") and unit[-2] not in "aeiou":
        return unit[:-1] + "ies"
    return unit + "s"


def amount(x: float, unit: str, unit_scale: bool) -> str:
    """A count (``65,000``) or, for a scaled unit such as bytes, a size (``12.3MB``)."""
    return f"{tqdm.format_sizeof(x)}{unit}" if unit_scale else f"{x:,.0f}"


def per_second(rate: float, unit: str, unit_scale: bool) -> str:
    """``36 docs/s``, ``4.50MB/s``."""
    return f"{tqdm.format_sizeof(rate)}{unit}/s" if unit_scale else f"{speed(rate)} {plural(unit)}/s"
