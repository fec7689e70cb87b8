"""BioASQ Task b measures on tiny inline data, every expected value computed by hand (docs/BIOASQ.md)."""

from __future__ import annotations

import math

import pytest

from medcite.errors import ConfigError
from medcite.evaluate.bioasq import (
    document_prf,
    evaluate_phase_a,
    evaluate_phase_b,
    factoid_scores,
    list_prf,
    merged_spans,
    snippet_prf,
    yesno_label,
    yesno_measures,
)
from medcite.evaluate.rouge import best_of, rouge_2, rouge_su, su_units, tokenize
from medcite.types import QAAnswer, Question, Snippet

EPS = 0.00001


def _q(qid: str, qtype: str = "summary", **kw: object) -> Question:
    return Question(qid, qtype, f"{qid}?", **kw)  # type: ignore[arg-type]


# ---- documents ---------------------------------------------------------------------------------------------

TWELVE = tuple(f"r{i}" for i in range(12))


def test_map_divides_by_min_relevant_and_ten() -> None:
    """|R| = 12, hits at ranks 1 and 3: AP = (1/1 + 2/3) / min(12, 10) = 1/6.

    The other denominators give other numbers, so this fails if the convention changes: |R| -> 5/36,
    hits found -> 5/6, 10 always -> 1/6 too (so the second question, |R| = 2, pins that: 5/6, not 1/6).
    """
    gold = [_q("q1", documents=TWELVE), _q("q2", documents=("a1", "a2"))]
    system = [_q("q1", documents=("r0", "x", "r1")), _q("q2", documents=("a1", "x", "a2"))]
    report = evaluate_phase_a(gold, system)
    assert report.per_question["q1"]["ap"] == pytest.approx(1 / 6)
    assert report.per_question["q1"]["ap"] != pytest.approx((1 + 2 / 3) / 12)
    assert report.per_question["q2"]["ap"] == pytest.approx(5 / 6)  # (1 + 2/3) / min(2, 10)
    docs = report.measures["documents"]
    assert docs["MAP"] == pytest.approx(0.5)
    assert docs["GMAP"] == pytest.approx(math.sqrt((1 / 6 + EPS) * (5 / 6 + EPS)))
    # P: 2/3 and 2/3; R: 2/12 and 2/2; F1: 2PR/(P+R) = 4/15 and 4/5
    assert docs["P"] == pytest.approx(2 / 3)
    assert docs["R"] == pytest.approx((1 / 6 + 1) / 2)
    assert docs["F1"] == pytest.approx((4 / 15 + 4 / 5) / 2)


def test_gmap_epsilon_keeps_a_zero_ap_from_zeroing_the_run() -> None:
    gold = [_q("q1", documents=("a",)), _q("q2", documents=("b",))]
    report = evaluate_phase_a(gold, [_q("q1", documents=("a",)), _q("q2", documents=("x",))])
    # exp((log(1 + 1e-5) + log(0 + 1e-5)) / 2) = sqrt(1.00001 * 0.00001)
    assert report.measures["documents"]["GMAP"] == pytest.approx(math.sqrt(1.00001 * EPS))
    assert report.measures["documents"]["MAP"] == pytest.approx(0.5)


def test_documents_repeats_dropped_and_cut_at_ten() -> None:
    assert document_prf(["a", "a", "b"], {"a", "b"}) == pytest.approx((1.0, 1.0, 1.0))
    eleven = [f"x{i}" for i in range(10)] + ["a"]
    assert document_prf(eleven, {"a"}).precision == 0.0  # the 11th document is not scored
    assert document_prf([], {"a"}) == pytest.approx((0.0, 0.0, 0.0))


def test_missing_questions_skipped_or_zero() -> None:
    gold = [_q("q1", documents=("a",)), _q("q2", documents=("b",))]
    system = [_q("q1", documents=("a",)), _q("zz", documents=("a",))]
    skip = evaluate_phase_a(gold, system)
    assert skip.missing == ["q2"] and skip.not_in_gold == ["zz"] and skip.counts["documents"] == 1
    assert skip.measures["documents"]["MAP"] == 1.0
    zero = evaluate_phase_a(gold, system, missing="zero")
    assert zero.counts["documents"] == 2 and zero.measures["documents"]["MAP"] == 0.5
    with pytest.raises(ConfigError):
        evaluate_phase_a(gold, system, missing="ignore")


