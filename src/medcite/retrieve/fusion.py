"""Rank fusion as pure functions over runs (a run = one ranked list of :class:`~medcite.types.Hit`).

- :func:`rrf` — Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009), used by Dalhousie 2025
  to merge BM25+Rocchio and dense runs of every sub-query;
- :func:`weighted_sum` — CombSUM with per-run weights (Fox & Shaw 1994) over normalised scores, as in
  DS@GT's weighted cross-encoder + LLM ensemble, with :func:`minmax` or :func:`zscore` normalisation.

Every fused hit carries the union of the ``branches`` of the hits it merges. Results are sorted by
descending fused score (ties broken by PMID) with ranks from 1 (:func:`medcite.types.ranked`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from ..errors import ConfigError
from ..types import Hit, ranked

Run = Sequence[Hit]
Norm = Literal["minmax", "zscore", "none"]


def _dedupe(run: Run) -> list[Hit]:
    """The run in descending-score order with each PMID once (its best-scored occurrence)."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in sorted(run, key=lambda h: (-h.score, h.pmid)):
        if hit.pmid not in seen:
            seen.add(hit.pmid)
            out.append(hit)
    return out


def minmax(scores: Sequence[float]) -> list[float]:
    """Min-max scaling to [0, 1]. A run whose scores are all equal maps every score to 1.0 (all top)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


def zscore(scores: Sequence[float]) -> list[float]:
    """Standard scores ``(s - mean) / std`` (population std). A constant run maps to 0.0."""
    if not scores:
        return []
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0:
        return [0.0] * len(scores)
    return [(s - mean) / std for s in scores]


def identity(scores: Sequence[float]) -> list[float]:
    """No normalisation (raw scores are summed as they are)."""
    return list(scores)


NORMALISERS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "minmax": minmax,
    "zscore": zscore,
    "none": identity,
}


def normalise(run: Run, norm: str = "minmax") -> list[Hit]:
    """Return the run (deduplicated by PMID) with scores normalised by ``norm``."""
    try:
        fn = NORMALISERS[norm]
    except KeyError:
        raise ConfigError(
            f"unknown score normalisation {norm!r}", hint=f"choose one of: {', '.join(NORMALISERS)}"
        ) from None
    hits = _dedupe(run)
    scores = fn([h.score for h in hits])
    return [Hit(h.pmid, s, h.rank, h.branches) for h, s in zip(hits, scores, strict=True)]


def _weights(runs: Sequence[Run], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(runs)
    if len(weights) != len(runs):
        raise ConfigError(
            f"got {len(weights)} fusion weights for {len(runs)} runs",
            hint="give exactly one weight per run (branch), or none for equal weights",
        )
    return [float(w) for w in weights]


def _combine(contribs: Sequence[Sequence[tuple[Hit, float]]]) -> list[Hit]:
    scores: dict[str, float] = {}
    branches: dict[str, frozenset[str]] = {}
    for run in contribs:
        for hit, value in run:
            scores[hit.pmid] = scores.get(hit.pmid, 0.0) + value
            branches[hit.pmid] = branches.get(hit.pmid, frozenset()) | hit.branches
    return ranked([Hit(pmid, score, 0, branches[pmid]) for pmid, score in scores.items()])


def rrf(runs: Sequence[Run], k: float = 60, weights: Sequence[float] | None = None) -> list[Hit]:
    """Reciprocal Rank Fusion (Cormack et al. 2009): ``score(d) = sum_r w_r / (k + rank_r(d))``.

    ``rank_r(d)`` is d's 1-based position in run r ordered by descending score, so the result depends
    only on the order within each run, never on score scales. Documents absent from a run get nothing
    from it. ``k`` = 60 is the paper's value.
    """
    if k < 0:
        raise ConfigError(f"RRF k must be >= 0, got {k}", hint="the usual value is 60")
    ws = _weights(runs, weights)
    return _combine(
        [
            [(hit, w / (k + pos)) for pos, hit in enumerate(_dedupe(run), start=1)]
            for run, w in zip(runs, ws, strict=True)
        ]
    )


def weighted_sum(
    runs: Sequence[Run], weights: Sequence[float] | None = None, norm: str = "minmax"
) -> list[Hit]:
    """Weighted CombSUM (Fox & Shaw 1994): ``score(d) = sum_r w_r * norm_r(score_r(d))``.

    Each run is normalised on its own (``"minmax"``, ``"zscore"`` or ``"none"``) before weighting; a
    document absent from a run contributes 0 from that run.
    """
    ws = _weights(runs, weights)
    return _combine(
        [[(hit, w * hit.score) for hit in normalise(run, norm)] for run, w in zip(runs, ws, strict=True)]
    )


FUSERS: dict[str, Callable[..., list[Hit]]] = {"rrf": rrf, "wsum": weighted_sum}
