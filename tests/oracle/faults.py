"""Faults the oracle plants on purpose, one class at a time, at a set rate: what medcite must catch.

Content faults change a generated answer (prose with citations, at its first attempt; a retry gets the
faithful answer, as a model that read the feedback would write it):

- ``outside``: a sentence cites an evidence index outside the block;
- ``pmid``: a sentence names a PMID in its text instead of an index;
- ``uncited``: a sentence with no citation;
- ``overcite``: a sentence citing more than 3 evidence items;
- ``unsupported``: a sentence the cited abstract does not support (an invented finding);
- ``contradicted``: a sentence its cited abstract contradicts (a true sentence negated);
- ``overlong``: an answer over the word cap.

Reply faults break any answer: ``malformed`` (JSON cut short; prose answers are cut mid-sentence too),
``empty`` (no text), ``timeout`` (no answer before the client gives up), ``http500`` (a server error).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from medcite.retrieve.negation import negate

from .answers import Meaning

CONTENT = ("outside", "pmid", "uncited", "overcite", "unsupported", "contradicted", "overlong")
REPLY = ("malformed", "empty", "timeout", "http500")
FAULTS = CONTENT + REPLY

PLANTED_PMID = "31234567"
INVENTED = "Zorbalene infusion reversed quellitis in every adult patient within two days"


@dataclass
class Planted:
    """One planted fault: its class and the sentence it put in the answer (empty for reply faults)."""

    fault: str
    prompt: str
    text: str = ""


def plant(meaning: Meaning, fault: str, rng: random.Random) -> str:
    """Change ``meaning`` (a cited prose answer) by ``fault``; return the sentence planted when the fault is in
    the text (``pmid``, ``unsupported``, ``contradicted``), else "" (a faithful sentence wrongly cited: what
    must not reach an answer is the citation, counted by the harness)."""
    sentences = meaning.sentences
    n = len(meaning.evidence) or 1
    if not sentences:
        return ""
    k = rng.randrange(len(sentences))
    text, cited = sentences[k]
    if fault == "outside":
        sentences[k] = (text, [n + 7])
        return ""
    if fault == "pmid":
        stripped = text.rstrip(".")
        sentences[k] = (f"{stripped} (PMID: {PLANTED_PMID}).", [])
        return sentences[k][0]
    if fault == "uncited":
        sentences[k] = (text, [])
        return ""
    if fault == "overcite":
        sentences[k] = (text, list(range(1, min(n, 6) + 1)) if n > 3 else [*cited, n + 1, n + 2, n + 3])
        return ""
    if fault == "unsupported":
        sentences.insert(k, (f"{INVENTED}.", cited or [1]))
        return sentences[k][0]
    if fault == "contradicted":
        negated = negate(text)
        if negated == text:
            negated = f"It is not true that {text[0].lower()}{text[1:]}"
        sentences.insert(k + 1, (negated, cited or [1]))
        return negated
    if fault == "overlong":
        filler = [(f"{s} This point is repeated here for emphasis.", c) for s, c in list(sentences)]
        while sum(len(s.split()) for s, _ in sentences) <= 260:
            sentences.extend(filler)
        return ""
    raise ValueError(f"not a content fault: {fault!r}")
