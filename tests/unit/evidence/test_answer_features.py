"""Candidate answer sentences, their features, and the answer-sentences selector (medcite.evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from medcite.evidence.answer_features import ANSWER_FEATURES, answer_candidates, answer_features, usable
from medcite.evidence.answer_sentences import AnswerSentenceSelector
from medcite.evidence.sentence_features import FEATURES
from medcite.types import Article, Hit, Query

pytest.importorskip("wordfreq")

ABSTRACT = ("BACKGROUND: Zorbalene is a new kinase inhibitor. "
            "METHODS: 1) Adults were randomised. "
            "We enrolled 120 adults with quellitis in a randomised trial of zorbalene infusion. "
            "RESULTS: Zorbalene infusion reversed quellitis in 70% of adults compared with 20% on placebo. "
            "Results. "
            "Copyright 2020 Elsevier Ltd. All rights reserved. "
            "Trial registration: ClinicalTrials.gov NCT01234567 registered the trial in 2018 for adults.")
OTHER = ("Aspirin lowers the risk of myocardial infarction in older men with diabetes. "
         "Zorbalene infusion reversed quellitis in 70% of adults compared with 20% on placebo in the trial. "
         "ent options that target the classical complement pathway are under development for adults.")


def arts() -> dict[str, Article]:
    return {"1": Article("1", "Zorbalene for quellitis", ABSTRACT), "2": Article("2", "Aspirin", OTHER)}


def test_usable_drops_fragments_list_items_headings_and_metadata() -> None:
    assert usable("Zorbalene infusion reversed quellitis in most adults.")
    assert not usable("Results.")  # a fragment
    assert not usable("1) Adults were randomised to two arms of the trial.")  # a list item
    assert not usable("• Adults were randomised to two arms of the trial.")
    assert not usable("MAIN OUTCOME MEASURES AND RESULTS:")  # a heading
    assert not usable("Copyright 2020 Elsevier Ltd. All rights reserved by the publisher.")
    assert not usable("Trial registration: ClinicalTrials.gov NCT01234567 registered in 2018.")
    assert not usable("ent options that target the classical complement pathway are under development.")
    assert not usable(" ".join(["Toripalimab was approved for melanoma in China."] * 12))  # a run-on of 84 words


def test_candidates_are_abstract_spans_without_labels_or_near_copies() -> None:
    articles = arts()
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    texts = [c.text for c in cands]
    assert "Zorbalene for quellitis" not in texts  # titles are not candidates
    assert all(not t.startswith(("RESULTS", "METHODS", "BACKGROUND")) for t in texts)
    assert not any("Copyright" in t or "NCT0" in t or t.startswith("1)") for t in texts)
    for c in cands:  # exact spans of the abstract, labels cut off
        assert articles[c.span.pmid].abstract[c.span.start:c.span.end] == c.text
    # the near-copy in article 2 (one sentence contained in the other) merged into article 1's
    reversed_ = [c for c in cands if c.text.startswith("Zorbalene infusion reversed")]
    assert len(reversed_) == 1 and reversed_[0].copies == 2 and reversed_[0].span.pmid == "1"


def test_features_shape_and_concept_coverage() -> None:
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], arts())
    x, sim = answer_features("Does zorbalene reverse quellitis?", "yesno", cands, ["zorbalene", "quellitis"])
    assert x.shape == (len(cands), len(ANSWER_FEATURES)) and sim.shape == (len(cands), len(cands))
    assert ANSWER_FEATURES[: len(FEATURES)] == FEATURES  # the ideal scorer's features come first, unchanged
    cover = x[:, ANSWER_FEATURES.index("concept_coverage")]
    for c, v in zip(cands, cover, strict=True):
        expected = sum(w in c.text.lower() for w in ("zorbalene", "quellitis")) / 2
        assert v == pytest.approx(expected)
    assert np.all(x[:, ANSWER_FEATURES.index("type_yesno")] == 1)


def test_selector_requires_key_concepts_and_returns_nothing_for_an_unknown_one() -> None:
    sel = AnswerSentenceSelector(None, max_items=3)
    hits = [Hit("2", 2.0, 1), Hit("1", 1.0, 2)]
    ev = sel.select([Query("q", "Does zorbalene infusion reverse quellitis?")], hits, arts())
    assert ev and all("zorbalene" in e.text.lower() or "quellitis" in e.text.lower() for e in ev)
    assert [e.index for e in ev] == list(range(1, len(ev) + 1))
    assert all(e.section == "abstract" and arts()[e.pmid].abstract[e.start:e.end] == e.text for e in ev)
    assert sel.select([Query("q", "Does frobnaxil cure quellitis?")], hits, arts()) == []
    assert sel.last["missing"] == ["frobnaxil"]


def test_a_negated_sentence_is_never_merged_into_its_affirmative_twin() -> None:
    articles = {"1": Article("1", "A", "Aspirin reduced the risk of stroke in older adults with diabetes."),
                "2": Article("2", "B", "Aspirin did not reduce the risk of stroke in older adults with diabetes.")}
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    assert [c.span.pmid for c in cands] == ["1", "2"] and all(c.copies == 1 for c in cands)
    ev = AnswerSentenceSelector(None).select([Query("q", "Does aspirin reduce stroke in diabetes?")],
                                             [Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    assert {e.pmid for e in ev} == {"1", "2"}  # both findings reach the generator


def test_titles_stand_in_only_when_no_abstract_sentence_is_usable() -> None:
    only_titles = {"1": Article("1", "Cabotegravir injections prevent HIV infection in women", ""),
                   "2": Article("2", "Short title", "")}
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], only_titles)
    assert [(c.span.pmid, c.span.section) for c in cands] == [("1", "title")]
    with_abstract = answer_candidates([Hit("1", 2.0, 1), Hit("9", 1.0, 2)],
                                      {**only_titles, "9": Article("9", "A title of six words here", OTHER)})
    assert all(c.span.section == "abstract" for c in with_abstract)
