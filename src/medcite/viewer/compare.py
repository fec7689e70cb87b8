"""Side-by-side comparison of two or more runs: per topic, and a run-level table over all topics.

A cited PMID is *shared* when every compared run that answered the topic cites it, *unique* when
only one run does, and *some* in between (three or more runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .loader import Run
from .summary import RunStats, TopicRow, run_stats, topic_metrics, topic_rows
from .topic import TopicView, build_topic


@dataclass(slots=True)
class Column:
    """One run's answer to the compared topic."""

    run: str
    preset: str
    view: TopicView | None
    unique: list[str]
    metrics: dict[str, float]


@dataclass(slots=True)
class TopicCompare:
    topic_id: str
    question: str
    columns: list[Column]
    rows: int  # aligned sentence rows (longest answer)
    overlap: dict[str, str]  # pmid -> "shared" | "some" | "unique"
    shared: list[str]
    metric_names: list[str]


@dataclass(slots=True)
class TopicLine:
    """One line of the run-level table: a topic and each run's numbers for it."""

    id: str
    question: str
    cells: list[TopicRow | None]
    jaccard: float | None  # |intersection| / |union| of the cited PMID sets of the runs that answered


@dataclass(slots=True)
class RunCompare:
    stats: list[RunStats]
    unique: list[int]  # (topic, PMID) citations only this run makes, over topics all runs answered
    shared: int  # (topic, PMID) citations every run makes, over topics all runs answered
    common_topics: int
    lines: list[TopicLine]
    metric_names: list[str] = field(default_factory=list)
    mean_jaccard: float | None = None


def overlap_labels(sets: list[frozenset[str]]) -> dict[str, str]:
    """pmid -> shared / some / unique, over the non-empty-answer runs' cited sets."""
    counts: dict[str, int] = {}
    for s in sets:
        for p in s:
            counts[p] = counts.get(p, 0) + 1
    n = len(sets)
    return {p: "shared" if c == n and n > 1 else "unique" if c == 1 else "some" for p, c in counts.items()}


def jaccard(sets: list[frozenset[str]]) -> float | None:
    if len(sets) < 2:
        return None
    union = frozenset().union(*sets)
    if not union:
        return None
    return len(frozenset.intersection(*sets)) / len(union)


def compare_topic(runs: list[Run], topic_id: str) -> TopicCompare | None:
    """None when no compared run has the topic."""
    views = [build_topic(r, topic_id) for r in runs]
    if all(v is None for v in views):
        return None
    sets = [frozenset(c.pmid for s in v.sentences for c in s.chips)
            for v in views if v is not None and v.answered]
    labels = overlap_labels(sets)
    columns = []
    for run, view in zip(runs, views, strict=True):
        cited = sorted({c.pmid for s in view.sentences for c in s.chips}) if view else []
        columns.append(Column(run.name, run.preset, view, [p for p in cited if labels.get(p) == "unique"],
                              topic_metrics(run.metrics, topic_id)))
    question = next((v.question for v in views if v is not None and v.question), "")
    names = sorted({k for c in columns for k in c.metrics})
    return TopicCompare(
        topic_id=topic_id, question=question, columns=columns,
        rows=max((len(v.sentences) for v in views if v is not None), default=0),
        overlap=labels, shared=sorted(p for p, lab in labels.items() if lab == "shared"), metric_names=names,
    )


def compare_runs(runs: list[Run]) -> RunCompare:
    per_run = [{r.id: r for r in topic_rows(run)} for run in runs]
    stats = [run_stats(run, list(rows.values())) for run, rows in zip(runs, per_run, strict=True)]
    order: dict[str, str] = {}
    for rows in per_run:
        for tid, row in rows.items():
            if not order.get(tid):
                order[tid] = row.question
    lines: list[TopicLine] = []
    unique = [0] * len(runs)
    shared = common = 0
    jaccards: list[float] = []
    for tid, question in order.items():
        cells = [rows.get(tid) for rows in per_run]
        answered = [c for c in cells if c is not None and c.answered]
        j = jaccard([c.pmids for c in answered])
        if j is not None:
            jaccards.append(j)
        lines.append(TopicLine(tid, question, cells, j))
        if len(answered) == len(runs):
            common += 1
            labels = overlap_labels([c.pmids for c in answered])
            shared += sum(1 for lab in labels.values() if lab == "shared")
            for i, c in enumerate(answered):
                unique[i] += sum(1 for p in c.pmids if labels[p] == "unique")
    names = sorted({k for s in stats for k in s.metrics})
    return RunCompare(
        stats=stats, unique=unique, shared=shared, common_topics=common, lines=lines, metric_names=names,
        mean_jaccard=sum(jaccards) / len(jaccards) if jaccards else None,
    )
