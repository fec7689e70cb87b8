from __future__ import annotations

from collections.abc import Sequence

import pytest

from medcite.errors import ConfigError
from medcite.pipeline import build_stage
from medcite.registry import validate_config
from medcite.rerank.ensemble import (
    DevQuery,
    UnionEnsemble,
    WeightedEnsemble,
    bioasq_average_precision,
    grid_search_weights,
    mean_average_precision,
    weight_grid,
)
from medcite.rerank.scoring import PointwiseReranker
from medcite.types import Article, Hit
from medcite_fakes import Fixed

ARTS = {p: Article(p, f"title {p}") for p in ["1", "2", "3", "4"]}
HITS = [Hit(p, 1.0, 0, frozenset({"q0"})) for p in ARTS]
A = Fixed({"1": 3.0, "2": 2.0, "3": 1.0, "4": 0.0})  # minmax: 1, 2/3, 1/3, 0
B = Fixed({"1": 0.0, "2": 1.0, "3": 10.0, "4": 5.0})  # minmax: 0, 0.1, 1, 0.5


def test_bioasq_ap_uses_min_relevant_k_denominator() -> None:
    # relevant at ranks 1 and 3 of 3 relevant: (1/1 + 2/3) / min(3, 10)
    assert bioasq_average_precision(["a", "x", "b"], {"a", "b", "c"}) == pytest.approx((1 + 2 / 3) / 3)
    # 12 relevant: denominator is 10, not 12
    rel = {str(i) for i in range(12)}
    assert bioasq_average_precision([str(i) for i in range(10)], rel) == pytest.approx(1.0)
    assert bioasq_average_precision(["x"], set()) == 0.0
    assert mean_average_precision([["a"], ["x", "b"]], [{"a"}, {"b"}]) == pytest.approx((1 + 0.5) / 2)


def test_weighted_sum_by_hand() -> None:
    out = WeightedEnsemble([A, B]).rerank("q", HITS, ARTS, k=4)
    # 1: 1+0, 2: 2/3+0.1, 3: 1/3+1, 4: 0+0.5
    assert [h.pmid for h in out] == ["3", "1", "2", "4"]
    assert [h.score for h in out] == pytest.approx([4 / 3, 1.0, 2 / 3 + 0.1, 0.5])
    skew = WeightedEnsemble([A, B], [1 / 8, 7 / 8]).rerank("q", HITS, ARTS, k=2)
    assert [h.pmid for h in skew] == ["3", "4"]
    assert [h.score for h in skew] == pytest.approx([1 / 24 + 7 / 8, 7 / 16])
    assert all(h.branches == frozenset({"q0"}) for h in skew)


def test_union_of_member_tops_ordered_by_rrf() -> None:
    out = UnionEnsemble([A, B], member_k=1).rerank("q", HITS, ARTS, k=10)
    # A's top-1 is 1, B's is 3; RRF over full rankings: 3 = 1/63 + 1/61 beats 1 = 1/61 + 1/64
    assert [h.pmid for h in out] == ["3", "1"]
    assert out[0].score == pytest.approx(1 / 63 + 1 / 61)
    two = UnionEnsemble([A, B], member_k=2).rerank("q", HITS, ARTS, k=3)
    assert {h.pmid for h in two} <= {"1", "2", "3", "4"} and len(two) == 3


def test_unknown_pmids_are_dropped_by_ensembles() -> None:
    hits = [*HITS, Hit("77", 9.0)]
    assert "77" not in {h.pmid for h in WeightedEnsemble([A, B]).rerank("q", hits, ARTS, 10)}
    assert "77" not in {h.pmid for h in UnionEnsemble([A, B]).rerank("q", hits, ARTS, 10)}


def test_weight_grid() -> None:
    grid = weight_grid(2, 8)
    assert grid[0] == (0.0, 1.0) and grid[-1] == (1.0, 0.0) and len(grid) == 9
    assert (0.125, 0.875) in grid
    assert len(weight_grid(3, 4)) == 15 and all(sum(w) == pytest.approx(1) for w in weight_grid(3, 4))


def test_grid_search_finds_the_only_good_mix() -> None:
    # q1 needs w_B > w_A (gold 9: A puts it last, B first); q2 needs w_A > w_B / 5 (gold 9 again):
    # q2: 9 scores w_A + 0.8 w_B against 8's w_B. The best grid points are w_A in {2/8, 3/8}.
    arts = {p: Article(p, p) for p in ["7", "8", "9"]}
    a = Fixed({"q1-9": 0.0, "q1-8": 1.0, "q2-9": 1.0, "q2-8": 0.0, "q2-7": 0.5})
    b = Fixed({"q1-9": 1.0, "q1-8": 0.0, "q2-9": 0.8, "q2-8": 1.0, "q2-7": 0.0})

    class PerQuery(PointwiseReranker):
        def __init__(self, inner: Fixed) -> None:
            super().__init__(None)
            self.inner = inner

        def score(self, query: str, articles: Sequence[Article]) -> list[float]:
            return [self.inner.scores[f"{query}-{x.pmid}"] for x in articles]

    dev = [
        DevQuery("q1", [Hit("9", 1.0), Hit("8", 1.0)], frozenset({"9"})),
        DevQuery("q2", [Hit("9", 1.0), Hit("8", 1.0), Hit("7", 1.0)], frozenset({"9"})),
    ]
    result = grid_search_weights(dev, [PerQuery(a), PerQuery(b)], arts, steps=8)
    assert result.weights == (0.25, 0.75)
    assert result.score == pytest.approx(1.0)
    table = dict(result.table)
    assert table[(0.375, 0.625)] == pytest.approx(1.0)
    assert table[(0.0, 1.0)] == pytest.approx(0.75)  # q1: 1, q2: 8 first, 9 second (1/2)
    assert table[(1.0, 0.0)] == pytest.approx(0.75)  # q1: 8 first (1/2), q2: 1


def test_weights_must_match_members() -> None:
    with pytest.raises(ConfigError, match="2 weights for 1"):
        WeightedEnsemble([A], [0.5, 0.5])
    with pytest.raises(ConfigError, match="at least one member"):
        UnionEnsemble([])


def test_factory_and_member_specs() -> None:
    assert build_stage("rerank", {}) is None  # the stage's default backend, 'none'
    ens = validate_config(
        "rerank", {"backend": "ensemble-weighted", "members": ["cross-encoder:/models/ce", "embedding",
                                                                {"backend": "cross-encoder", "batch_size": 4}]})
    first, second, third = ens.members  # type: ignore[attr-defined]
    assert (first.backend, first.model) == ("cross-encoder", "/models/ce")
    assert (second.backend, second.model.backend, second.model.model) == ("embedding", "sentence-transformers",
                                                                           "minilm")
    assert (third.model, third.batch_size) == ("cross-encoder/ms-marco-MiniLM-L-6-v2", 4)
    with pytest.raises(ConfigError, match="not a single reranker"):
        build_stage("rerank", {"backend": "ensemble-union", "members": ["ensemble-union"]})
    with pytest.raises(ConfigError, match="unknown rerank backend 'nope'"):
        validate_config("rerank", {"backend": "nope"})
