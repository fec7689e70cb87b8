"""Rule-based negation of a claim: the offline contradict query of Task A (query generator ``negation``),
and Refutes training pairs for the stance classifier.

Without an LLM, medcite turns "Vitamin D prevents fractures" into a statement that says the opposite by
fixed rules, tried in order (the first that applies wins):

1. remove a negation ("does not reduce" -> "does reduce", "is not" -> "is", "cannot" -> "can",
   "no evidence" -> "evidence");
2. negate the first auxiliary or copula ("is" -> "is not", "can" -> "cannot", "has been" -> "has not been");
3. swap the first directional word for its antonym ("increases" -> "decreases", "effective" ->
   "ineffective", "higher" -> "lower");
4. otherwise wrap the claim: "It is not true that vitamin D prevents fractures."

The result is meant to be read by a retriever or a stance classifier, not by people: it is grammatical in
most cases, never exact paraphrase.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from ..types import Query, Topic
from .base import QueryGenConfig

if TYPE_CHECKING:
    from ..context import BuildContext

_REMOVALS = (
    (re.compile(r"\b(do|does|did|is|are|was|were|has|have|had|will|would|should|could|may|might|must)\s+not\b",
                re.IGNORECASE), r"\1"),
    (re.compile(r"\b(do|does|did|is|are|was|were|has|have|had|would|should|could)n't\b", re.IGNORECASE), r"\1"),
    (re.compile(r"\bcannot\b", re.IGNORECASE), "can"),
    (re.compile(r"\bcan't\b", re.IGNORECASE), "can"),
    (re.compile(r"\bwon't\b", re.IGNORECASE), "will"),
    (re.compile(r"\bnever\b", re.IGNORECASE), "sometimes"),
    (re.compile(r"\bno\s+(?=\w)", re.IGNORECASE), ""),
)
_AUXILIARY = re.compile(
    r"\b(is|are|was|were|can|could|will|would|should|may|might|must|does|do|did)\b(?!\s+not\b)"
    r"|\b(has|have|had)\b(?=\s+(?:been|\w+(?:ed|en))\b)",  # "has been shown", not "have higher levels"
    re.IGNORECASE,
)
_PAIRS = (
    ("increases", "decreases"), ("increase", "decrease"), ("increased", "decreased"), ("increasing", "decreasing"),
    ("reduces", "increases"), ("reduce", "increase"), ("reduced", "increased"),
    ("lowers", "raises"), ("lower", "raise"), ("lowered", "raised"), ("higher", "lower"),
    ("improves", "worsens"), ("improve", "worsen"), ("improved", "worsened"),
    ("prevents", "promotes"), ("prevent", "promote"), ("prevented", "promoted"),
    ("protects", "harms"), ("protect", "harm"),
    ("effective", "ineffective"), ("safe", "unsafe"), ("beneficial", "harmful"), ("helpful", "harmful"),
    ("more", "less"), ("greater", "smaller"), ("better", "worse"), ("positive", "negative"),
    ("associated", "unassociated"), ("common", "rare"), ("likely", "unlikely"), ("possible", "impossible"),
)
_ANTONYM = {a: b for a, b in _PAIRS} | {b: a for a, b in _PAIRS if b not in dict(_PAIRS)}
_WORD = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _ANTONYM), key=len, reverse=True)) + r")\b",
                   re.IGNORECASE)


_ADJECTIVE_CONTEXT = re.compile(r"\b(a|an|the|is|are|was|were|be|been|much|significantly|slightly)\s+$", re.IGNORECASE)


def _match_case(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def negate(claim: str) -> str:
    """A statement that says the opposite of ``claim`` (see the module docstring for the rules)."""
    text = " ".join(claim.split())
    if not text:
        return text
    for pattern, repl in _REMOVALS:
        out, n = pattern.subn(repl, text, count=1)
        if n:
            return " ".join(out.split())
    m = _AUXILIARY.search(text)
    if m:
        word = m.group(0)
        neg = "cannot" if word.lower() == "can" else f"{word} not"
        return text[: m.start()] + _match_case(neg, word) + text[m.end():]
    m = _WORD.search(text)
    if m:
        word = m.group(1)
        swap = _ANTONYM[word.lower()]
        if word.lower() == "lower" and _ADJECTIVE_CONTEXT.search(text[: m.start()]):
            swap = "higher"  # "a lower risk": the adjective, not the verb
        return text[: m.start()] + _match_case(swap, word) + text[m.end():]
    body = text.rstrip(".!? ")
    return f"It is not true that {body[0].lower() + body[1:] if body[:2] != body[:2].upper() else body}."


class NegationConfig(QueryGenConfig):
    """The question (or answer sentence) negated by fixed rules: a query for contradicting evidence."""

    backend: Literal["negation"] = "negation"


class NegationQuery:
    """Query generator ``negation`` (stage ``contradict``): :func:`negate` of the topic's question."""

    name = "negation"
    stage = "contradict"
    Config = NegationConfig

    @classmethod
    def from_config(cls, cfg: NegationConfig, ctx: BuildContext) -> NegationQuery:
        return cls()

    def generate(self, topic: Topic) -> list[Query]:
        text = negate(topic.question)
        return [Query("contradict-1", text, self.stage)] if text.strip() else []
