"""Retrieval metrics against hand-computed values on tiny inline qrels and runs."""

from __future__ import annotations

import math

import pytest

from medcite.errors import ConfigError
from medcite.evaluate.bioasq_map import GMAP_EPSILON, average_precision, geometric_map
from medcite.evaluate.retrieval import evaluate_retrieval, parse_metrics
from medcite.types import Hit


def _run(docs: list[str]) -> list[Hit]:
    return [Hit(d, 10.0 - i, i + 1) for i, d in enumerate(docs)]


QRELS = {
    "q1": {"a": 1, "b": 0, "c": 2},  # relevant a, c (c graded 2)
    "q2": {"x": 1},
    "q3": {"m": 1},  # missing from the run: scores 0
    "q4": {"z": 0},  # no relevant document: not evaluated
}
RUN = {"q1": _run(["a", "b", "d", "c"]), "q2": _run(["y", "x"]), "q9": _run(["a"])}


def test_every_metric_by_hand() -> None:
    report = evaluate_retrieval(RUN, QRELS, ["MAP@10", "GMAP@10", "P@2", "P@10", "R@3", "nDCG@10", "MRR", "AP"])
    assert report.queries == 3 and report.missing == ["q3"]
    per = report.per_query
    # q1: relevant at ranks 1 and 4 -> (1/1 + 2/4) / min(2, 10)
    assert per["q1"]["MAP@10"] == pytest.approx(0.75)
    assert per["q2"]["MAP@10"] == pytest.approx(0.5)  # rank 2 -> (1/2) / 1
    agg = report.aggregate
    assert agg["MAP@10"] == pytest.approx((0.75 + 0.5 + 0) / 3)
    # BioASQ GMAP: geometric mean of AP + 1e-5 (q3 scores AP 0 here: missing counts as 0 by default)
    assert agg["GMAP@10"] == pytest.approx((0.75001 * 0.50001 * 0.00001) ** (1 / 3))
    assert per["q1"]["P@2"] == pytest.approx(0.5) and per["q2"]["P@2"] == pytest.approx(0.5)
    assert agg["P@2"] == pytest.approx(1 / 3)
    assert agg["P@10"] == pytest.approx((2 / 10 + 1 / 10 + 0) / 3)  # trec_eval divides by k
    assert per["q1"]["R@3"] == pytest.approx(0.5) and per["q2"]["R@3"] == pytest.approx(1.0)
    # nDCG with linear gains: q1 DCG = 1/log2(2) + 2/log2(5), ideal = 2/log2(2) + 1/log2(3)
    ndcg_q1 = (1 + 2 / math.log2(5)) / (2 + 1 / math.log2(3))
    ndcg_q2 = (1 / math.log2(3)) / 1
    assert per["q1"]["nDCG@10"] == pytest.approx(ndcg_q1)
    assert agg["nDCG@10"] == pytest.approx((ndcg_q1 + ndcg_q2) / 3)
    assert agg["MRR"] == pytest.approx((1 + 0.5 + 0) / 3)
    # trec_eval AP divides by |R| (here = min(|R|, 10) too)
    assert agg["AP"] == pytest.approx((0.75 + 0.5 + 0) / 3)
    assert list(agg) == ["MAP@10", "GMAP@10", "P@2", "P@10", "R@3", "nDCG@10", "MRR", "AP"]


def test_bioasq_denominator_fewer_than_ten_relevant() -> None:
    # |R| = 3, relevant at ranks 2 and 5 -> (1/2 + 2/5) / 3
    assert average_precision(["n1", "r1", "n2", "n3", "r2"], {"r1", "r2", "r3"}) == pytest.approx(0.3)


def test_bioasq_denominator_more_than_ten_relevant() -> None:
    relevant = {f"r{i}" for i in range(15)}
    ten = [f"r{i}" for i in range(10)]
    assert average_precision(ten, relevant) == pytest.approx(1.0)  # / min(15, 10), not / 15
    # |R| = 12, relevant at ranks 1 and 3; rank 11 is past the cutoff -> (1 + 2/3) / 10
    ranking = ["r0", "n", "r1", *[f"n{i}" for i in range(7)], "n9", "r2"]
    assert average_precision(ranking, {f"r{i}" for i in range(12)}) == pytest.approx((1 + 2 / 3) / 10)
    # trec_eval's AP@10 divides by |R| = 12 instead
    report = evaluate_retrieval({"q": _run(ranking)}, {"q": {f"r{i}": 1 for i in range(12)}}, ["AP@10", "MAP@10"])
    assert report.aggregate["AP@10"] == pytest.approx((1 + 2 / 3) / 12)
    assert report.aggregate["MAP@10"] == pytest.approx((1 + 2 / 3) / 10)


def test_duplicates_and_edge_cases() -> None:
    # the official reader keeps a repeated document's first occurrence: ["a", "b"] -> (1/1 + 2/2) / 2
    assert average_precision(["a", "a", "b"], {"a", "b"}) == pytest.approx(1.0)
    assert average_precision(["x", "x", "a"], {"a"}) == pytest.approx(1 / 2)  # a moves up to rank 2
    assert average_precision(["a"], set()) == 0.0
    assert geometric_map([]) == 0.0
    assert geometric_map([1.0, 0.0], epsilon=0.0) == 0.0
    assert geometric_map([0.25, 1.0], epsilon=0.0) == pytest.approx(0.5)


def test_gmap_uses_the_official_epsilon() -> None:
    # EvaluatorTask1b.epsilon = 0.00001: APs 1, 0.5 and 0 ->
    # exp((log 1.00001 + log 0.50001 + log 0.00001) / 3) = (1.00001 * 0.50001 * 0.00001) ** (1/3)
    assert GMAP_EPSILON == 1e-5
    by_hand = (1.00001 * 0.50001 * 0.00001) ** (1 / 3)
    assert by_hand == pytest.approx(0.017100, abs=1e-6)
    assert geometric_map([1.0, 0.5, 0.0]) == pytest.approx(by_hand, rel=1e-9)
    # the old epsilon (0.01) gave (1.01 * 0.51 * 0.01) ** (1/3) = 0.1727, ten times higher
    assert geometric_map([1.0, 0.5, 0.0]) < 0.02
    # one question with AP 0 among good ones pulls GMAP far below MAP, which is GMAP's purpose
    assert geometric_map([1.0] * 9 + [0.0]) == pytest.approx((1.00001**9 * 0.00001) ** 0.1)


def test_metric_names() -> None:
    assert parse_metrics("map@10, gmap@5,MRR,nDCG@10") == ["MAP@10", "GMAP@5", "MRR", "nDCG@10"]
    with pytest.raises(ConfigError, match="unknown metric 'Bogus@3'"):
        parse_metrics(["Bogus@3"])
    with pytest.raises(ConfigError):
        parse_metrics("")
