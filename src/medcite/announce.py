"""Long work done on first use says so before it starts: what, why, how many, where, and how to avoid it.

An index is built or brought up to date when a command first needs it (``ctx.index(name)``): the first
``medcite ground`` or ``medcite search --preset hybrid`` on a store of 65,000 abstracts encodes all of them
with MiniLM, half an hour to over an hour on 2 CPU cores. The context that asks for the index states the
purpose (:func:`purpose`: which preset and stage need it, how to do without it); the backend that does the
work wraps it in :func:`long_work`, saying what it is about to do. Work expected to take more than
:data:`ANNOUNCE_AFTER_S` at the backend's typical rate is announced in one WARNING, and its loop then logs
its measured rate and time left after its first seconds (:func:`medcite.progress.announced`). Smaller work,
and work nobody announced a purpose for (``medcite index dense``, which the user asked for), is one INFO line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .progress import announced

log = logging.getLogger(__name__)

#: work expected to take longer than this (seconds, at the backend's typical rate) is announced
ANNOUNCE_AFTER_S = 20.0


@dataclass(frozen=True)
class Purpose:
    """Why an index is needed now. ``avoid``: ways not to need it, each a command-line fragment with a note."""

    index: str
    why: str
    avoid: tuple[str, ...] = ()


_purpose: ContextVar[Callable[[], Purpose] | None] = ContextVar("medcite_purpose", default=None)


@contextmanager
def purpose(describe: Callable[[], Purpose]) -> Iterator[None]:
    """The work started in this block serves the :class:`Purpose` ``describe()`` returns (called only when
    the work is announced)."""
    token = _purpose.set(describe)
    try:
        yield
    finally:
        _purpose.reset(token)


def current_purpose() -> Purpose | None:
    describe = _purpose.get()
    if describe is None:
        return None
    try:
        return describe()
    except Exception as exc:  # noqa: BLE001 - a message must not stop the work it announces
        log.debug("no purpose for the announcement: %s", exc)
        return None


@contextmanager
def long_work(logger: logging.Logger, *, what: str, doing: str, count: int, where: str, full: bool,
              per_second: float) -> Iterator[None]:
    """Run the block after saying what it does (see the module).

    ``what``: the kind of thing built (``the dense index``; the purpose adds its name); ``doing``: what the
    block does, with the count (``encoding 65,000 abstracts with all-MiniLM-L6-v2 ...``); ``count``: the
    documents it handles; ``where``: where the result is written; ``full``: a first build (else an update);
    ``per_second``: the backend's typical documents per second, to tell long work from short.
    """
    goal = current_purpose() if count else None
    if goal is None or count / max(per_second, 1e-9) < ANNOUNCE_AFTER_S:
        if count:
            name = f" {goal.index!r}" if goal else ""
            logger.info("%s %s%s: %s, into %s", "building" if full else "updating", what, name, doing, where)
        yield
        return
    logger.warning("%s", announcement(goal, what=what, doing=doing, where=where, full=full))
    with announced():
        yield


def announcement(goal: Purpose, *, what: str, doing: str, where: str, full: bool) -> str:
    """The text of the announcement: one line of what, then why, where and how to avoid it."""
    head = (f"building {what} {goal.index!r} on first use" if full
            else f"bringing {what} {goal.index!r} up to date with the store")
    lines = [f"{head}: {doing}. This can take long; the measured rate and time left follow in a few seconds.",
             f"  why: {goal.why}",
             f"  where: {where}" + (" (kept: later runs add only new or changed articles)" if full else "")]
    if goal.avoid:
        lines.append("  to avoid it: " + "; or ".join(goal.avoid))
    return "\n".join(lines)
