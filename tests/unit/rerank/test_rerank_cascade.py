"""The cascade reranker: each stage reads the previous stage's survivors in that stage's order (DS@GT)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.rerank.cascade import CascadeReranker
from medcite.rerank.ensemble import WeightedEnsemble
from medcite.types import Article, Hit
from medcite_fakes import Fixed

ARTS = {str(p): Article(str(p), f"title {p}") for p in range(1, 7)}
HITS = [Hit(p, float(10 - int(p)), int(p)) for p in ARTS]  # first stage: 1 > 2 > ... > 6


class FirstTwoSwapped:
    """A listwise stand-in: swaps the first two hits of the order it is given; records that order."""

    name = "swap"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        order = [h.pmid for h in hits]
        self.seen.append(order)
        order = order[1:2] + order[:1] + order[2:]
        return [Hit(p, 1.0 / r, r) for r, p in enumerate(order[:k], 1)]


CE = Fixed({"1": 0.1, "2": 0.2, "3": 0.9, "4": 0.8, "5": 0.7, "6": 0.0})  # CE order: 3 4 5 2 1 6


def test_each_stage_reads_the_previous_stages_survivors_in_order() -> None:
    listwise = FirstTwoSwapped()
    out = CascadeReranker([(CE, 3), (listwise, 10)]).rerank("q", HITS, ARTS, 10)
    assert listwise.seen == [["3", "4", "5"]]  # the cross-encoder's top 3, in its order
    assert [h.pmid for h in out] == ["4", "3", "5"]


def test_dsgt_weighted_ensemble_after_the_cross_encoder() -> None:
    listwise = FirstTwoSwapped()
    ensemble = WeightedEnsemble([CE, listwise], [1 / 8, 7 / 8])
    out = CascadeReranker([(CE, 4), (ensemble, 2)]).rerank("q", HITS, ARTS, 10)
    assert listwise.seen == [["3", "4", "5", "2"]]
    # CE min-max over 3 4 5 2: 1, 6/7, 5/7, 0; listwise 1/rank of 4 3 5 2 min-max: 1, 1/3, 1/9, 0
    # 3: 1/8 + 7/8 * 1/3 = 0.4167;  4: 1/8 * 6/7 + 7/8 = 0.9821
    assert [h.pmid for h in out] == ["4", "3"]
    assert out[0].score == pytest.approx(6 / 56 + 7 / 8)


def test_k_cuts_the_last_stage_and_settings_validate() -> None:
    out = CascadeReranker([(CE, 5), (FirstTwoSwapped(), 10)]).rerank("q", HITS, ARTS, 2)
    assert len(out) == 2
    with pytest.raises(ConfigError, match="at least one"):
        CascadeReranker([])
    with pytest.raises(ConfigError, match="not 'none'"):
        load_settings("offline", ['rerank={"backend": "cascade", "stages": ["none"]}'])
    s = load_settings("offline", ['rerank={"backend": "cascade", "stages": [{"backend": "cross-encoder", "model": '
                                  '"m", "k": 30}, {"backend": "llm-listwise", "llm": "big"}]}'])
    assert s.rerank.model_names() == ["m"] and s.rerank.llm_names() == {"big"}
