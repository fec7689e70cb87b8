"""Retrieval metrics of a ranked run against relevance judgements.

- ``MAP@k`` and ``GMAP@k``: BioASQ's variants (denominator ``min(|R|, k)``), computed in
  :mod:`medcite.evaluate.bioasq_map`;
- everything else by ir_measures (MacAvaney et al., "Streamlining Evaluation with ir-measures",
  ECIR 2022), i.e. trec_eval's definitions: ``P@k``, ``R@k``, ``nDCG@k``, ``RR`` (``MRR`` is accepted as
  its alias, ``MRR@k`` for ``RR@k``), ``AP`` / ``AP@k`` (trec_eval's MAP, denominator ``|R|``),
  ``Success@k`` and any other measure ir_measures parses.

Conventions: the run's rank order is what is scored (trec_eval would re-sort ties by docid); queries of
the gold file without any relevant document are left out (no metric is defined for them); each metric is
the mean over the evaluated queries (GMAP: geometric). Which queries are evaluated when some are missing
from the run is the ``missing`` argument, for every metric alike (see :mod:`.bioasq_map`):

- ``"zero"`` (the default): every gold query; one missing from the run scores 0 (``trec_eval -c``);
- ``"skip"``: only the gold queries the run contains, as BioASQ's official evaluator (and trec_eval
  without ``-c``) does.

A query is missing when the run has no entry for it; a run read from a TREC file has no entry for a
query that retrieved nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..registry import require
from ..types import Hit
from .bioasq_map import (
    GMAP_EPSILON,
    MissingPolicy,
    check_missing_policy,
    geometric_map,
    mean_average_precision,
    missing_questions,
    per_query_ap,
)

DEFAULT_METRICS: tuple[str, ...] = ("MAP@10", "GMAP@10", "P@10", "R@10", "R@100", "nDCG@10", "MRR")
_BIOASQ = re.compile(r"^(G?MAP)@(\d+)$", re.IGNORECASE)
_MRR = re.compile(r"^MRR(@\d+)?$", re.IGNORECASE)


@dataclass
class RetrievalReport:
    """Mean of each metric over ``queries`` evaluated queries, and every query's own values.

    ``missing`` lists the gold queries (with relevant documents) absent from the run; ``missing_policy``
    says whether they were scored 0 (``"zero"``) or left out of ``queries`` and every mean (``"skip"``).
    """

    metrics: list[str]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    queries: int = 0
    missing: list[str] = field(default_factory=list)
    missing_policy: MissingPolicy = "zero"

    @property
    def gold_queries(self) -> int:
        """Gold queries with at least one relevant document, evaluated or not."""
        return self.queries + (len(self.missing) if self.missing_policy == "skip" else 0)

    def as_dict(self) -> dict[str, object]:
        return {
            "metrics": self.metrics,
            "aggregate": self.aggregate,
            "queries": self.queries,
            "gold_queries": self.gold_queries,
            "missing_policy": self.missing_policy,
            "missing_from_run": self.missing,
            "per_query": self.per_query,
        }


def parse_metrics(names: Sequence[str] | str) -> list[str]:
    """Validate metric names (comma-separated string or list); raises ConfigError naming the bad one."""
    if isinstance(names, str):
        names = [n for n in (p.strip() for p in names.split(",")) if n]
    out: list[str] = []
    for name in names:
        if _BIOASQ.match(name):
            kind, k = _BIOASQ.match(name).groups()  # type: ignore[union-attr]
            if int(k) < 1:
                raise ConfigError(f"metric {name!r}: the cutoff must be at least 1")
            out.append(f"{kind.upper()}@{k}")
            continue
        _ir_measure(name)
        out.append(name)
    if not out:
        raise ConfigError("no metric given", hint=f"e.g. --metrics {','.join(DEFAULT_METRICS)}")
    return out


def _ir_name(name: str) -> str:
    m = _MRR.match(name)
    return f"RR{m.group(1) or ''}" if m else name


def _ir_measure(name: str) -> object:
    ir_measures = require("ir_measures", "eval", "retrieval metrics")
    try:
        return ir_measures.parse_measure(_ir_name(name))
    except (NameError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"unknown metric {name!r} ({exc})",
            hint="e.g. MAP@10, GMAP@10 (BioASQ), P@10, R@100, nDCG@10, MRR, AP (trec_eval names via ir_measures)",
        ) from None


def evaluate_retrieval(
    run: Mapping[str, Sequence[Hit]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    *,
    gmap_epsilon: float = GMAP_EPSILON,
    missing: MissingPolicy = "zero",
) -> RetrievalReport:
    """Score ``run`` (``{qid: ranked hits}``) against ``qrels`` (``{qid: {docid: rel}}``, rel > 0 relevant).

    ``missing`` chooses how gold queries absent from the run count (module docstring); the report lists them.
    """
    names = parse_metrics(metrics)
    policy = check_missing_policy(missing)
    relevant = {q: {d for d, r in docs.items() if r > 0} for q, docs in qrels.items()}
    ranking = {q: [h.pmid for h in sorted(hits, key=lambda h: h.rank)] for q, hits in run.items()}
    judged = [q for q in qrels if relevant[q]]
    absent = missing_questions(ranking, judged)
    qids = judged if policy == "zero" else [q for q in judged if q in ranking]
    per_query: dict[str, dict[str, float]] = {q: {} for q in qids}
    aggregate: dict[str, float] = {}

    for name in names:
        m = _BIOASQ.match(name)
        if not m:
            continue
        kind, k = m.group(1), int(m.group(2))
        aps = per_query_ap(ranking, {q: relevant[q] for q in qids}, k, policy)
        for q, v in aps.items():
            per_query[q][name] = v
        values = list(aps.values())
        aggregate[name] = geometric_map(values, gmap_epsilon) if kind == "GMAP" else mean_average_precision(values)

    standard = [n for n in names if not _BIOASQ.match(n)]
    if standard and qids:
        ir_measures = require("ir_measures", "eval", "retrieval metrics")
        measures = {_ir_measure(n): n for n in standard}
        ir_qrels = {q: {d: int(r) for d, r in qrels[q].items()} for q in qids}
        # scores from ranks, so ir_measures scores exactly the run's order
        ir_run = {q: {d: float(-i) for i, d in enumerate(_dedupe(ranking[q]))} for q in qids if ranking.get(q)}
        for q in qids:
            for n in standard:
                per_query[q][n] = 0.0
        if ir_run:
            for metric in ir_measures.iter_calc(list(measures), ir_qrels, ir_run):
                if metric.query_id in per_query:
                    per_query[metric.query_id][measures[metric.measure]] = float(metric.value)
        for n in standard:
            aggregate[n] = sum(per_query[q][n] for q in qids) / len(qids)
    elif standard:
        aggregate.update({n: 0.0 for n in standard})

    ordered = {n: aggregate[n] for n in names}
    return RetrievalReport(names, ordered, per_query, len(qids), absent, policy)


def _dedupe(docs: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(docs))
