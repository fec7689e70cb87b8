"""Nugget precision and recall of an answer against a reference answer (BioACE's answer precision/recall).

Both texts are split into atomic sentences (the caller splits: this module only counts) and every pair
(system sentence, reference sentence) gets a similarity (cosine of sentence embeddings in
``medcite eval biogen-b``). A system sentence is *matched* when some reference sentence is at least
``threshold`` similar to it, and a reference sentence is matched when some system sentence is:

- **precision** = matched system sentences / system sentences (how much of the answer the reference backs);
- **recall** = matched reference sentences / reference sentences (how much of the reference the answer covers).

Matching is many-to-many, as BioACE aligns nuggets: one system sentence may cover two reference nuggets
and two system sentences may restate one. Reported per topic, micro (pooled counts) and macro (mean over
topics that have a reference). An empty answer has precision 0 and recall 0 (nothing said, nothing
covered); a topic without a reference is not scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

#: The default match threshold on packaged-MiniLM cosine, calibrated on BioASQ (benchmarks/bench_task_b_measures.py
#: --calibrate: 312 sentences of a second expert's ideal answer against the first answer of the same question
#: and of another question): the lowest cut where precision against other questions' sentences reaches 0.99
#: (0.9886; recall 0.84). The F1-best cut there is 0.4, but other-question sentences are easy negatives, so
#: that cut would be too lenient for same-topic sentences that state something else.
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class NuggetCounts:
    system: int
    matched_system: int
    reference: int
    matched_reference: int

    @property
    def precision(self) -> float:
        return self.matched_system / self.system if self.system else 0.0

    @property
    def recall(self) -> float:
        return self.matched_reference / self.reference if self.reference else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {**vars(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


def match(similarity: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> NuggetCounts:
    """Counts from a (system sentences x reference sentences) similarity matrix."""
    sim = np.asarray(similarity, dtype=float)
    if sim.ndim != 2:
        raise ValueError(f"similarity must be a 2-D matrix (system x reference sentences), got shape {sim.shape}")
    n_sys, n_ref = sim.shape
    if n_sys == 0 or n_ref == 0:
        return NuggetCounts(n_sys, 0, n_ref, 0)
    hits = sim >= threshold
    return NuggetCounts(n_sys, int(hits.any(axis=1).sum()), n_ref, int(hits.any(axis=0).sum()))


@dataclass
class NuggetReport:
    threshold: float
    micro: dict[str, float]
    macro: dict[str, float]
    per_topic: dict[str, dict[str, float | int]] = field(default_factory=dict)
    unreferenced: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"threshold": self.threshold, "micro": self.micro, "macro": self.macro,
                "topics": len(self.per_topic), "per_topic": self.per_topic, "unreferenced": self.unreferenced}


def nugget_report(counts: Mapping[str, NuggetCounts], threshold: float,
                  unreferenced: list[str] | None = None) -> NuggetReport:
    """Micro and macro precision/recall/F1 over the topics' counts (see the module docstring)."""
    total = NuggetCounts(sum(c.system for c in counts.values()), sum(c.matched_system for c in counts.values()),
                         sum(c.reference for c in counts.values()),
                         sum(c.matched_reference for c in counts.values()))
    n = len(counts)
    macro = {k: sum(getattr(c, k) for c in counts.values()) / n if n else 0.0 for k in ("precision", "recall", "f1")}
    micro = {"precision": total.precision, "recall": total.recall, "f1": total.f1}
    return NuggetReport(threshold, micro, macro, {t: c.as_dict() for t, c in counts.items()},
                        sorted(unreferenced or []))
