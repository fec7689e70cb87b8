"""Citation measures of a Task B answer set (BioACE's automatic citation measures, TREC BioGen 2025):

- **coverage**: the share of answer sentences with at least one citation;
- **support rate**: the share of citations (sentence, PMID pairs) whose abstract supports the sentence;
- **contradiction rate**: the share of citations whose abstract contradicts it;
- **neutral rate** and **not-relevant rate**: the shares of BioACE's other two labels (on topic but settling
  nothing; about something else). A judge with three labels (medcite's stance model) gives no
  ``not relevant``, so its neutral rate holds both.

Each is reported over all citations of the run (micro) and as the mean of the per-topic values (macro,
topics without citations left out of the rate means). The stance of each citation comes from whatever
judge the caller used (medcite's stance stage, or judgements read from a file): this module only counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..types import Answer, Stance

#: (topic id, sentence index, PMID) -> the judged stance of that citation
Judged = Mapping[tuple[str, int, str], Stance]


@dataclass
class CitationCounts:
    sentences: int = 0
    cited_sentences: int = 0
    citations: int = 0
    judged: int = 0
    supports: int = 0
    contradicts: int = 0
    neutral: int = 0
    not_relevant: int = 0

    def rates(self) -> dict[str, float]:
        return {
            "coverage": self.cited_sentences / self.sentences if self.sentences else 0.0,
            "support_rate": self.supports / self.judged if self.judged else 0.0,
            "contradiction_rate": self.contradicts / self.judged if self.judged else 0.0,
            "neutral_rate": self.neutral / self.judged if self.judged else 0.0,
            "not_relevant_rate": self.not_relevant / self.judged if self.judged else 0.0,
        }


@dataclass
class CitationReport:
    micro: dict[str, float]
    macro: dict[str, float]
    counts: CitationCounts
    per_topic: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"micro": self.micro, "macro": self.macro, "counts": vars(self.counts), "per_topic": self.per_topic}


def citation_metrics(answers: Sequence[Answer], judged: Judged) -> CitationReport:
    """Coverage, support and contradiction rates (see the module docstring); unjudged citations count in
    ``citations`` but not in the rates."""
    total = CitationCounts()
    per_topic: dict[str, dict[str, float]] = {}
    for answer in answers:
        c = CitationCounts()
        for i, s in enumerate(answer.sentences):
            c.sentences += 1
            c.cited_sentences += bool(s.pmids)
            for p in s.pmids:
                c.citations += 1
                label = judged.get((answer.topic_id, i, p))
                if label is None:
                    continue
                c.judged += 1
                c.supports += label is Stance.SUPPORTS
                c.contradicts += label is Stance.CONTRADICTS
                c.neutral += label is Stance.NEUTRAL
                c.not_relevant += label is Stance.NOT_RELEVANT
        for k in vars(total):
            setattr(total, k, getattr(total, k) + getattr(c, k))
        per_topic[answer.topic_id] = {**c.rates(), "citations": c.citations}
    topics = list(per_topic.values())
    cited = [t for t in topics if t["citations"]]
    macro = {"coverage": sum(t["coverage"] for t in topics) / len(topics) if topics else 0.0}
    for rate in ("support_rate", "contradiction_rate", "neutral_rate", "not_relevant_rate"):
        macro[rate] = sum(t[rate] for t in cited) / len(cited) if cited else 0.0
    return CitationReport(total.rates(), macro, total, per_topic)
