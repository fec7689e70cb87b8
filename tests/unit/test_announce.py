"""medcite.announce: long work on first use is announced with its purpose; short or asked-for work is one INFO
line; the loops of announced work report their measured rate even under a bar."""

from __future__ import annotations

import logging

import pytest

from medcite import announce
from medcite import progress as P
from medcite.announce import Purpose, long_work, purpose

log = logging.getLogger("medcite.test_announce")
GOAL = Purpose("dense", "preset 'hybrid' searches it in its retrieve branch 'dense'",
               ("--set 'retrieve.branches=[\"bm25\"]' (the preset without this branch)",
                "--preset offline (BM25 only)"))


def work(count: int, *, full: bool = True, per_second: float = 40.0) -> bool:
    """Run an empty block as :func:`long_work`; returns whether its loops count as announced."""
    with long_work(log, what="the dense index", doing=f"encoding {count:,} abstracts with MiniLM", count=count,
                   where="/store/indexes/faiss-1", full=full, per_second=per_second):
        return P._announced.get()


def test_long_work_with_a_purpose_is_announced_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="medcite.test_announce")
    with purpose(lambda: GOAL):
        assert work(65_000)  # 65,000 / 40 per s = 27 min
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "building the dense index 'dense' on first use: encoding 65,000 abstracts with MiniLM. This can take long; "
        "the measured rate and time left follow in a few seconds.\n"
        "  why: preset 'hybrid' searches it in its retrieve branch 'dense'\n"
        "  where: /store/indexes/faiss-1 (kept: later runs add only new or changed articles)\n"
        "  to avoid it: --set 'retrieve.branches=[\"bm25\"]' (the preset without this branch); or --preset offline "
        "(BM25 only)")
    assert not P._announced.get()  # only inside the block


def test_an_update_says_it_brings_the_index_up_to_date(caplog: pytest.LogCaptureFixture) -> None:
    with purpose(lambda: GOAL):
        work(2_000, full=False)
    assert caplog.messages[0].startswith("bringing the dense index 'dense' up to date with the store: encoding 2,000")
    assert "(kept:" not in caplog.messages[0]


@pytest.mark.parametrize("count", [0, 5, 799])  # 799 / 40 per s < 20 s
def test_short_work_is_one_info_line(caplog: pytest.LogCaptureFixture, count: int) -> None:
    caplog.set_level(logging.INFO, logger="medcite.test_announce")
    with purpose(lambda: GOAL):
        assert not work(count, full=False)
    if count:
        assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
            (logging.INFO, f"updating the dense index 'dense': encoding {count:,} abstracts with MiniLM, into "
                           "/store/indexes/faiss-1")]
    else:
        assert caplog.records == []


def test_work_without_a_purpose_was_asked_for_and_is_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="medcite.test_announce")
    assert not work(65_000)  # `medcite index dense`: the user asked for it; the bar (or its lines) shows progress
    assert [r.levelno for r in caplog.records] == [logging.INFO]


def test_the_threshold_is_expected_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    with purpose(lambda: GOAL):
        assert not work(1_000, per_second=2_500.0)  # tantivy: 0.4 s
        assert work(100_000, per_second=2_500.0)  # 40 s
        monkeypatch.setattr(announce, "ANNOUNCE_AFTER_S", 0.0)
        assert work(1, per_second=2_500.0)


def test_a_purpose_that_cannot_be_told_does_not_stop_the_work(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> Purpose:
        raise KeyError("retrieve")

    caplog.set_level(logging.INFO, logger="medcite.test_announce")
    with purpose(broken):
        assert not work(65_000)
    assert [r.levelno for r in caplog.records] == [logging.INFO]