# ---- snippets ----------------------------------------------------------------------------------------------


def _s(pmid: str, begin: int, end: int, section: str = "abstract") -> Snippet:
    return Snippet(pmid, "t", section, begin, section, end)


def test_snippet_overlap_per_document_and_section() -> None:
    """Inclusive spans. Gold: doc 1 abstract [10, 19] (10 chars), doc 1 title [0, 4] (5).
    System: doc 1 abstract [15, 24] (10, shares 15..19 = 5), doc 2 abstract [0, 9] (10, other document: 0),
    doc 1 title [0, 4] (5, shares 5). P = 10 / 25, R = 10 / 15, F1 = 2PR/(P+R) = 0.5."""
    gold = [_s("1", 10, 19), _s("1", 0, 4, "title")]
    system = [_s("1", 15, 24), _s("2", 0, 9), _s("1", 0, 4, "title")]
    prf = snippet_prf(system, gold)
    assert prf.precision == pytest.approx(0.4)
    assert prf.recall == pytest.approx(2 / 3)
    assert prf.f1 == pytest.approx(0.5)


def test_snippet_offsets_are_inclusive_as_the_official_snippet_class() -> None:
    # [0, 9] and [9, 20] share character 9: 1 of 10 sent characters, 1 of 12 gold ones
    prf = snippet_prf([_s("1", 0, 9)], [_s("1", 9, 20)])
    assert prf.precision == pytest.approx(1 / 10) and prf.recall == pytest.approx(1 / 12)
    # the same offsets in another section share nothing
    assert snippet_prf([_s("1", 0, 9, "title")], [_s("1", 0, 9)]).f1 == 0.0


def test_overlapping_snippets_are_merged_before_counting() -> None:
    """[10, 19] and [15, 24] merge into [10, 24] (15 chars); gold [10, 19]: P = 10/15, R = 1.
    Unmerged, the shared characters would count twice (P 15/20, R 15/10)."""
    prf = snippet_prf([_s("1", 10, 19), _s("1", 15, 24)], [_s("1", 10, 19)])
    assert prf.precision == pytest.approx(10 / 15) and prf.recall == pytest.approx(1.0)
    assert merged_spans([_s("1", 10, 19), _s("1", 15, 24), _s("1", 30, 31)]) == {
        ("1", "abstract", "abstract"): [(10, 24), (30, 31)]}
    # gold snippets repeated by two annotators merge too
    assert snippet_prf([_s("1", 10, 19)], [_s("1", 10, 19), _s("1", 12, 15)]).recall == pytest.approx(1.0)


def test_snippets_cut_at_ten_and_questions_without_gold_snippets_skipped() -> None:
    eleven = [_s("9", 0, 0)] * 10 + [_s("1", 0, 9)]
    assert snippet_prf(eleven, [_s("1", 0, 9)]).recall == 0.0
    gold = [_q("q1", snippets=(_s("1", 0, 9),)), _q("q2", documents=("1",))]
    report = evaluate_phase_a(gold, [_q("q1", snippets=(_s("1", 0, 4),)), _q("q2")])
    assert report.counts["snippets"] == 1  # q2 has no gold snippet
    assert report.measures["snippets"] == pytest.approx({"P": 1.0, "R": 0.5, "F1": 2 / 3})


# ---- yes/no ------------------------------------------------------------------------------------------------


def test_yesno_label_is_the_official_substring_test() -> None:
    assert [yesno_label(a) for a in ("Yes", "no", "NO.", "not sure", "yes and no", "maybe", "")] == [
        "yes", "no", "no", "no", "yes", None, None]
    assert yesno_label(["yes"]) is None


