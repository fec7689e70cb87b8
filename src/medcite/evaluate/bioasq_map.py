"""BioASQ's document MAP and GMAP (Task b, Phase A), which no maintained IR library implements.

Since BioASQ8 (Nentidis et al., "Overview of BioASQ 2020", CLEF 2020) the average precision of a
question divides by ``min(|R|, 10)`` rather than ``|R|`` (systems return at most 10 documents, so a
question with 30 relevant documents could otherwise never reach AP 1)::

    AP@10 = sum_{r=1..10} P(r) * rel(r) / min(|R|, 10)

MAP is the mean AP over the gold questions; a question the run lacks has AP 0. GMAP (Robertson,
"On GMAP", CIKM 2006; used by BioASQ since Tsatsaronis et al., BMC Bioinformatics 2015) is the geometric
mean of ``AP + epsilon`` with ``epsilon = 0.00001``, the constant of BioASQ's official evaluator
(``double epsilon = 0.00001`` in ``EvaluatorTask1b.java`` of github.com/BioASQ/Evaluation-Measures;
``GMapDocuments`` takes ``exp(mean(log(AP + epsilon)))``). Without it one question with AP 0 would make
GMAP 0 for the whole run; with it such a question contributes ``log(1e-5)``, which is what GMAP is for:
punishing runs that fail some questions completely. trec_eval's ``gm_map`` uses the same constant
(``MIN_GEO_MEAN = .00001``) as a floor, ``log(max(AP, 1e-5))``, rather than adding it; the two agree on
AP 0 and differ by ``log(1 + 1e-5 / AP)`` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

GMAP_EPSILON = 1e-5
"""BioASQ's GMAP constant: ``epsilon = 0.00001`` in EvaluatorTask1b.java (trec_eval's MIN_GEO_MEAN)."""


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
