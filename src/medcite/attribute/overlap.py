"""The ``overlap`` stance backend: a lexical entailment proxy with a stated threshold, no model.

It answers one question: does a window of the cited abstract (one sentence, or two consecutive ones, or the
title) contain most of the claim's content? *Coverage* is the share of the claim's content words (stop words
removed, every word cut to its first ``prefix`` characters as a cheap stemmer, so "lowered"/"lowering" and
"statin"/"statins" meet) found in the window; the best window decides. The claim is ``supports`` when the
coverage reaches ``threshold`` and the window's negation polarity agrees with the claim's (NegEx-style cues,
:func:`medcite.generate.attribution.negated`): "did not reduce" never passes on "reduced". Everything else is
``neutral``: a word count cannot tell a contradiction from a topic change, so this backend never says
``contradicts``.

It is the support gate of citations an LLM wrote (``verify.gate = "overlap"``, the default): a sentence
invented by a small model, citing a real PMID, keeps the citation only when the abstract says most of what
the sentence says. It is deliberately strict on content and blind to paraphrase: a faithful paraphrase with
new words fails it (and is dropped, not mis-cited). The trained stance model (``verify.gate = "stance"``)
judges paraphrase better where it is installed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..evidence.sentences import article_sentences, split_spans
from ..generate.attribution import negated
from ..types import Article, Stance, StanceVerdict
from .base import StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext

_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
# function words of English and of abstracts' boilerplate; content = what remains
_STOP = frozenset("""
a about above after again against all also although among an and any are as at be because been before being
below between both but by can could did do does doing during each either et etc few for from further had has have
having here how however i if in into is it its itself may might more most much must no nor not of off on once
only or other our out over own per same several should since so some such than that the their them then there
these they this those through thus to too under until up upon very via was we were what when where whether which
while who whom why will with within without would yet
""".split())
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")


def content_words(text: str, prefix: int = 5) -> set[str]:
    """The content words of ``text``, lower-cased and cut to ``prefix`` characters (numbers kept whole)."""
    out = set()
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP or (len(tok) < 3 and not tok.isdigit()):
            continue
        out.add(tok if _NUMBER.match(tok) else tok[:prefix])
    return out


def windows(article: Article) -> list[tuple[str, int, int, str]]:
    """(section, start, end, text): the title, each abstract sentence, each two consecutive ones."""
    spans = article_sentences(article)
    out = [(s.section, s.start, s.end, s.text) for s in spans]
    body = [s for s in spans if s.section == "abstract"]
    for a, b in zip(body, body[1:], strict=False):
        out.append(("abstract", a.start, b.end, article.abstract[a.start: b.end]))
    return out


class OverlapStanceConfig(StanceConfig):
    """A lexical entailment proxy: the claim's content words found in one window of the text."""

    backend: Literal["overlap"] = "overlap"
    threshold: float = Field(
        0.6, ge=0, le=1, description="Least share of the claim's content words that one window (title, a "
        "sentence, two consecutive sentences) must contain for 'supports'."
    )
    prefix: int = Field(5, ge=3, le=20, description="Words are compared on their first PREFIX characters.")


class OverlapStance:
    """Judges (claim, text) pairs by content-word coverage; ``classify_articles`` by the best article window."""

    name = "overlap"
    Config = OverlapStanceConfig

    def __init__(self, threshold: float = 0.6, prefix: int = 5) -> None:
        self.threshold = threshold
        self.prefix = prefix

    @classmethod
    def from_config(cls, cfg: OverlapStanceConfig, ctx: BuildContext | None = None) -> OverlapStance:
        return cls(cfg.threshold, cfg.prefix)

    def coverage(self, claim: str, text: str) -> float:
        want = content_words(claim, self.prefix)
        if not want:
            return 0.0
        return len(want & content_words(text, self.prefix)) / len(want)

    def _verdict(self, claim: str, cands: Sequence[tuple[str | None, int, int, str]]) -> StanceVerdict:
        best, where = 0.0, None
        for cand in cands:
            c = self.coverage(claim, cand[3])
            if c > best:
                best, where = c, cand
        label = Stance.NEUTRAL
        if where is not None and best >= self.threshold and negated(claim) == negated(where[3]):
            label = Stance.SUPPORTS
        # P(supports) carries the coverage either way, so a rejection can say how far it fell short
        p = round(best, 6)
        scores = (("supports", p), ("contradicts", 0.0), ("neutral", round(1.0 - p, 6)))
        if where is None:
            return StanceVerdict(label, scores)
        return StanceVerdict(label, scores, where[1], where[2], where[0])

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[StanceVerdict]:
        out = []
        for claim, text in pairs:
            spans = split_spans(text)
            cands: list[tuple[str | None, int, int, str]] = [(None, s, e, text[s:e]) for s, e in spans]
            cands += [(None, a[0], b[1], text[a[0]: b[1]]) for a, b in zip(spans, spans[1:], strict=False)]
            out.append(self._verdict(claim, cands or [(None, 0, len(text), text)]))
        return out

    def classify_articles(self, pairs: Sequence[tuple[str, Article]]) -> list[StanceVerdict]:
        return [self._verdict(claim, windows(article)) for claim, article in pairs]

    def reason(self, verdict: StanceVerdict) -> str:
        """Why a citation this verdict rejects failed the gate, in words."""
        c = verdict.score(Stance.SUPPORTS)
        if c >= self.threshold:
            return (f"the abstract's closest passage holds {c:.0%} of the sentence's content words but its "
                    "negation differs (overlap gate)")
        return (f"at most {c:.0%} of the sentence's content words are in one sentence (or two) of the abstract; "
                f"the overlap gate needs {self.threshold:.0%}")