def test_yesno_macro_f1() -> None:
    """gold yes, yes, yes, no; answers yes, yes, no, no. yes: TP 2, FN 1 -> F1 4/5; no: TP 1, FP 1 -> 2/3."""
    m = yesno_measures([("yes", "yes"), ("yes", "yes"), ("yes", "no"), ("no", "no")])
    assert m["accuracy"] == pytest.approx(0.75)
    assert m["f1_yes"] == pytest.approx(0.8) and m["f1_no"] == pytest.approx(2 / 3)
    assert m["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)


def test_yesno_macro_f1_with_one_class_absent() -> None:
    # no "no" in gold nor answers: F1(no) = 0/0 -> 0, so a perfect run has macro-F1 0.5 (as the official code)
    assert yesno_measures([("yes", "yes"), ("yes", "yes")]) == pytest.approx(
        {"accuracy": 1.0, "f1_yes": 1.0, "f1_no": 0.0, "macro_f1": 0.5})
    # one wrong answer: F1(yes) = 2*1 / (2*1 + 1) = 2/3; F1(no) = 0 / (0 + 1) = 0
    assert yesno_measures([("yes", "yes"), ("yes", "no")])["macro_f1"] == pytest.approx(1 / 3)
    # an answer that is neither counts against both classes, as a wrong one
    assert yesno_measures([("no", None), ("no", "no")])["f1_no"] == pytest.approx(2 / 3)


# ---- factoid and list --------------------------------------------------------------------------------------

FACTOID_GOLD = (("XIa", "factor XIa"), ("FXI",))


def test_factoid_synonyms_case_insensitive() -> None:
    assert factoid_scores(["Factor xia", "b"], FACTOID_GOLD) == (1.0, 1.0, 1.0)
    assert factoid_scores(["b", " fxi "], FACTOID_GOLD) == (0.0, 1.0, 0.5)
    assert factoid_scores(["a", "b", "c", "d", "e", "XIa"], FACTOID_GOLD) == (0.0, 0.0, 0.0)  # only 5 read
    assert factoid_scores([], FACTOID_GOLD) == (0.0, 0.0, 0.0)


def test_list_each_gold_entity_counted_once() -> None:
    """Items brca1 (hit: BRCA1), "Breast cancer 1" (BRCA1 already used: FP), p53 (hit: TP53), KRAS (FP);
    ATM unmatched: FN. P = 2/4, R = 2/3, F1 = 4/7."""
    gold = (("BRCA1", "breast cancer 1"), ("TP53", "p53"), ("ATM",))
    prf = list_prf(["brca1", "Breast cancer 1", "p53", "KRAS"], gold)
    assert prf.precision == pytest.approx(0.5) and prf.recall == pytest.approx(2 / 3)
    assert prf.f1 == pytest.approx(4 / 7)
    assert list_prf([], gold) == pytest.approx((0.0, 0.0, 0.0))


def test_list_left_over_entity_named_by_an_item_is_not_missed() -> None:
    # two gold entities sharing a name: the item uses up the first; the second is not a false negative
    # because an answered item names it (calculatePRFforListQuestions' second loop)
    assert list_prf(["x"], (("x",), ("x", "y"))) == pytest.approx((1.0, 1.0, 1.0))
    assert list_prf(["x", "x"], (("x",),)) == pytest.approx((0.5, 1.0, 2 / 3))


def test_phase_b_by_type_with_counts() -> None:
    gold = [
        _q("y1", "yesno", exact_answer="yes"), _q("y2", "yesno", exact_answer="no"),
        _q("f1", "factoid", exact_answer=FACTOID_GOLD), _q("f2", "factoid", exact_answer=FACTOID_GOLD),
        _q("l1", "list", exact_answer=(("a",), ("b",))),
        _q("s1"), _q("y3", "yesno"),  # y3 has no gold exact answer: not scored
    ]
    system = [QAAnswer("y1", "yes", ""), QAAnswer("y2", "Yes", ""), QAAnswer("f1", ("q", "fxi"), ""),
              QAAnswer("f2", "XIa", ""), QAAnswer("l1", ("a", "c"), ""), QAAnswer("y3", "yes", "")]
    report = evaluate_phase_b(gold, system, rouge=False)
    assert report.counts == {"gold": 7, "yesno": 2, "factoid": 2, "list": 1, "ideal": 0, "missing": 1}
    assert report.missing == ["s1"] and "ideal" not in report.measures
    # yes: TP 1; one wrong answer -> F1(yes) 2/3, F1(no) 0
    assert report.measures["yesno"] == pytest.approx({"accuracy": 0.5, "f1_yes": 2 / 3, "f1_no": 0.0,
                                                      "macro_f1": 1 / 3})
    assert report.measures["factoid"] == pytest.approx({"strict_accuracy": 0.5, "lenient_accuracy": 1.0,
                                                        "MRR": 0.75})
    assert report.measures["list"] == pytest.approx({"P": 0.5, "R": 0.5, "F1": 0.5})
    zero = evaluate_phase_b(gold[:2], system[:1], missing="zero", rouge=False)
    assert zero.measures["yesno"]["accuracy"] == 0.5 and zero.per_question["y2"] == {"yesno_correct": 0.0}


# ---- ROUGE -------------------------------------------------------------------------------------------------

REF = "the cat sat on the mat"
CAND = "the cat on the mat"


def test_rouge_su4_by_hand() -> None:
    """Reference: 6 unigrams + all C(6,2) = 15 skip-bigrams (no pair is more than 5 apart) = 21 units.
    Candidate: 5 unigrams + C(5,2) = 10 = 15 units, every one of them in the reference (the mat: 2 and 2).
    R = 15/21, P = 15/15, F1 = 2 * 5/7 / (12/7) = 5/6."""
    s = rouge_su(REF, CAND)
    assert s.recall == pytest.approx(5 / 7) and s.precision == pytest.approx(1.0) and s.f1 == pytest.approx(5 / 6)


def test_rouge_su4_gap_limit() -> None:
    """Reference a..g: 7 unigrams + 21 pairs - (a, g) (5 words between) = 27 units.
    "a g": units a, g, (a g); (a g) is not a reference unit -> hit 2. "a f": (a f) has 4 between -> hit 3."""
    assert su_units(tokenize("a b c d e f g")).total() == 27
    ag = rouge_su("a b c d e f g", "a g")
    assert ag.recall == pytest.approx(2 / 27) and ag.precision == pytest.approx(2 / 3)
    af = rouge_su("a b c d e f g", "a f")
    assert af.recall == pytest.approx(3 / 27) and af.precision == pytest.approx(1.0)


def test_rouge_uses_rouge_score_tokens_and_porter_stemmer() -> None:
    assert tokenize("Cancers, treated!") == ["cancer", "treat"]
    assert rouge_su("cancer", "Cancers").f1 == 1.0
    assert rouge_su("cancer", "").f1 == 0.0 and rouge_su("", "cancer").f1 == 0.0


def test_rouge_2_by_hand_and_best_reference() -> None:
    """Bigrams: reference 5, candidate 4 (the cat, cat on, on the, the mat), 3 shared: R 3/5, P 3/4, F1 2/3."""
    s = rouge_2(REF, CAND)
    assert (s.recall, s.precision, s.f1) == pytest.approx((0.6, 0.75, 2 / 3))
    best = best_of(["dogs bark loudly", REF], CAND, "rouge2")
    assert best.recall == pytest.approx(0.6)
    assert best_of([], CAND, "rougesu4").f1 == 0.0


def test_su_with_no_gap_is_rouge_1_plus_rouge_2() -> None:
    """A differential check against rouge-score: SU0 units are unigrams + bigrams, so its hits are ROUGE-1's
    plus ROUGE-2's."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)
    for ref, cand in [(REF, CAND), ("Aspirin inhibits COX-1 and COX-2 enzymes.", "aspirin inhibits cox enzymes")]:
        n = len(tokenize(ref))
        s = scorer.score(ref, cand)
        hits = s["rouge1"].recall * n + s["rouge2"].recall * (n - 1)
        assert rouge_su(ref, cand, max_gap=0).recall == pytest.approx(hits / (2 * n - 1))


def test_phase_b_ideal_answers() -> None:
    gold = [_q("s1", ideal_answers=("dogs bark loudly", REF)), _q("s2", ideal_answers=(REF,))]
    report = evaluate_phase_b(gold, [QAAnswer("s1", None, CAND), QAAnswer("s2", None, "")])
    assert report.counts["ideal"] == 2
    assert report.per_question["s1"]["rouge2_recall"] == pytest.approx(0.6)
    assert report.per_question["s1"]["rougesu4_f1"] == pytest.approx(5 / 6)
    assert report.measures["ideal"] == pytest.approx({"rouge2_recall": 0.3, "rouge2_f1": 1 / 3,
                                                      "rougesu4_recall": 5 / 14, "rougesu4_f1": 5 / 12})
