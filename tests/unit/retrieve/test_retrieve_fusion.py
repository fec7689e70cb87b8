"""Fusion and pooling: arithmetic checked by hand, plus hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medcite.errors import ConfigError
from medcite.retrieve.fusion import minmax, normalise, rrf, weighted_sum, zscore
from medcite.retrieve.pooling import pool
from medcite.types import Hit


def _run(branch: str, *pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(p, s, i + 1, frozenset({branch})) for i, (p, s) in enumerate(pairs)]


A = _run("a", ("1", 3.0), ("2", 2.0), ("3", 1.0))
B = _run("b", ("2", 10.0), ("4", 5.0))


def test_rrf_by_hand() -> None:
    out = rrf([A, B], k=60)
    assert [h.pmid for h in out] == ["2", "1", "4", "3"]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    by = {h.pmid: h for h in out}
    assert by["2"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by["1"].score == pytest.approx(1 / 61)
    assert by["4"].score == pytest.approx(1 / 62)
    assert by["3"].score == pytest.approx(1 / 63)
    assert by["2"].branches == {"a", "b"}
    assert by["4"].branches == {"b"}


def test_rrf_k_and_weights() -> None:
    out = {h.pmid: h.score for h in rrf([A, B], k=0, weights=[1.0, 3.0])}
    assert out["2"] == pytest.approx(1 / 2 + 3 / 1)
    assert out["4"] == pytest.approx(3 / 2)
    assert out["1"] == pytest.approx(1.0)


def test_rrf_orders_runs_by_score_not_by_list_position() -> None:
    shuffled = [Hit("3", 1.0), Hit("1", 3.0), Hit("2", 2.0)]
    assert [h.pmid for h in rrf([shuffled])] == ["1", "2", "3"]


def test_wsum_minmax_by_hand() -> None:
    out = weighted_sum([A, B], norm="minmax")
    assert [(h.pmid, h.score) for h in out] == [("2", 1.5), ("1", 1.0), ("3", 0.0), ("4", 0.0)]
    weighted = {h.pmid: h.score for h in weighted_sum([A, B], weights=[1, 2], norm="minmax")}
    assert weighted == {"2": 2.5, "1": 1.0, "3": 0.0, "4": 0.0}


def test_wsum_zscore_by_hand() -> None:
    out = weighted_sum([A, B], norm="zscore")
    s = math.sqrt(1.5)  # A: mean 2, population std sqrt(2/3) -> z(3) = 1/sqrt(2/3)
    by = {h.pmid: h.score for h in out}
    assert by["1"] == pytest.approx(s)
    assert by["2"] == pytest.approx(0.0 + 1.0)  # z_A(2) = 0, z_B(10) = (10 - 7.5) / 2.5
    assert by["3"] == pytest.approx(-s)
    assert by["4"] == pytest.approx(-1.0)
    assert [h.pmid for h in out] == ["1", "2", "4", "3"]


def test_wsum_none_sums_raw_scores() -> None:
    by = {h.pmid: h.score for h in weighted_sum([A, B], norm="none")}
    assert by == {"1": 3.0, "2": 12.0, "3": 1.0, "4": 5.0}


def test_normalisers_edge_cases() -> None:
    assert minmax([]) == [] and zscore([]) == []
    assert minmax([2.0, 2.0]) == [1.0, 1.0]
    assert zscore([5.0]) == [0.0]
    assert minmax([0.0, 5.0, 10.0]) == [0.0, 0.5, 1.0]


def test_duplicate_pmids_in_a_run_count_once() -> None:
    run = [Hit("1", 5.0), Hit("1", 1.0), Hit("2", 3.0)]
    assert [(h.pmid, h.score) for h in normalise(run, "none")] == [("1", 5.0), ("2", 3.0)]
    assert {h.pmid: h.score for h in rrf([run], k=0)} == {"1": 1.0, "2": 0.5}


def test_bad_settings_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="2 fusion weights for 1 runs"):
        rrf([A], weights=[1, 2])
    with pytest.raises(ConfigError, match="normalisation"):
        weighted_sum([A], norm="max")
    with pytest.raises(ConfigError):
        rrf([A], k=-1)


def test_pool_keeps_max_score_and_union_of_branches() -> None:
    out = pool({"bm25/q0": [Hit("1", 2.0), Hit("2", 9.0)], "bm25/q1": [Hit("1", 7.0), Hit("3", 1.0)]})
    assert [(h.pmid, h.score, h.rank) for h in out] == [("2", 9.0, 1), ("1", 7.0, 2), ("3", 1.0, 3)]
    assert out[1].branches == {"bm25/q0", "bm25/q1"}
    assert out[0].branches == {"bm25/q0"}


# -- properties --------------------------------------------------------------------------------
pmids = st.sampled_from([str(i) for i in range(1, 13)])
runs_st = st.lists(
    st.dictionaries(pmids, st.integers(-100, 100).map(float), min_size=1, max_size=8), min_size=1, max_size=4
)


def _hits(d: dict[str, float], name: str) -> list[Hit]:
    return [Hit(p, s, 0, frozenset({name})) for p, s in d.items()]


@given(runs_st, st.floats(0.01, 100), st.floats(-50, 50))
def test_rrf_invariant_to_score_scaling(runs: list[dict[str, float]], scale: float, shift: float) -> None:
    plain = rrf([_hits(r, f"r{i}") for i, r in enumerate(runs)])
    scaled = rrf([_hits({p: s * scale + shift for p, s in r.items()}, f"r{i}") for i, r in enumerate(runs)])
    assert [h.pmid for h in plain] == [h.pmid for h in scaled]
    assert [h.score for h in plain] == pytest.approx([h.score for h in scaled])


@given(runs_st)
def test_pool_property_max_and_union(runs: list[dict[str, float]]) -> None:
    branches = {f"b{i}": _hits(r, f"b{i}") for i, r in enumerate(runs)}
    out = pool(branches)
    assert len(out) == len({p for r in runs for p in r})
    assert [h.rank for h in out] == list(range(1, len(out) + 1))
    assert all(out[i].score >= out[i + 1].score for i in range(len(out) - 1))
    for h in out:
        assert h.score == max(r[h.pmid] for r in runs if h.pmid in r)
        assert h.branches == {f"b{i}" for i, r in enumerate(runs) if h.pmid in r}


@given(runs_st, st.sampled_from(["minmax", "zscore"]))
def test_wsum_normalised_invariant_to_positive_affine_maps(runs: list[dict[str, float]], norm: str) -> None:
    plain = {h.pmid: h.score for h in weighted_sum([_hits(r, "x") for r in runs], norm=norm)}
    moved = [_hits({p: 3 * s + 7 for p, s in r.items()}, "x") for r in runs]
    scaled = {h.pmid: h.score for h in weighted_sum(moved, norm=norm)}
    assert plain.keys() == scaled.keys()
    for p in plain:
        assert plain[p] == pytest.approx(scaled[p], abs=1e-6)
