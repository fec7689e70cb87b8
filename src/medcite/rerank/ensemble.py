"""Reranker ensembles and the weight search that tunes them.

- :class:`UnionEnsemble` — PJs-team, BioASQ 13b ("Retrieval-reranking and LLM-based answer generation"):
  the union of each member's top ``member_k`` (top 5 in the paper), cut to ``k`` (10 in the paper). The paper
  orders the union "based on their original scores or a simple unweighted combination" (§2.1.2) without saying
  which run used which: ``order`` picks ``rrf`` (Reciprocal Rank Fusion, Cormack et al. 2009, of the members'
  full rankings; the default), ``max`` (a document's best member score: its original score) or ``sum`` (the
  unweighted sum of the members' scores).
- :class:`WeightedEnsemble` — DS@GT, BioASQ 13b ("Ensembling cross-encoders and GPT rerankers with LLMs"):
  a weighted sum of the members' per-query normalised scores; :func:`grid_search_weights` picks the
  weights that maximise MAP@10 on a dev split (the paper found 1:7).

The fusion arithmetic is :mod:`medcite.retrieve.fusion`'s (``rrf``, ``weighted_sum``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..errors import ConfigError
from ..evaluate.bioasq_map import average_precision as bioasq_average_precision
from ..registry import stage_field
from ..retrieve.fusion import NORMALISERS, rrf, weighted_sum
from ..types import Article, Hit, ranked
from .base import RerankConfig, Reranker, swapped
from .scoring import candidates, check_top_n

if TYPE_CHECKING:
    from ..context import BuildContext


class _EnsembleConfig(RerankConfig):
    members: list[stage_field("rerank")] = Field(  # type: ignore[valid-type]
        default_factory=list, description="Member rerankers: full rerank configs, or 'backend' / "
        "'backend:model' shorthands, e.g. 'cross-encoder:minilm-l12'."
    )

    def model_names(self) -> list[str]:
        return [name for m in self.members for name in m.model_names()]

    def llm_names(self) -> set[str | None]:
        return {name for m in self.members for name in m.llm_names()}

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """Each member whose models are not all ``available`` replaced by its own stand-in (None if one has none)."""
        members: list[RerankConfig] = []
        for m in self.members:
            stand_in = m if all(available(name) for name in m.model_names()) else m.offline_swap(available)
            if stand_in is None:
                return None
            members.append(stand_in)
        return swapped(self, {"members": members})


class UnionConfig(_EnsembleConfig):
    """PJs-team: the union of each member's top member_k, ordered by RRF of the members' rankings."""

    backend: Literal["ensemble-union"] = "ensemble-union"
    member_k: int = Field(5, ge=1, description="Top hits taken from each member.")
    order: Literal["rrf", "max", "sum"] = Field(
        "rrf", description="How the union is ordered: 'rrf' (RRF of the members' rankings), 'max' (a document's "
        "best member score, its original score) or 'sum' (the unweighted sum of the members' scores)."
    )


class WeightedConfig(_EnsembleConfig):
    """DS@GT: a weighted sum of the members' normalised scores."""

    backend: Literal["ensemble-weighted"] = "ensemble-weighted"
    weights: list[float] = Field(default_factory=list, description="One weight per member (empty: equal weights).")
    normalize: Literal["minmax", "zscore", "none"] = Field(
        "minmax", description="Per-query normalisation of each member's scores."
    )


def mean_average_precision(
    rankings: Sequence[Sequence[str]], relevant: Sequence[Collection[str]], k: int = 10
) -> float:
    """MAP@k over queries with BioASQ's AP denominator ``min(|relevant|, k)``; 0.0 for no queries."""
    if len(rankings) != len(relevant):
        raise ValueError(f"{len(rankings)} rankings for {len(relevant)} relevance sets")
    if not rankings:
        return 0.0
    total = sum(bioasq_average_precision(r, g, k) for r, g in zip(rankings, relevant, strict=True))
    return total / len(rankings)


def member_runs(
    members: Sequence[Reranker], query: str, hits: Sequence[Hit], articles: Mapping[str, Article]
) -> list[list[Hit]]:
    """Each member's full ranking of ``hits`` (every candidate scored, none cut)."""
    return [m.rerank(query, hits, articles, max(len(hits), 1)) for m in members]


def _check_members(members: Sequence[Reranker]) -> list[Reranker]:
    if not members:
        raise ConfigError("an ensemble needs at least one member", hint="set rerank.members, e.g. "
                          '["cross-encoder:minilm-l6", "embedding"]')
    return list(members)


def _members_from_config(cfg: _EnsembleConfig, ctx: BuildContext) -> list[Reranker]:
    out = []
    for member in cfg.members:
        if member.backend in ("ensemble-union", "ensemble-weighted"):
            raise ConfigError(f"ensemble member {member.backend!r} is not a single reranker",
                              hint="write members as 'backend' or 'backend:model', e.g. 'cross-encoder:minilm-l12'")
        built = ctx.build("rerank", member)
        if built is None:
            raise ConfigError(f"ensemble member {member.backend!r} is 'none'", hint="name a reranker backend")
        out.append(built)
    return _check_members(out)


