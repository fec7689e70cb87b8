"""Turning ranked evidence sentences into a readable extractive answer (no LLM).

Evidence arrives in relevance order (MMR), which reads as a collage. Three rules make it read as an
answer:

* a sentence that opens with an anaphor ("This effect...", "These results...", "It...") means nothing
  without the sentence before it: it is kept only right after that sentence of the same abstract (when
  both are in the evidence), and dropped otherwise;
* structured-abstract labels (``RESULTS:``, ``Conclusions:``) are cut off
  (:func:`medcite.evidence.sentences.strip_label`);
* the answer leads with the sentence that answers the question (the best-scored finding, a stated
  conclusion preferred), then the supporting findings in score order, then caveats (limitations, hedges,
  "further research is needed").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..evidence.sentences import META_LABELS, strip_label
from ..types import Evidence

#: openings that refer back to the previous sentence; "this study"/"this trial" name the paper itself, and
#: "It is unclear whether..." is an expletive "it"
_ANAPHOR = re.compile(
    r"^(?:(?:this|these|those|such)(?!\s+(?:study|trial|review|meta-analysis|systematic|paper|article|report|"
    r"cohort|analysis|randomi[sz]ed|prospective|retrospective|observational|cross-sectional|case)\b)"
    r"|it(?!\s+(?:is|was|has been|remains|seems|appears)\s+\w+\s+(?:that|whether|to|if|how)\b)"
    r"|its|they|their|them|he|she|the (?:latter|former|same)|(?:in )?(?:this|these|such) (?:way|case|cases|"
    r"setting|patients))\b",
    re.IGNORECASE,
)
_CAVEAT = re.compile(
    r"\b(?:limitations?|limited by|further (?:research|studies|trials|investigation|work)|more (?:research|studies|"
    r"trials)|larger (?:studies|trials|samples)|(?:is|are|remains?) (?:needed|required|warranted|unclear|uncertain|"
    r"unknown|controversial|inconclusive)|insufficient evidence|low[- ](?:quality|certainty) evidence|caution|"
    r"should be interpreted|not (?:be )?generali[sz]|high risk of bias|small sample)\b",
    re.IGNORECASE,
)
_CONCLUSION = re.compile(
    r"\b(?:conclu(?:de|ded|sion|sions)|suggest(?:s|ed)?|indicat(?:e|es|ed)|demonstrat(?:e|es|ed)|show(?:s|ed|n)?|"
    r"is (?:effective|safe|associated)|are (?:effective|safe|associated)|(?:improv|reduc|increas|decreas|"
    r"lower|prevent)(?:e|es|ed|s)?)\b",
    re.IGNORECASE,
)
_LEAD_MARGIN = 0.85  # a stated conclusion leads if it scores at least this share of the best finding


def is_anaphoric(text: str) -> bool:
    """Whether ``text`` (label already stripped) opens by referring to a previous sentence."""
    return _ANAPHOR.match(text.lstrip()) is not None


def is_caveat(text: str) -> bool:
    """Whether ``text`` states a limitation or a hedge rather than a finding."""
    return _CAVEAT.search(text) is not None


def clean_text(e: Evidence) -> str:
    """The evidence text with whitespace collapsed and a leading structured-abstract label removed (empty for
    the metadata parts of an abstract: key words, registration, funding)."""
    text = " ".join(e.text.split())
    label, text = strip_label(text)
    if label is not None and label.lower() in META_LABELS:
        return ""  # "Key words: ...", "Trial registration: ..." state no finding
    if text and text[0].islower() and text != e.text:
        text = text[0].upper() + text[1:]
    return text


@dataclass
class Unit:
    """Sentences that go into the answer together: one, or an antecedent and its anaphoric follower."""

    items: list[Evidence]
    texts: list[str]

    @property
    def score(self) -> float:
        return max(e.score for e in self.items)

    @property
    def caveat(self) -> bool:
        return is_caveat(self.texts[0])

    @property
    def conclusion(self) -> bool:
        return _CONCLUSION.search(self.texts[0]) is not None


def _antecedent(e: Evidence, pool: Sequence[Evidence]) -> Evidence | None:
    """The evidence sentence right before ``e`` in the same abstract (at most two characters of space between
    their spans), if the evidence holds it."""
    if e.start is None or e.section != "abstract":
        return None
    for other in pool:
        if (other is not e and other.pmid == e.pmid and other.section == e.section and other.end is not None
                and 0 <= e.start - other.end <= 2):
            return other
    return None


def units(evidence: Sequence[Evidence]) -> list[Unit]:
    """Evidence (best first) as answer units: an anaphoric sentence joins the unit of its antecedent, or is
    dropped when the evidence lacks the antecedent; label-only or empty texts are dropped."""
    texts = {id(e): clean_text(e) for e in evidence}
    by_item: dict[int, Unit] = {}
    out: list[Unit] = []
    for e in evidence:
        text = texts[id(e)]
        if not text or text.endswith("?") or id(e) in by_item:
            continue  # a question ("What is the role of X?") answers nothing
        if is_anaphoric(text):
            before = _antecedent(e, evidence)
            if before is None or not texts[id(before)]:
                continue
            unit = by_item.get(id(before))
            if unit is None:
                unit = Unit([before], [texts[id(before)]])
                by_item[id(before)] = unit
                out.append(unit)
            if unit.items[-1] is not before:
                continue  # its antecedent already has a follower
            unit.items.append(e)
            unit.texts.append(text)
            by_item[id(e)] = unit
            continue
        unit = Unit([e], [text])
        by_item[id(e)] = unit
        out.append(unit)
    return [u for u in out if not is_anaphoric(u.texts[0])]


def reading_order(found: Sequence[Unit]) -> list[Unit]:
    """Lead (the answering sentence), then support by score, then caveats by score."""
    findings = sorted((u for u in found if not u.caveat), key=lambda u: -u.score)
    caveats = sorted((u for u in found if u.caveat), key=lambda u: -u.score)
    if not findings:
        return caveats
    best = findings[0].score
    lead = next((u for u in findings if u.conclusion and u.score >= _LEAD_MARGIN * best), findings[0])
    return [lead, *(u for u in findings if u is not lead), *caveats]
