"""Stance by an LLM prompt (Dalhousie 2025's support/contradiction check): one call per (statement, abstract).

``prompt=bioace_citation`` asks instead for BioACE's four citation labels (TREC BioGen 2025 assessment:
supports, contradicts, neutral, not relevant; ``medcite eval biogen-b --judge llm``).
The answer is parsed by fixed rules (:func:`medcite.llm.reply_parsers.parse_stance`, or
:func:`~medcite.llm.reply_parsers.parse_citation_label` for the four labels): a label, and the sentence
the model quotes, which is looked up in the abstract for the span (the whole abstract when the quote is not
found). The scores are the label's one-hot probabilities: an LLM gives no calibrated probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..llm.base import reject
from ..llm.personas import frame
from ..llm.prompts import render
from ..llm.reply_parsers import names_stance_label, parse_citation_label, parse_stance
from ..llm.trace import trace_context
from ..settings_base import UsesLLM
from ..types import Article, Stance, StanceVerdict
from .base import StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..llm.base import LLM


class LLMStanceConfig(UsesLLM, StanceConfig):
    """An LLM judges each (statement, abstract) pair with Dalhousie 2025's prompt."""

    no_llm: ClassVar[dict[str, str]] = {"backend": "classifier"}
    #: as a citation judge: BioACE's four labels (``--judge llm``), on the LLM ``--judge llm:NAME`` names
    judge_spec: ClassVar[dict[str, object] | None] = {"backend": "llm", "prompt": "bioace_citation"}
    judge_field: ClassVar[str] = "llm"

    backend: Literal["llm"] = "llm"
    max_tokens: int = Field(96, ge=4, description="Most tokens generated per judgement.")
    abstract_words: int = Field(400, ge=20, description="Words of the abstract shown (the rest is cut).")
    prompt: Literal["stance", "bioace_citation"] = Field(
        "stance", description="'stance': Dalhousie 2025's three labels; 'bioace_citation': BioACE's four "
        "(supports, contradicts, neutral, not relevant), as TREC BioGen 2025 assesses citations.")
    framing: Literal["expert", "emotionprompt"] | None = Field(
        None, description="The prompt's framing (Dal@TREC25 §III-A3 varies the stance prompt with its runs): "
        "'expert' a biomedical expert's role first, 'emotionprompt' EmotionPrompt's stimulus ('This is very "
        "important to my career') appended; None: the prompt as written.")


class LLMStance:
    """Stance by prompt; one LLM call per pair, sent as one batch."""

    name = "llm"
    Config = LLMStanceConfig

    def __init__(self, llm: LLM, *, max_tokens: int = 96, abstract_words: int = 400, prompt: str = "stance",
                 framing: str | None = None) -> None:
        self.llm, self.max_tokens, self.abstract_words, self.prompt = llm, max_tokens, abstract_words, prompt
        self.framing = framing

    @classmethod
    def from_config(cls, cfg: LLMStanceConfig, ctx: BuildContext) -> LLMStance:
        return cls(ctx.llm(cfg.llm, purpose="the stance backend 'llm'"), max_tokens=cfg.max_tokens,
                   abstract_words=cfg.abstract_words, prompt=cfg.prompt, framing=cfg.framing)

    def _ask(self, items: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
        chats = [frame(render(self.prompt, statement=claim, title=title or "(none)",
                              abstract=" ".join(text.split()[: self.abstract_words]) or "(none)"), self.framing)
                 for claim, title, text in items]
        with trace_context(stage="stance"):
            answers = self.llm.complete_many(chats, max_tokens=self.max_tokens) if chats else []
        four = self.prompt == "bioace_citation"
        for a in answers:
            if not names_stance_label(a.text, four):  # read as neutral by default, not the model's verdict
                reject(self.llm, a, "names no stance label (read as neutral)")
        parse = parse_citation_label if four else parse_stance
        return [parse(a.text) for a in answers]

    @staticmethod
    def _verdict(label: str, quote: str, text: str, section: str | None) -> StanceVerdict:
        stance = Stance(label)
        scores = tuple((s.value, 1.0 if s is stance else 0.0)
                       for s in (Stance.SUPPORTS, Stance.CONTRADICTS, Stance.NEUTRAL))
        at = text.find(quote) if len(quote) >= 8 else -1
        start, end = (at, at + len(quote)) if at >= 0 else (0, len(text))
        return StanceVerdict(stance, scores, start, end, section)

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[StanceVerdict]:
        parsed = self._ask([(claim, "", text) for claim, text in pairs])
        return [self._verdict(label, quote, text, None) for (label, quote), (_, text) in zip(parsed, pairs,
                                                                                             strict=True)]

    def classify_articles(self, pairs: Sequence[tuple[str, Article]]) -> list[StanceVerdict]:
        parsed = self._ask([(claim, a.title, a.abstract) for claim, a in pairs])
        return [self._verdict(label, quote, a.abstract, "abstract")
                for (label, quote), (_, a) in zip(parsed, pairs, strict=True)]
