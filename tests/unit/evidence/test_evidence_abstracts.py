"""Whole abstracts as evidence (CLaC 2025 runs A, C, D)."""

from __future__ import annotations

from medcite.evidence.abstracts import AbstractSelector
from medcite.evidence.base import format_block
from medcite.types import Article, Hit, Query

ARTS = {"1": Article("1", "Statins", "Statins lowered LDL. Myalgia was rare."),
        "2": Article("2", "Title only study"),
        "3": Article("3", "Third", "Ezetimibe lowered LDL further.")}


def test_abstracts_in_ranking_order_as_exact_spans() -> None:
    hits = [Hit("3", 3.0, 1), Hit("9", 2.5, 2), Hit("1", 2.0, 3), Hit("2", 1.0, 4)]
    ev = AbstractSelector(docs=4, max_items=2).select([Query("q0", "LDL")], hits, ARTS)
    assert [(e.index, e.pmid, e.section, e.start, e.end) for e in ev] == [
        (1, "3", "abstract", 0, 30), (2, "1", "abstract", 0, 38)]
    assert format_block(ev) == "[1] (3) Ezetimibe lowered LDL further.\n[2] (1) Statins lowered LDL. Myalgia was rare."
    only_title = AbstractSelector(docs=1, max_items=5).select([], [Hit("2", 1.0, 1)], ARTS)
    assert [(e.section, e.text) for e in only_title] == [("title", "Title only study")]
