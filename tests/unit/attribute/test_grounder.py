"""Grounder selection: stance thresholds, the retrieval order, anchored top candidates, existing citations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from medcite.config import GroundSettings
from medcite.pipeline.grounding import Grounder
from medcite.types import Article, Hit, Query, Stance, StanceVerdict

# candidate order of the retrieval, and the verdict the stance stage gives each
VERDICTS = {
    "1": (Stance.CONTRADICTS, (0.05, 0.9, 0.05)),
    "2": (Stance.SUPPORTS, (0.6, 0.1, 0.3)),
    "3": (Stance.SUPPORTS, (0.95, 0.0, 0.05)),
    "4": (Stance.CONTRADICTS, (0.2, 0.7, 0.1)),
    "5": (Stance.NEUTRAL, (0.2, 0.1, 0.7)),
}


class Retrieval:
    def retrieve(self, topic: Any) -> Any:
        return SimpleNamespace(final=[Hit(p, 1.0 / (r + 1), r + 1) for r, p in enumerate(VERDICTS)], queries=[],
                               rankings={})


class Store:
    def get_many(self, pmids: Any) -> dict[str, Article]:
        return {p: Article(p, f"title {p}", f"abstract {p}") for p in pmids}


class Stance_:
    def classify_articles(self, pairs: Any) -> list[StanceVerdict]:
        out = []
        for _, art in pairs:
            label, (s, c, n) = VERDICTS[art.pmid]
            out.append(StanceVerdict(label, (("supports", s), ("contradicts", c), ("neutral", n)), 0, 3, "title"))
        return out


def ground(exclude: tuple[str, ...] = (), **settings: Any) -> Any:
    grounder = Grounder(Retrieval(), Stance_(), Store(), GroundSettings(**settings))  # type: ignore[arg-type]
    (g,) = grounder.ground(["a sentence"], exclude=[exclude])
    return g


def test_thresholds_and_retrieval_order() -> None:
    g = ground(min_support=0.5, min_contradict=0.5)
    assert (g.supported, g.contradicted, g.anchored) == (["2", "3"], ["1", "4"], [])
    g = ground(min_support=0.9, min_contradict=0.8)
    assert (g.supported, g.contradicted) == (["3"], ["1"])
    assert ground(order="stance").supported == ["3", "2"]
    assert ground(max_supported=1, max_contradicted=0).supported == ["2"]
    assert ground(max_contradicted=0).contradicted == []


def test_anchored_candidates_support_whatever_their_stance() -> None:
    g = ground(anchor=1, min_support=0.9)
    assert g.anchored == ["1"] and g.supported == ["1", "3"]
    assert "1" not in g.contradicted and g.contradicted == ["4"]
    assert ground(anchor=2, max_supported=2).supported == ["1", "2"]
    assert ground(anchor=3, max_supported=1).supported == ["1"]


def test_existing_citations_are_never_proposed_again() -> None:
    g = ground(exclude=("1", "3"), anchor=1)
    assert "1" not in g.verdicts and g.supported == ["2"] and g.anchored == ["2"]
    assert g.contradicted == ["4"]


class SidedRetrieval:
    """Two rewrites, one per stance (Dalhousie 2025): the support rewrite found 5, 1, 2; the contradict rewrite
    found 3, 4, 2. The fused ranking interleaves them."""

    def __init__(self, sides: tuple[str, ...] = ("support", "contradict")) -> None:
        self.sides = sides

    def retrieve(self, topic: Any) -> Any:
        found = {"support": ["5", "1", "2"], "contradict": ["3", "4", "2"]}
        queries = [Query(f"{side}-1", f"{side} rewrite", side) for side in self.sides]
        runs = {f"dense/{side}-1": [Hit(p, 1.0 - r / 10, r + 1, frozenset({f"dense/{side}-1"}))
                                    for r, p in enumerate(found[side])] for side in self.sides}
        fused = [Hit(p, 1.0 / (r + 1), r + 1) for r, p in enumerate(["5", "3", "1", "4", "2"])]
        return SimpleNamespace(topic=topic, final=fused, queries=queries, rankings={}, runs=runs)


def sided(retrieval: Any, exclude: tuple[str, ...] = (), **settings: Any) -> Any:
    grounder = Grounder(retrieval, Stance_(), Store(), GroundSettings(**settings))  # type: ignore[arg-type]
    (g,) = grounder.ground(["a sentence"], exclude=[exclude])
    return g


def test_per_side_lists_keep_each_rewrites_candidates_for_its_own_stance() -> None:
    # fused: one list for both kinds, so 3 (found only by the contradict rewrite) supports
    g = sided(SidedRetrieval())
    assert (g.supported, g.contradicted) == (["3", "2"], ["1", "4"])
    # per_side: supports from the support rewrite's list (5, 1, 2), in its order: 3 is not offered as supporting,
    # and 1 (found only by the support rewrite) is not offered as contradicting
    g = sided(SidedRetrieval(), candidate_lists="per_side")
    assert [h.pmid for h in g.candidates] == ["5", "1", "2"]
    assert g.contradiction_candidates == ["3", "4", "2"]
    assert (g.supported, g.contradicted) == (["2"], ["4"])
    assert set(g.verdicts) == {"1", "2", "3", "4", "5"}  # every candidate of either list judged once
    # each list is cut to `candidates`, and existing citations are skipped before the cut
    g = sided(SidedRetrieval(), candidate_lists="per_side", candidates=2, exclude=("5",))
    assert [h.pmid for h in g.candidates] == ["1", "2"] and g.contradiction_candidates == ["3", "4"]


def test_per_side_without_a_sides_query_falls_back_to_the_fused_ranking() -> None:
    g = sided(SidedRetrieval(("support",)), candidate_lists="per_side")
    assert [h.pmid for h in g.candidates] == ["5", "1", "2"]
    assert g.contradiction_candidates == ["5", "3", "1", "4", "2"]
    assert g.contradicted == ["1", "4"]