class UnionEnsemble:
    """PJs: union of each member's top ``member_k``, ordered by RRF over the members' rankings."""

    name = "ensemble-union"
    Config = UnionConfig

    def __init__(self, members: Sequence[Reranker], *, member_k: int = 5, top_n: int | None = None,
                 rrf_k: float = 60, order: str = "rrf") -> None:
        if member_k < 1:
            raise ConfigError(f"member_k must be at least 1, got {member_k}")
        if order not in ("rrf", "max", "sum"):
            raise ConfigError(f"unknown union order {order!r}", hint="use 'rrf', 'max' or 'sum'")
        self.order = order
        self.members = _check_members(members)
        self.member_k = member_k
        self.top_n = check_top_n(top_n)
        self.rrf_k = rrf_k

    @classmethod
    def from_config(cls, cfg: UnionConfig, ctx: BuildContext) -> UnionEnsemble:
        return cls(_members_from_config(cfg, ctx), member_k=cfg.member_k, top_n=cfg.top_n, order=cfg.order)

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        pool = candidates(hits, articles, self.top_n)
        if not pool or k <= 0:
            return []
        runs = member_runs(self.members, query, pool, articles)
        union = {h.pmid for run in runs for h in run[: self.member_k]}
        if self.order == "rrf":
            fused = rrf(runs, k=self.rrf_k)
        else:
            fused = _score_union(runs, self.order)
        return ranked([h for h in fused if h.pmid in union])[:k]


def _score_union(runs: Sequence[Sequence[Hit]], order: str) -> list[Hit]:
    """The members' raw scores combined per document: the best one (``max``) or their sum (``sum``)."""
    scores: dict[str, list[float]] = {}
    first: dict[str, Hit] = {}
    for run in runs:
        for hit in run:
            scores.setdefault(hit.pmid, []).append(hit.score)
            first.setdefault(hit.pmid, hit)
    combine = max if order == "max" else sum
    return [replace(first[pmid], score=float(combine(values))) for pmid, values in scores.items()]


class WeightedEnsemble:
    """DS@GT: ``score(d) = sum_m w_m * norm(score_m(d))`` over the members' scores of every candidate."""

    name = "ensemble-weighted"
    Config = WeightedConfig

    def __init__(self, members: Sequence[Reranker], weights: Sequence[float] | None = None, *,
                 normalize: str = "minmax", top_n: int | None = None) -> None:
        self.members = _check_members(members)
        if weights is not None and len(weights) != len(self.members):
            raise ConfigError(f"got {len(weights)} weights for {len(self.members)} ensemble members",
                              hint="give one weight per member in rerank.weights, or none for equal weights")
        if normalize not in NORMALISERS:
            raise ConfigError(f"unknown normalisation {normalize!r}",
                              hint=f"use one of {', '.join(NORMALISERS)}")
        self.weights = list(weights) if weights is not None else [1.0] * len(self.members)
        self.normalize = normalize
        self.top_n = check_top_n(top_n)

    @classmethod
    def from_config(cls, cfg: WeightedConfig, ctx: BuildContext) -> WeightedEnsemble:
        return cls(_members_from_config(cfg, ctx), cfg.weights or None, normalize=cfg.normalize, top_n=cfg.top_n)

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        pool = candidates(hits, articles, self.top_n)
        if not pool or k <= 0:
            return []
        runs = member_runs(self.members, query, pool, articles)
        return weighted_sum(runs, self.weights, self.normalize)[:k]


@dataclass(frozen=True)
class DevQuery:
    """One dev-split query: its text, the hits to rerank and the gold PMIDs."""

    query: str
    hits: Sequence[Hit]
    relevant: frozenset[str]


@dataclass
class GridResult:
    """The best weights, their MAP@k, and every (weights, MAP@k) tried in grid order."""

    weights: tuple[float, ...]
    score: float
    table: list[tuple[tuple[float, ...], float]] = field(default_factory=list)


def weight_grid(n: int, steps: int) -> list[tuple[float, ...]]:
    """Every weight vector of ``n`` non-negative multiples of ``1/steps`` summing to 1 (lexicographic)."""
    if n < 1 or steps < 1:
        raise ConfigError(f"weight grid needs n >= 1 and steps >= 1, got n={n}, steps={steps}")
    grid = []
    for combo in itertools.product(range(steps + 1), repeat=n):
        if sum(combo) == steps:
            grid.append(tuple(c / steps for c in combo))
    return grid


def search_weights(
    runs_per_query: Sequence[Sequence[Sequence[Hit]]],
    relevant: Sequence[Collection[str]],
    *,
    steps: int = 8,
    k: int = 10,
    normalize: str = "minmax",
) -> GridResult:
    """Grid search over precomputed member runs: the weights with the best MAP@k (first one on ties)."""
    if not runs_per_query:
        raise ConfigError("grid search needs at least one dev query", hint="give a non-empty dev split")
    n = len(runs_per_query[0])
    best: GridResult | None = None
    table = []
    for weights in weight_grid(n, steps):
        rankings = [[h.pmid for h in weighted_sum(runs, weights, normalize)[:k]] for runs in runs_per_query]
        score = mean_average_precision(rankings, relevant, k)
        table.append((weights, score))
        if best is None or score > best.score:
            best = GridResult(weights, score)
    assert best is not None
    best.table = table
    return best


def grid_search_weights(
    dev_queries: Sequence[DevQuery],
    members: Sequence[Reranker],
    articles: Mapping[str, Article],
    *,
    steps: int = 8,
    k: int = 10,
    normalize: str = "minmax",
) -> GridResult:
    """DS@GT's weight search: score the dev queries once with every member, then try every weight vector
    on a grid of ``1/steps`` (steps=8 includes 1:7) and keep the one with the best MAP@k (BioASQ).
    """
    members = _check_members(members)
    runs = [member_runs(members, q.query, candidates(q.hits, articles, None), articles) for q in dev_queries]
    return search_weights(runs, [q.relevant for q in dev_queries], steps=steps, k=k, normalize=normalize)
