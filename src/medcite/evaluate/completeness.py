"""Answer completeness from per-sentence judgements (BioACE / TREC BioGen answer assessment).

Each answer sentence carries one of four labels: **required** (information the answer must contain to
answer the question), **unnecessary** (true and on topic, but not needed), **borderline** (partly needed,
or needed only for some readers) and **inappropriate** (wrong, harmful or off topic). An LLM judge gives the
labels in ``medcite eval biogen-b``; this module only counts them:

- ``required_rate`` = required / sentences;
- ``acceptable_rate`` = (required + borderline) / sentences;
- ``inappropriate_rate`` = inappropriate / sentences;
- ``answered`` = the share of topics whose answer has at least one required sentence.

A sentence the judge gave no readable label (``None``) is counted as ``unjudged`` and left out of the rates.
Micro over all sentences of the run, macro over topics (a topic with an empty answer counts 0 in every rate
and in ``answered``). The track's completeness also pools the required aspects found by all submitted runs
of a question, which one run cannot compute alone: these are the per-run parts of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

LABELS = ("required", "unnecessary", "borderline", "inappropriate")


def _rates(all_labels: Sequence[str | None]) -> dict[str, float]:
    labels = [x for x in all_labels if x is not None]
    n = len(labels)
    count = {lab: sum(x == lab for x in labels) for lab in LABELS}
    return {
        "required_rate": count["required"] / n if n else 0.0,
        "acceptable_rate": (count["required"] + count["borderline"]) / n if n else 0.0,
        "inappropriate_rate": count["inappropriate"] / n if n else 0.0,
        "answered": float(count["required"] > 0),
    }


@dataclass
class CompletenessReport:
    micro: dict[str, float]
    macro: dict[str, float]
    counts: dict[str, int]
    per_topic: dict[str, dict[str, object]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"micro": self.micro, "macro": self.macro, "counts": self.counts, "per_topic": self.per_topic}


def completeness_report(labels: Mapping[str, Sequence[str | None]]) -> CompletenessReport:
    """Rates from each topic's sentence labels (see the module docstring)."""
    for topic, row in labels.items():
        unknown = sorted(str(x) for x in set(row) - {*LABELS, None})
        if unknown:
            raise ValueError(f"topic {topic}: unknown completeness labels {unknown}; expected one of {LABELS}")
    rates = {t: _rates(row) for t, row in labels.items()}
    pooled = [x for row in labels.values() for x in row]
    micro = _rates(pooled)
    micro["answered"] = sum(r["answered"] for r in rates.values()) / len(rates) if rates else 0.0
    keys = ("required_rate", "acceptable_rate", "inappropriate_rate", "answered")
    macro = {k: sum(r[k] for r in rates.values()) / len(rates) if rates else 0.0 for k in keys}
    per_topic: dict[str, dict[str, object]] = {t: {**rates[t], "labels": list(labels[t])} for t in labels}
    counts = {"topics": len(labels), "sentences": len(pooled), **{lab: pooled.count(lab) for lab in LABELS},
              "unjudged": pooled.count(None)}
    return CompletenessReport(micro, macro, counts, per_topic)
