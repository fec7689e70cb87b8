"""BioASQ's document MAP and GMAP (Task b, Phase A), which no maintained IR library implements.

Since BioASQ8 (Nentidis et al., "Overview of BioASQ 2020", CLEF 2020) the average precision of a
question divides by ``min(|R|, 10)`` rather than ``|R|`` (systems return at most 10 documents, so a
question with 30 relevant documents could otherwise never reach AP 1)::

    AP@10 = sum_{r=1..10} P(r) * rel(r) / min(|R|, 10)

MAP is the mean AP over the gold questions; a question the run lacks has AP 0. GMAP (Robertson,
"On GMAP", CIKM 2006; used by BioASQ since Tsatsaronis et al., BMC Bioinformatics 2015) is the geometric
mean of ``AP + epsilon``. We use ``epsilon = 0.01``: without it one question with AP 0 makes GMAP 0 for
the whole run; 0.01 is the small constant of the BioASQ GMAP definition and keeps GMAP on the same
0..1 scale as MAP for good runs. (trec_eval's ``gm_map`` instead floors AP at 1e-5, which punishes a
zero-AP question far harder; pass ``epsilon`` to reproduce other conventions.)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

GMAP_EPSILON = 0.01


def average_precision(ranking: Sequence[str], relevant: Collection[str], cutoff: int = 10) -> float:
    """BioASQ AP of one question: precision at each relevant rank <= ``cutoff``, / ``min(|R|, cutoff)``."""
    relevant = set(relevant)
    if not relevant or cutoff <= 0:
        return 0.0
    found = 0
    total = 0.0
    seen: set[str] = set()
    for rank, doc in enumerate(ranking[:cutoff], start=1):
        if doc in relevant and doc not in seen:
            found += 1
            total += found / rank
        seen.add(doc)
    return total / min(len(relevant), cutoff)


def per_query_ap(
    run: Mapping[str, Sequence[str]], relevant: Mapping[str, Collection[str]], cutoff: int = 10
) -> dict[str, float]:
    """AP@cutoff of every gold question (0 for questions missing from the run)."""
    return {qid: average_precision(run.get(qid, ()), rel, cutoff) for qid, rel in relevant.items()}


def mean_average_precision(values: Collection[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def geometric_map(values: Collection[float], epsilon: float = GMAP_EPSILON) -> float:
    """Geometric mean of ``AP + epsilon`` over questions (see the module docstring for epsilon)."""
    if not values:
        return 0.0
    if epsilon <= 0 and any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v + epsilon) for v in values) / len(values))
