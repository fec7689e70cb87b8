"""Issue 44: medcite's uses of the labels: the evidence-level tie-break among equally relevant hits, the caveat
line of an answer that rests only on animal, in-vitro or case-report studies, and the --design filter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given
from hypothesis import strategies as st

from medcite.design.rules import label_article
from medcite.design.weigh import CAVEAT, caveat_text, equal_groups, keep_matching, prefer_levels, with_caveat
from medcite.types import RCT, Answer, AnswerSentence, Article, Hit, MeshHeading, StudyDesign


def indexed(pmid: str, types: tuple[str, ...], tags: tuple[str, ...] = ("Humans",)) -> StudyDesign:
    return label_article(Article(pmid, "t", publication_types=types, mesh=tuple(MeshHeading(t) for t in tags)))


DESIGNS = {
    "ma": indexed("ma", ("Meta-Analysis",)),
    "rct": indexed("rct", ("Randomized Controlled Trial",)),
    "case": indexed("case", ("Case Reports",)),
    "mouse": indexed("mouse", ("Randomized Controlled Trial",), ("Animals",)),
    "cells": indexed("cells", (), ("In Vitro Techniques",)),
    "review": indexed("review", ("Review",)),
    "both": indexed("both", ("Randomized Controlled Trial",), ("Humans", "Animals")),
}


def labels(pmids: Sequence[str]) -> Mapping[str, StudyDesign]:
    return {p: DESIGNS[p] for p in pmids if p in DESIGNS}


def test_equal_groups_are_runs_within_a_fraction_of_their_first_score() -> None:
    hits = [Hit("a", 10.0), Hit("b", 9.95), Hit("c", 9.9), Hit("d", 9.89), Hit("e", 5.0)]
    assert [[h.pmid for h in g] for g in equal_groups(hits, 0.01)] == [["a", "b", "c"], ["d"], ["e"]]
    assert [[h.pmid for h in g] for g in equal_groups(hits, 0.0)] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert [[h.pmid for h in g] for g in equal_groups([Hit("x", 2.0), Hit("y", 2.0)], 0.0)] == [["x", "y"]]


def test_equally_relevant_hits_read_the_higher_level_then_human_then_recent_first() -> None:
    hits = [Hit("case", 10.0, 1), Hit("review", 10.0, 2), Hit("rct", 10.0, 3), Hit("mouse", 10.0, 4),
            Hit("ma", 9.0, 5), Hit("old", 8.0, 6), Hit("new", 8.0, 7)]
    years = {"old": 1990, "new": 2020}
    designs = {**DESIGNS, "old": DESIGNS["rct"], "new": DESIGNS["rct"]}
    out = prefer_levels(hits, lambda ps: {p: designs[p] for p in ps}, years, 0.0)
    # the tie at 10.0 is ordered RCT > case report > review > animal RCT; the meta-analysis at 9.0 stays below it
    # (less relevant); at 8.0 the more recent of two RCTs comes first
    assert [h.pmid for h in out] == ["rct", "case", "review", "mouse", "ma", "new", "old"]
    assert [h.rank for h in out] == list(range(1, 8)) and [h.score for h in out] == [10.0] * 4 + [9.0, 8.0, 8.0]
    asked: list[str] = []
    prefer_levels([Hit("rct", 3.0), Hit("case", 2.0)], lambda ps: asked.extend(ps) or {}, {}, 0.0)
    assert asked == []  # no tie, nothing labelled


@given(st.lists(st.tuples(st.sampled_from(sorted(DESIGNS)), st.integers(0, 5)), max_size=12,
                unique_by=lambda x: x[0]), st.sampled_from([0.0, 0.01, 0.5]))
def test_the_tie_break_never_moves_a_hit_past_a_more_relevant_one(pairs: list[tuple[str, int]],
                                                                   within: float) -> None:
    hits = sorted((Hit(p, float(s)) for p, s in pairs), key=lambda h: -h.score)
    out = prefer_levels(hits, labels, {}, within)
    assert sorted(h.pmid for h in out) == sorted(h.pmid for h in hits)
    at = 0
    for group in equal_groups(hits, within):  # each run of equal relevance keeps its place; only its order changes
        assert sorted(h.pmid for h in out[at: at + len(group)]) == sorted(h.pmid for h in group)
        at += len(group)


def sentence(text: str, *pmids: str, kind: str = "") -> AnswerSentence:
    return AnswerSentence(text, tuple(pmids), kind=kind)


def test_a_claim_resting_only_on_animal_in_vitro_or_case_reports_gets_one_caveat_line() -> None:
    answer = Answer("q", [sentence("Yes.", "mouse", kind="verdict"),
                          sentence("Drug X works in trials.", "rct", "mouse"),
                          sentence("Drug X cured mice.", "mouse", "cells"), sentence("A patient improved.", "case")])
    out = with_caveat(answer, DESIGNS, 250)
    assert out.sentences[:-1] == answer.sentences
    last = out.sentences[-1]
    assert last.kind == CAVEAT and last.pmids == ()
    assert last.text == "Caution: sentences 3 and 4 rest only on animal studies, in-vitro studies and case reports."
    assert caveat_text([2], ["animal study"]) == "Caution: sentence 2 rests only on animal studies."
    # a study in people and animals is not animal-only; an unlabelled citation is not weighed
    assert with_caveat(Answer("q", [sentence("S.", "both")]), DESIGNS, 250).sentences[-1].kind == ""
    assert with_caveat(Answer("q", [sentence("S.", "mouse", "unknown")]), DESIGNS, 250).sentences[-1].kind == ""
    again = with_caveat(out, DESIGNS, 250)  # idempotent: one line, never two
    assert [s.kind for s in again.sentences].count(CAVEAT) == 1


def test_the_caveat_makes_room_under_the_word_cap() -> None:
    answer = Answer("q", [sentence("Drug X cured mice in one study.", "mouse"), sentence("Trials agree on it.", "rct")])
    out = with_caveat(answer, DESIGNS, 12)  # 6 + 4 words, and the line has 8: the last sentence goes
    assert [s.text for s in out.sentences] == ["Drug X cured mice in one study.",
                                               "Caution: sentence 1 rests only on animal studies."]
    assert out.dropped[-1].what == "sentence" and "caveat" in out.dropped[-1].reason


def test_the_filter_keeps_the_first_k_matching_hits() -> None:
    hits = [Hit("case", 5, 1), Hit("rct", 4, 2), Hit("missing", 3, 3), Hit("mouse", 2, 4), Hit("ma", 1, 5)]
    kept = keep_matching(hits, DESIGNS, [RCT], humans=False, k=5)
    assert [(h.pmid, h.rank) for h in kept] == [("rct", 1), ("mouse", 2)]
    assert [h.pmid for h in keep_matching(hits, DESIGNS, [RCT], humans=True, k=5)] == ["rct"]
    assert [h.pmid for h in keep_matching(hits, DESIGNS, [], humans=True, k=2)] == ["case", "rct"]


def test_only_the_top_of_the_ranking_is_reordered_and_labelled() -> None:
    hits = [Hit("case", 10.0, 1), Hit("rct", 10.0, 2), Hit("review", 5.0, 3), Hit("ma", 5.0, 4)]
    asked: list[str] = []

    def spy(pmids: Sequence[str]) -> Mapping[str, StudyDesign]:
        asked.extend(pmids)
        return labels(pmids)

    out = prefer_levels(hits, spy, {}, 0.0, depth=2)
    assert [h.pmid for h in out] == ["rct", "case", "review", "ma"]  # the tie below the depth keeps its order
    assert sorted(asked) == ["case", "rct"]
