"""BioASQ's document MAP and GMAP (Task b, Phase A), which no maintained IR library implements.

Definitions follow BioASQ's official evaluator, ``EvaluatorTask1b -phaseA -e 8`` from
github.com/BioASQ/Evaluation-Measures (``flat/BioASQEvaluation/src/evaluation/EvaluatorTask1b.java``,
``QuestionAnswerEvaluator.java``, ``data/Task1bData.java``), as read for this module:

- **AP.** Since BioASQ8 (``-e 8``; Nentidis et al., "Overview of BioASQ 2020", CLEF 2020) the average
  precision of a question divides by ``min(|R|, 10)`` rather than ``|R|`` (systems return at most 10
  documents, so a question with 30 relevant documents could otherwise never reach AP 1)::

      AP@10 = sum_{r=1..10} P(r) * rel(r) / min(|R|, 10)

  A question whose list holds no relevant document has AP 0. ``Task1bData.readDocuments`` drops a
  repeated document when it reads a file, so the documents after it move up one rank; we do the same.
  The official code scores the whole submitted list (the rules cap it at 10); we cut at ``cutoff``.
- **Questions missing from the submission.** ``EvaluatePhaseA`` walks the gold questions and skips
  (``continue``) every one the system file does not contain; MAP and GMAP divide by the number of
  questions that were scored. A question that is present with an empty document list is scored, with
  AP 0. We offer both conventions, :data:`MISSING_POLICIES`: ``"skip"`` (the official evaluator's, and
  trec_eval's default) and ``"zero"`` (a missing question has AP 0, as with ``trec_eval -c``).
  :func:`per_query_ap` keeps its old default, ``"zero"``; the reasons are in ``docs/SEARCH.md``.
- **GMAP** (Robertson, "On GMAP", CIKM 2006; used by BioASQ since Tsatsaronis et al., BMC
  Bioinformatics 2015) is the geometric mean of ``AP + epsilon`` with ``epsilon = 0.00001``
  (``EvaluatorTask1b.epsilon``; ``GMapDocuments`` takes ``exp(mean(log(AP + epsilon)))``). Without it,
  one question with AP 0 would make GMAP 0 for the whole run; with it, such a question contributes
  ``log(1e-5)``, so GMAP is meant to punish runs that fail some questions completely.
  trec_eval's ``gm_map`` (``m_gm_map.c``, ``MIN_GEO_MEAN = .00001`` in ``trec_eval.h``) uses the same
  constant as a floor, ``log(max(AP, 1e-5))``; with ``-c`` (``te_calc_avg_meas_s_gm`` in ``meas_avg.c``)
  each query missing from the run adds ``log(1e-5)``. The two agree on AP 0 and differ by
  ``log(1 + 1e-5 / AP)`` otherwise.

One difference remains: with ``-e 8`` the official evaluator also scores a gold question that has no
relevant document (AP 0); medcite leaves such questions out, as ``-e 9`` does (``EvaluatePhaseA`` skips
questions with empty gold ``documents`` when the version is 9). BioASQ's golden files give every
question documents, so this only matters for hand-made qrels.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from ..errors import ConfigError

GMAP_EPSILON = 1e-5
"""BioASQ's GMAP constant: ``epsilon = 0.00001`` in EvaluatorTask1b.java (trec_eval's MIN_GEO_MEAN)."""

MissingPolicy = Literal["skip", "zero"]
MISSING_POLICIES: tuple[MissingPolicy, ...] = ("skip", "zero")
"""``skip``: left out of every mean (official BioASQ evaluator); ``zero``: AP 0 (``trec_eval -c``)."""


def average_precision(ranking: Sequence[str], relevant: Collection[str], cutoff: int = 10) -> float:
    """BioASQ AP of one question: precision at each relevant rank <= ``cutoff``, / ``min(|R|, cutoff)``.

    A repeated document is dropped before ranks are counted, as the official evaluator's reader does.
    """
    relevant = set(relevant)
    if not relevant or cutoff <= 0:
        return 0.0
    found = 0
    total = 0.0
    for rank, doc in enumerate(list(dict.fromkeys(ranking))[:cutoff], start=1):
        if doc in relevant:
            found += 1
            total += found / rank
    return total / min(len(relevant), cutoff)


def missing_questions(run: Mapping[str, Sequence[str]], questions: Collection[str]) -> list[str]:
    """The ``questions`` (in their order) that ``run`` does not contain at all.

    A question present with an empty list is not missing: the official evaluator scores it, with AP 0.
    """
    return [q for q in questions if q not in run]


def per_query_ap(
    run: Mapping[str, Sequence[str]],
    relevant: Mapping[str, Collection[str]],
    cutoff: int = 10,
    missing: MissingPolicy = "zero",
) -> dict[str, float]:
    """AP@cutoff of every gold question; one missing from ``run`` gets AP 0 (``"zero"``) or no entry (``"skip"``)."""
    check_missing_policy(missing)
    return {
        qid: average_precision(run.get(qid, ()), rel, cutoff)
        for qid, rel in relevant.items()
        if missing == "zero" or qid in run
    }


def mean_average_precision(values: Collection[float]) -> float:
    """Arithmetic mean of per-question AP values; 0.0 for none."""
    return sum(values) / len(values) if values else 0.0


def geometric_map(values: Collection[float], epsilon: float = GMAP_EPSILON) -> float:
    """BioASQ GMAP: ``exp(mean(log(AP + epsilon)))`` over questions; 0.0 for none (see the module docstring)."""
    if not values:
        return 0.0
    if epsilon <= 0 and any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v + epsilon) for v in values) / len(values))


def check_missing_policy(missing: str) -> MissingPolicy:
    """Return ``missing`` if it names a convention; raise ConfigError naming the choices otherwise."""
    if missing not in MISSING_POLICIES:
        raise ConfigError(
            f"unknown convention for questions missing from the run: {missing!r}",
            hint="use 'skip' (BioASQ's official evaluator) or 'zero' (AP 0, like trec_eval -c)",
        )
    return missing  # type: ignore[return-value]
