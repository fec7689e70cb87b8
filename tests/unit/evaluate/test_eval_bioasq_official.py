"""BioASQ MAP/GMAP under the official evaluator's definition (EvaluatorTask1b -phaseA -e 8), by hand.

The official evaluator skips gold questions absent from the submission (they enter no mean), scores a
question whose documents hold nothing relevant as AP 0, and takes GMAP = exp(mean(log(AP + 0.00001))).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medcite.errors import ConfigError
from medcite.evaluate.bioasq_map import missing_questions, per_query_ap
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.types import Hit

EPS = 0.00001


def _run(docs: list[str]) -> list[Hit]:
    return [Hit(d, 10.0 - i, i + 1) for i, d in enumerate(docs)]


TWELVE = {f"r{i}": 1 for i in range(12)}
QRELS = {
    "qa": {"a1": 1, "a2": 1},  # ranks 1 and 3 -> (1/1 + 2/3) / 2 = 5/6
    "qb": {"b1": 1},  # nothing relevant retrieved -> AP 0
    "qc": {"c1": 1, "c2": 1, "c3": 1},  # missing from the run
    "qd": TWELVE,  # |R| = 12, ranks 1 and 3 -> (1 + 2/3) / min(12, 10) = 1/6
}
RUN = {"qa": _run(["a1", "x", "a2"]), "qb": _run(["x", "y"]), "qd": _run(["r0", "n", "r1"])}


def test_official_convention_skips_the_missing_question() -> None:
    report = evaluate_retrieval(RUN, QRELS, ["MAP@10", "GMAP@10", "P@1"], missing="skip")
    assert report.missing_policy == "skip" and report.missing == ["qc"]
    assert report.queries == 3 and report.gold_queries == 4
    assert sorted(report.per_query) == ["qa", "qb", "qd"]  # qc is not scored at all
    assert report.per_query["qa"]["MAP@10"] == pytest.approx(5 / 6)
    assert report.per_query["qb"]["MAP@10"] == 0.0
    assert report.per_query["qd"]["MAP@10"] == pytest.approx(1 / 6)
    # MAP = (5/6 + 0 + 1/6) / 3 = 1/3
    assert report.aggregate["MAP@10"] == pytest.approx(1 / 3)
    # GMAP = ((5/6 + 1e-5) * (0 + 1e-5) * (1/6 + 1e-5)) ** (1/3) = 0.0111575
    assert report.aggregate["GMAP@10"] == pytest.approx(((5 / 6 + EPS) * EPS * (1 / 6 + EPS)) ** (1 / 3))
    assert report.aggregate["GMAP@10"] == pytest.approx(0.0111575, abs=1e-7)
    # the same questions for the ir_measures metrics: P@1 = (1 + 0 + 1) / 3
    assert report.aggregate["P@1"] == pytest.approx(2 / 3)


def test_zero_convention_scores_the_missing_question_zero() -> None:
    report = evaluate_retrieval(RUN, QRELS, ["MAP@10", "GMAP@10", "P@1"], missing="zero")
    assert report.missing_policy == "zero" and report.missing == ["qc"]
    assert report.queries == 4 and report.gold_queries == 4
    assert report.per_query["qc"] == {"MAP@10": 0.0, "GMAP@10": 0.0, "P@1": 0.0}
    # MAP = (5/6 + 0 + 0 + 1/6) / 4 = 1/4
    assert report.aggregate["MAP@10"] == pytest.approx(1 / 4)
    # GMAP = ((5/6 + 1e-5) * 1e-5 * 1e-5 * (1/6 + 1e-5)) ** (1/4) = 0.0019305
    assert report.aggregate["GMAP@10"] == pytest.approx(((5 / 6 + EPS) * EPS * EPS * (1 / 6 + EPS)) ** 0.25)
    assert report.aggregate["GMAP@10"] == pytest.approx(0.0019305, abs=1e-7)
    assert report.aggregate["P@1"] == pytest.approx(2 / 4)
    assert evaluate_retrieval(RUN, QRELS, ["MAP@10"]).missing_policy == "zero"  # the default
    assert report.as_dict()["missing_policy"] == "zero" and report.as_dict()["missing_from_run"] == ["qc"]


def test_present_with_no_documents_is_scored_not_skipped() -> None:
    # the official evaluator scores a question that is in the submission with an empty document list: AP 0
    run = {"qa": _run(["a1", "x", "a2"]), "qb": []}
    report = evaluate_retrieval(run, {"qa": QRELS["qa"], "qb": QRELS["qb"]}, ["MAP@10"], missing="skip")
    assert report.missing == [] and report.queries == 2
    assert report.aggregate["MAP@10"] == pytest.approx((5 / 6 + 0) / 2)
    assert missing_questions({"qb": []}, ["qa", "qb"]) == ["qa"]


def test_per_query_ap_conventions() -> None:
    ranking = {"qa": ["a1", "x", "a2"]}
    relevant = {"qa": {"a1", "a2"}, "qc": {"c1"}}
    assert per_query_ap(ranking, relevant) == pytest.approx({"qa": 5 / 6, "qc": 0.0})  # default: zero
    assert per_query_ap(ranking, relevant, missing="skip") == pytest.approx({"qa": 5 / 6})
    with pytest.raises(ConfigError, match="'bogus'"):
        per_query_ap(ranking, relevant, missing="bogus")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="skip"):
        evaluate_retrieval(RUN, QRELS, ["MAP@10"], missing="all")  # type: ignore[arg-type]


def _official_map_gmap(
    gold: dict[str, list[str]], submission: dict[str, list[str]]
) -> tuple[float, float]:
    """An independent oracle that follows EvaluatorTask1b's steps literally: every gold question the
    submission contains gets AP = sum over its whole list (read without repeats, first occurrence kept)
    of precision-at-r * rel(r), divided by min(10, |gold|), or 0 when none of its documents is relevant;
    others are skipped."""
    aps = []
    for qid, golden in gold.items():
        if qid not in submission:
            continue
        docs: list[str] = []
        for d in submission[qid]:
            if d not in docs:
                docs.append(d)
        total = 0.0
        for r in range(1, len(docs) + 1):
            precision = sum(d in golden for d in docs[:r]) / r
            total += precision * (docs[r - 1] in golden)
        hit = any(d in golden for d in docs)
        aps.append(total / min(10.0, len(golden)) if hit else 0.0)
    return sum(aps) / len(aps), math.exp(sum(math.log(ap + EPS) for ap in aps) / len(aps))


_DOC = st.sampled_from([f"d{i}" for i in range(15)])


@given(
    st.lists(st.tuples(st.sets(_DOC, min_size=1, max_size=13), st.none() | st.lists(_DOC, max_size=10)),
             min_size=1, max_size=6)
)
def test_matches_the_official_steps(questions: list[tuple[set[str], list[str] | None]]) -> None:
    gold = {f"q{i}": sorted(rel) for i, (rel, _) in enumerate(questions)}
    submission = {f"q{i}": docs for i, (_, docs) in enumerate(questions) if docs is not None}
    if not submission:
        return
    report = evaluate_retrieval(
        {q: _run(d) for q, d in submission.items()},
        {q: dict.fromkeys(rel, 1) for q, rel in gold.items()},
        ["MAP@10", "GMAP@10"],
        missing="skip",
    )
    official_map, official_gmap = _official_map_gmap(gold, submission)
    assert report.aggregate["MAP@10"] == pytest.approx(official_map)
    assert report.aggregate["GMAP@10"] == pytest.approx(official_gmap)
