"""The run summary's citation chart: bar geometry for an inline SVG drawn by the template (no JavaScript).

Two groups of horizontal bars, each shown only when its figures exist:

- **citation rates** from the run's metrics (``citations`` in ``metrics.json`` or in ``metrics_task_b.json``,
  what ``medcite eval biogen-b`` writes): coverage, support, contradiction, neutral and not-relevant rates,
  micro-averaged when both averages are there (docs/TASK_B.md). A bar's length is the rate on a 0-1 scale.
- **stances of the verification checks** in ``verification.jsonl``: how many (sentence, cited PMID) pairs
  the stance check judged supports / contradicts / neutral / not relevant (``citations.checks`` of a
  ``verify.citations`` run, ``grounding[].verdicts`` of a Task A run), and how many passed (``kept``).
  A bar's length is the count relative to the largest.

Values of the wrong type or out of range are never drawn: a rate becomes a :class:`~.files.Problem` naming
the file and field, a malformed check is reported by the type check of ``verification.jsonl``
(:data:`.files.ROW_TYPES`); the page lists both under Problems.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .files import Problem

#: pixels of the longest bar; the SVG is ``LABEL_W + BAR_W + VALUE_W`` wide
BAR_W = 150
LABEL_W = 134
VALUE_W = 42
ROW_H = 22
#: (metrics key, bar label, the stance whose colour it takes)
RATES = (("coverage", "coverage", ""), ("support_rate", "support rate", "supports"),
         ("contradiction_rate", "contradiction rate", "contradicts"), ("neutral_rate", "neutral rate", "neutral"),
         ("not_relevant_rate", "not relevant rate", "not relevant"))
STANCES = ("supports", "contradicts", "neutral", "not relevant")
MAX_LABELS = 8  # distinct stance labels drawn (a broken file could name thousands)


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: its label, the number printed beside it, its length in pixels and a CSS class."""

    label: str
    text: str
    width: float
    kind: str
    y: int = 0


@dataclass(frozen=True, slots=True)
class BarGroup:
    """Bars drawn together; ``scale`` (rates from 0 to 1) draws each bar's full-length track behind it."""

    title: str
    note: str
    bars: tuple[Bar, ...]
    scale: bool = False

    @property
    def height(self) -> int:
        return ROW_H * len(self.bars)


@dataclass(frozen=True, slots=True)
class CitationChart:
    groups: tuple[BarGroup, ...]
    width: int = LABEL_W + BAR_W + VALUE_W
    label_w: int = LABEL_W
    bar_w: int = BAR_W
    row_h: int = ROW_H


def _kind(label: str) -> str:
    return "st-" + label.replace(" ", "-") if label in STANCES else "rate"


def _stack(bars: list[Bar]) -> tuple[Bar, ...]:
    return tuple(Bar(b.label, b.text, b.width, b.kind, i * ROW_H) for i, b in enumerate(bars))


def rate_bars(metrics: Mapping[str, object], source: str) -> tuple[BarGroup | None, list[Problem]]:
    """The citation rates in ``metrics["citations"]`` (its ``micro`` table when there is one)."""
    citations = metrics.get("citations")
    if citations is None:
        return None, []
    if not isinstance(citations, dict):
        return None, [Problem(source, f"'citations' should be an object of rates, got {_show(citations)}")]
    table, where, note = citations, "citations", ""
    for average in ("micro", "macro"):
        if average in citations:
            table, where, note = citations[average], f"citations.{average}", f"{average}-averaged"
            break
    if not isinstance(table, dict):
        return None, [Problem(source, f"{where!r} should be an object of rates, got {_show(table)}")]
    bars: list[Bar] = []
    problems: list[Problem] = []
    for key, label, stance in RATES:
        if key not in table:
            continue
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and 0 <= value <= 1):
            problems.append(Problem(source, f"{where}.{key} should be a rate from 0 to 1, got {_show(value)}"))
            continue
        bars.append(Bar(label, f"{value:.2f}", round(BAR_W * value, 1), _kind(stance)))
    if not bars:
        return None, problems
    return BarGroup("Citation rates", note, _stack(bars), scale=True), problems


def check_stances(rows: Iterable[Mapping[str, object]]) -> tuple[Counter[str], int]:
    """Count the stance labels of every check in ``verification.jsonl`` rows: (labels, checks passed).

    Entries of the wrong type are skipped here; the file's type check (:data:`.files.ROW_TYPES`) lists them
    under Problems with their line."""
    labels: Counter[str] = Counter()
    kept = 0

    def count(stance: object) -> None:
        if isinstance(stance, str) and stance.strip():
            labels[stance.strip().lower().replace("_", " ")] += 1

    for row in rows:
        cites = row.get("citations")
        found = cites.get("checks") if isinstance(cites, dict) else None
        for check in found if isinstance(found, list) else []:
            if isinstance(check, dict):
                count(check.get("stance"))
                kept += check.get("kept") is True
        grounding = row.get("grounding")
        for sentence in grounding if isinstance(grounding, list) else []:
            verdicts = sentence.get("verdicts") if isinstance(sentence, dict) else None
            for verdict in verdicts.values() if isinstance(verdicts, dict) else ():
                count(verdict.get("stance") if isinstance(verdict, dict) else None)
    return labels, kept


def stance_bars(rows: Iterable[Mapping[str, object]]) -> BarGroup | None:
    """Bars of the stance labels' counts (relative to the largest), or None when nothing was checked."""
    labels, kept = check_stances(rows)
    if not labels:
        return None
    order = [s for s in STANCES if labels[s]] + sorted(k for k in labels if k not in STANCES)
    shown = order[:MAX_LABELS]
    top = max(labels[k] for k in shown)
    bars = [Bar(k, str(labels[k]), round(BAR_W * labels[k] / top, 1), _kind(k)) for k in shown]
    note = f"{sum(labels.values())} checks" + (f", {kept} passed" if kept else "")
    if len(order) > MAX_LABELS:
        note += f", {len(order) - MAX_LABELS} more labels not drawn"
    return BarGroup("Stance of the verification checks", note, _stack(bars))


def citation_chart(metrics: Mapping[str, object], metrics_source: str,
                   verification: Iterable[Mapping[str, object]]) -> tuple[CitationChart | None, list[Problem]]:
    """The chart of a run (None when it has neither figure) and the problems met building it."""
    rates, problems = rate_bars(metrics, metrics_source)
    groups = tuple(g for g in (rates, stance_bars(verification)) if g is not None)
    return (CitationChart(groups) if groups else None), problems


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
