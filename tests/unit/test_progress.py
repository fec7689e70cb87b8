"""medcite.progress: rate and time left, when lines are written (no bar, under a bar, nested, quiet), by a fake
clock: no test sleeps."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest

from medcite import progress as P


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(P, "clock", fake)
    return fake


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def lines() -> Iterator[list[str]]:
    """What the loops log on medcite.progress from now on (a live list)."""
    logger = logging.getLogger("medcite.progress")
    handler, level = Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_rate_and_time_left_count_only_this_runs_work() -> None:
    rate = P.Rate(65_000, start=100.0, initial=5_000)  # a resumed build: 5,000 encoded before
    assert rate.rate(110.0) is None and rate.left(110.0) is None
    rate.done = 360
    assert rate.rate(110.0) == pytest.approx(36.0)
    assert rate.left(110.0) == pytest.approx((65_000 - 5_360) / 36)
    assert rate.line(110.0, "dense build", "doc") == (
        "dense build: 5,360 of 65,000 docs (8 %) in 10 s, 36 docs/s: about 28 min left")
    rate.done = 60_000
    assert rate.summary(110.0 + 1_800, "dense build", "doc") == "dense build: done, 65,000 docs in 30 min (33 docs/s)"


def test_when_lines_are_due() -> None:
    rate = P.Rate(200, start=0.0)
    assert not rate.due(50.0, periodic=True)  # nothing done yet
    rate.done = 3
    assert not rate.due(9.9, periodic=True) and rate.due(10.0, periodic=True)
    rate.mark(10.0)
    assert not rate.due(39.0, periodic=False)  # under a bar only the first line
    assert not rate.due(39.0, periodic=True) and rate.due(40.0, periodic=True)  # every 30 s
    rate.done = 20  # a new tenth of the total
    assert not rate.due(14.9, periodic=True) and rate.due(15.0, periodic=True)  # ... but 5 s after the last line
    rate.done = 200
    assert not rate.due(100.0, periodic=True)  # finished: the summary says it
    short = P.Rate(130, start=0.0)
    short.done = 100
    assert not short.due(10.0, periodic=True)  # 3 s left: no line for a loop about to end
    short.done = 50
    assert short.due(10.0, periodic=True)


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (40, "40 s"), (59.6, "1 min"), (90.1, "2 min"),
                                               (1_800, "30 min"), (7_500, "2 h 05 min")])
def test_durations(seconds: float, text: str) -> None:
    assert P.duration(seconds) == text


def test_words() -> None:
    assert [P.plural(u) for u in ("doc", "query", "day", "B", "q", "steps")] == ["docs", "queries", "days", "B", "q",
                                                                                   "steps"]
    assert [P.speed(r) for r in (1234.5, 36.4, 2.46, 0.254)] == ["1,234", "36", "2.5", "0.25"]
    rate = P.Rate(10_000_000, start=0.0)
    rate.done = 3_000_000
    assert rate.line(12.0, "f.xml.gz", "B", unit_scale=True) == (
        "f.xml.gz: 3.00MB of 10.0MB (30 %) in 12 s, 250kB/s: about 28 s left")


def test_without_a_terminal_a_loop_logs_lines_then_a_summary(clock: Clock, lines: list[str]) -> None:
    at = []
    with P.progress(total=200, desc="loop", unit="doc") as bar:
        for k in range(1, 201):
            clock.t = float(k)
            before = len(lines)
            bar.update(1)
            if len(lines) > before:
                at.append(k)
    assert at == [10, 20, 40, 60, 80, 100, 120, 140, 160, 180]  # first after 10 s, then each tenth (every 20 s)
    assert lines[0] == "loop: 10 of 200 docs (5 %) in 10 s, 1.0 docs/s: about 3 min left"
    assert lines[-1] == "loop: done, 200 docs in 3 min (1.0 docs/s)"
    assert len(lines) == len(at) + 1


def test_without_a_total_lines_come_every_30_s(clock: Clock, lines: list[str]) -> None:
    for k, _ in enumerate(P.progress(iter(range(100)), desc="stream", unit="query"), start=1):
        clock.t = float(k)  # item k is worked on until the loop asks for the next one: then it counts
    assert [m.split(" in ")[1].split(",")[0] for m in lines[:-1]] == ["10 s", "40 s", "1 min", "2 min"]  # 10/40/70/100
    assert lines[0] == "stream: 10 queries in 10 s, 1.0 queries/s"
    assert lines[-1] == "stream: done, 100 queries in 2 min (1.0 queries/s)"


def test_a_loop_inside_one_of_the_same_unit_moves_its_parent(clock: Clock, lines: list[str]) -> None:
    with P.progress(total=200, desc="dense build", unit="doc") as build:
        for _chunk in range(2):
            with P.progress(total=100, desc="encode articles", unit="doc", leave=False) as batches:
                for _ in range(20):
                    clock.t += 1.0
                    batches.update(5)
                    assert build.n <= 200
            build.update(100)  # the chunk is written: nothing counted twice
        assert build.rate.done == 200
    assert lines[0] == "dense build: 50 of 200 docs (25 %) in 10 s, 5.0 docs/s: about 30 s left"  # inside chunk 1
    assert all(m.startswith("dense build:") for m in lines)  # the inner loop writes nothing of its own
    assert lines[-1] == "dense build: done, 200 docs in 40 s (5.0 docs/s)"


def test_a_loop_inside_one_of_another_unit_reports_itself(clock: Clock, lines: list[str]) -> None:
    with P.progress(total=3, desc="topics", unit="topic") as topics:
        with P.progress(total=100, desc="encode", unit="doc") as docs:
            for _ in range(100):
                clock.t += 1.0
                docs.update(1)
        topics.update(1)
    assert lines[0].startswith("encode: 10 of 100 docs")


def test_under_a_bar_only_announced_work_logs_and_only_its_first_line(
        clock: Clock, lines: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "enabled", lambda: True)

    def run() -> None:
        with P.progress(total=100, desc="build", unit="doc") as bar:
            for _ in range(100):
                clock.t += 1.0
                bar.update(1)

    run()
    assert lines == []  # the bar shows rate and time left
    with P.announced():
        run()
    assert lines == ["build: 10 of 100 docs (10 %) in 10 s, 1.0 docs/s: about 2 min left"]


def test_quiet_and_disabled_loops_write_nothing(clock: Clock, lines: list[str]) -> None:
    P.set_quiet(True)
    for _ in P.progress(range(50), desc="quiet", unit="doc"):
        clock.t += 1.0
    P.set_quiet(False)
    with P.progress(total=50, desc="off", unit="doc", disable=True) as off:
        with P.progress(total=50, desc="inner", unit="doc") as inner:  # not a part of a silent loop
            for _ in range(50):
                clock.t += 1.0
                off.update(1)
                inner.update(1)
    assert lines and all(m.startswith("inner:") for m in lines)


def test_an_interrupted_loop_says_where_it_stopped_and_leaves_no_parent_behind(clock: Clock, lines: list[str]) -> None:
    with pytest.raises(KeyboardInterrupt):
        with P.progress(total=100, desc="build", unit="doc") as bar:
            for _ in range(30):
                clock.t += 1.0
                bar.update(1)
            raise KeyboardInterrupt
    assert lines[-1] == "build: stopped at 30 of 100 docs in 30 s (1.0 docs/s)"
    for i in P.progress(range(10), desc="left early", unit="doc"):
        if i == 3:
            break
    assert P._innermost() is None  # a later loop is nobody's part


def test_the_cli_shows_progress_lines_by_default_and_hides_them_with_quiet() -> None:
    from medcite.cli.main import setup_logging

    level = logging.getLogger("medcite.progress").getEffectiveLevel
    setup_logging(0, False)
    assert level() == logging.INFO and logging.getLogger("medcite").getEffectiveLevel() == logging.WARNING
    setup_logging(0, True)
    assert level() == logging.ERROR
    setup_logging(2, False)
    assert level() == logging.DEBUG


def test_the_line_text_is_plain(clock: Clock, lines: list[str]) -> None:
    with P.progress(total=40, desc="training", unit="step") as bar:
        for _ in range(20):
            clock.t += 1.0
            bar.set_postfix(loss="0.532")
            bar.update(1)
    assert re.fullmatch(r"training: 10 of 40 steps \(25 %\) in 10 s, 1\.0 steps/s: about 30 s left \(loss=0\.532\)",
                        lines[0])
