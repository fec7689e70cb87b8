"""Rows for the run list and a run's topic list, and per-run statistics used by the comparison."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .loader import Run, as_dict, as_float, as_int, as_list, as_str

PER_TOPIC_KEYS = ("per_topic", "topics", "by_topic", "per_query", "per_question")
MAX_METRICS = 60


@dataclass(slots=True)
class RunRow:
    name: str
    preset: str
    created_at: str
    command: str
    version: str
    topics: int
    answered: int
    validation: str
    validation_errors: int
    problems: int


@dataclass(slots=True)
class TopicRow:
    id: str
    question: str
    answered: bool
    words: int
    sentences: int
    citations: int
    pmids: frozenset[str]
    dropped: int
    validation: str


@dataclass(slots=True)
class RunStats:
    """Per-run averages over answered topics (what the run-level comparison table shows)."""

    name: str
    preset: str
    topics: int
    answered: int
    avg_words: float | None
    avg_sentences: float | None
    avg_citations: float | None
    distinct_pmids: int
    dropped: int
    validation: str
    metrics: dict[str, float] = field(default_factory=dict)


def run_row(run: Run) -> RunRow:
    ids = run.topic_ids()
    cfg = run.config
    return RunRow(
        name=run.name, preset=run.preset, created_at=run.created_at, command=as_str(cfg.get("command")),
        version=as_str(cfg.get("medcite_version")), topics=len(ids), answered=len(run.answers.by_topic),
        validation=run.validation.state, validation_errors=len(run.validation.errors),
        problems=len(run.problems),
    )


def topic_rows(run: Run) -> list[TopicRow]:
    rows = []
    validation = run.validation
    for tid in run.topic_ids():
        topic = as_dict(run.topics.last(tid))
        answer = run.answers.last(tid)
        ans = as_dict(answer)
        sentences = [as_dict(s) for s in as_list(ans.get("sentences"))]
        cited = [as_str(p) for s in sentences for p in as_list(s.get("pmids"))]
        words = as_int(ans.get("words"))
        if words is None:
            words = sum(len(as_str(s.get("text")).split()) for s in sentences)
        rows.append(TopicRow(
            id=tid,
            question=as_str(topic.get("question") or ans.get("question")),
            answered=answer is not None,
            words=words,
            sentences=len(sentences),
            citations=len(cited),
            pmids=frozenset(cited),
            dropped=len(as_list(ans.get("dropped"))),
            validation=validation.topic_state(tid),
        ))
    return rows


def flat_metrics(metrics: dict[str, object], prefix: str = "") -> dict[str, float]:
    """Numeric values of metrics.json as dotted keys; per-topic tables (at any level) are left out."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key in PER_TOPIC_KEYS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and not prefix.count(".") >= 2:
            out.update(flat_metrics(value, name + "."))
        elif (v := as_float(value)) is not None and math.isfinite(v):
            out[name] = value if isinstance(value, int) else v  # a count stays an integer ("85", not "85.0000")
        if len(out) >= MAX_METRICS:
            break
    return out


def topic_metrics(metrics: dict[str, object], topic_id: str) -> dict[str, float]:
    """Per-topic metrics when metrics.json has a table keyed by topic id (e.g. ``per_topic``), at the top or
    one level down (``citations.per_topic`` of ``medcite eval biogen-b``, shown as ``citations.coverage``)."""
    found = _topic_table(metrics, topic_id)
    for group, value in metrics.items():
        if isinstance(value, dict) and group not in PER_TOPIC_KEYS and len(found) < MAX_METRICS:
            found.update({f"{group}.{k}": v for k, v in _topic_table(value, topic_id).items()})
    return found


def _topic_table(metrics: dict[str, object], topic_id: str) -> dict[str, float]:
    for key in PER_TOPIC_KEYS:
        table = metrics.get(key)
        if isinstance(table, dict) and isinstance(table.get(topic_id), dict):
            return flat_metrics(table[topic_id])
        if isinstance(table, list):
            for row in table:
                if isinstance(row, dict) and as_str(row.get("topic_id", row.get("id"))) == topic_id:
                    return {k: v for k, v in flat_metrics(row).items() if k not in ("topic_id", "id")}
    return {}


def run_stats(run: Run, rows: list[TopicRow]) -> RunStats:
    answered = [r for r in rows if r.answered]

    def avg(values: list[int]) -> float | None:
        return sum(values) / len(values) if values else None

    return RunStats(
        name=run.name, preset=run.preset, topics=len(rows), answered=len(answered),
        avg_words=avg([r.words for r in answered]),
        avg_sentences=avg([r.sentences for r in answered]),
        avg_citations=avg([r.citations for r in answered]),
        distinct_pmids=len({p for r in answered for p in r.pmids}),
        dropped=sum(r.dropped for r in answered),
        validation=run.validation.state,
        metrics=flat_metrics(run.metrics),
    )
