"""LLM query generators: reformulation (CLaC 2025) and decomposition (CLaC 2024).

Both implement :class:`medcite.retrieve.base.QueryGenerator` and return only the new queries; the caller
adds the original question to the query set. Every call is traced with the topic id and the stage.
The LLM is ``ctx.llm(cfg.llm)``: the default one, or a named entry of ``settings.llms`` (a different
model per stage, as Dalhousie 2025 ran DeepSeek-R1 for rewrites).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..llm.base import LLM
from ..llm.personas import frame
from ..llm.prompts import (
    parse_decomposition,
    parse_keyword_rewrite,
    parse_reformulations,
    parse_rewrite,
    parse_stance_queries,
    render,
)
from ..llm.trace import trace_context
from ..settings_base import UsesLLM
from ..types import Query, Topic
from .base import QueryGenConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)


class _LLMQueryConfig(UsesLLM, QueryGenConfig):
    no_llm: ClassVar[str] = "drop"  # offline: the keyword rewrites stand in (see offline_overrides)

    use_narrative: bool = Field(False, description="Show the topic's narrative beside the question.")
    max_tokens: int = Field(256, ge=8, description="Most tokens generated per call.")


class ReformulateConfig(_LLMQueryConfig):
    """CLaC 2025: three LLM reformulations (formal clinical, patient-focused, one aspect)."""

    backend: Literal["llm_reformulate"] = "llm_reformulate"
    n: int = Field(3, ge=1, le=3, description="Reformulations kept (the prompt asks for three).")
    prompt: Literal["reformulate", "clac25_reformulate"] = Field(
        "reformulate", description="The prompt file: medcite's 'reformulate' or 'clac25_reformulate' (CLaC 2025's "
        "Listing 1, verbatim)."
    )


class DecomposeConfig(_LLMQueryConfig):
    """CLaC 2024: at most five keyword sub-queries from the LLM."""

    backend: Literal["llm_decompose"] = "llm_decompose"
    max_queries: int = Field(5, ge=1, description="Most sub-queries kept.")
    prompt: Literal["decompose", "clac24_decompose"] = Field(
        "decompose", description="The prompt file: medcite's 'decompose' or 'clac24_decompose' (CLaC 2024's "
        "Appendix B question decomposition prompt, verbatim; its list follows 'query:')."
    )


def _question(topic: Topic, use_narrative: bool) -> str:
    if use_narrative and topic.narrative:
        return f"{topic.question}\nBackground: {topic.narrative}"
    return topic.question


class LLMReformulator:
    """CLaC 2025: exactly three reformulations (formal clinical, patient-focused, one aspect).

    The numbered-list answer is read by fixed rules (:func:`medcite.llm.prompts.parse_reformulations`);
    a reformulation equal to the question (ignoring case) is dropped, so fewer than three may come back.
    """

    name = "llm_reformulate"
    stage = "reformulation"
    Config = ReformulateConfig

    @classmethod
    def from_config(cls, cfg: ReformulateConfig, ctx: BuildContext) -> LLMReformulator:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_reformulate'")
        return cls(llm, n=cfg.n, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens, prompt=cfg.prompt)

    def __init__(self, llm: LLM, *, n: int = 3, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None, prompt: str = "reformulate") -> None:
        if not 1 <= n <= 3:
            raise ValueError(f"n={n}: the reformulation prompt asks for three queries; use 1 to 3")
        self.llm = llm
        self.n = n
        self.use_narrative = use_narrative
        self.max_tokens = max_tokens
        self.prompt_dir = prompt_dir
        self.prompt = prompt

    def generate(self, topic: Topic) -> list[Query]:
        messages = render(self.prompt, self.prompt_dir, question=_question(topic, self.use_narrative))
        with trace_context(topic_id=topic.id, stage=self.stage):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        texts = [t for t in parse_reformulations(completion.text, self.n)
                 if t.casefold() != topic.question.strip().casefold()]
        if not texts:
            log.warning("topic %s: no reformulation other than the question could be read from %r", topic.id,
                        completion.text[:200])
        return [Query(id=f"{self.stage}-{i}", text=t, stage=self.stage) for i, t in enumerate(texts, 1)]


class LLMDecomposer:
    """CLaC 2024: at most five keyword sub-queries, answered as a JSON-like list."""

    name = "llm_decompose"
    stage = "decomposition"
    Config = DecomposeConfig

    @classmethod
    def from_config(cls, cfg: DecomposeConfig, ctx: BuildContext) -> LLMDecomposer:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_decompose'")
        return cls(llm, max_queries=cfg.max_queries, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens,
                   prompt=cfg.prompt)

    def __init__(self, llm: LLM, *, max_queries: int = 5, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None, prompt: str = "decompose") -> None:
        if max_queries < 1:
            raise ValueError(f"max_queries={max_queries}: ask for at least one sub-query")
        self.llm = llm
        self.max_queries = max_queries
        self.use_narrative = use_narrative
        self.max_tokens = max_tokens
        self.prompt_dir = prompt_dir
        self.prompt = prompt

    def generate(self, topic: Topic) -> list[Query]:
        messages = render(self.prompt, self.prompt_dir, question=_question(topic, self.use_narrative))
        with trace_context(topic_id=topic.id, stage=self.stage):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        texts = parse_decomposition(completion.text, self.max_queries)
        if not texts:
            log.warning("topic %s: no sub-query could be read from %r", topic.id, completion.text[:200])
        return [Query(id=f"{self.stage}-{i}", text=t, stage=self.stage) for i, t in enumerate(texts, 1)]


class KeywordRewriteConfig(_LLMQueryConfig):
    """Dalhousie 2025: the question rewritten by the LLM as one keyword query with synonyms (for BM25 + Rocchio)."""

    backend: Literal["llm_keywords"] = "llm_keywords"


class LLMKeywordRewriter:
    """Dalhousie 2025: one keyword query with synonyms (stage ``keyword_rewrite``), searched by BM25 + Rocchio."""

    name = "llm_keywords"
    stage = "keyword_rewrite"
    Config = KeywordRewriteConfig

    def __init__(self, llm: LLM, *, use_narrative: bool = False, max_tokens: int = 256) -> None:
        self.llm, self.use_narrative, self.max_tokens = llm, use_narrative, max_tokens

    @classmethod
    def from_config(cls, cfg: KeywordRewriteConfig, ctx: BuildContext) -> LLMKeywordRewriter:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_keywords'")
        return cls(llm, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens)

    def generate(self, topic: Topic) -> list[Query]:
        messages = render("keyword_rewrite", question=_question(topic, self.use_narrative))
        with trace_context(topic_id=topic.id, stage=self.stage):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        text = parse_keyword_rewrite(completion.text)
        if not text:
            log.warning("topic %s: no keyword query could be read from %r", topic.id, completion.text[:200])
            return []
        return [Query(f"{self.stage}-1", text, self.stage)]


PERSONAS = {
    "expert": "You are a biomedical expert who searches PubMed like a systematic reviewer.",
    "emotional": "You are a worried patient's caring clinician; you search PubMed for what matters to them.",
    # EmotionPrompt (Li et al. 2023): a plain role; the stimulus is appended to the request (llm.personas.frame)
    "emotionprompt": "You search PubMed for evidence about biomedical claims.",
}


class StanceQueriesConfig(_LLMQueryConfig):
    """Dalhousie 2025 (Task A): a supporting and a contradicting query per sentence, in a persona's voice."""

    backend: Literal["llm_stance_queries"] = "llm_stance_queries"
    persona: Literal["expert", "emotional", "emotionprompt"] = Field(
        "expert", description="Voice of the queries: 'expert' a systematic reviewer's role, 'emotional' a caring "
        "clinician's, 'emotionprompt' an emotional stimulus appended (EmotionPrompt; Dalhousie 2025's "
        "emotional_prompt run)."
    )
    prompt: Literal["stance_queries", "stance_rewrites"] = Field(
        "stance_queries", description="'stance_queries': one call writes both keyword queries from the sentence; "
        "'stance_rewrites': the question and the sentence are rewritten as one statement per side, each side "
        "asked separately (Dal@TREC25 §III-A1; prompts stance_rewrite_support / stance_rewrite_contradict)."
    )
    sides: list[Literal["support", "contradict"]] = Field(
        ["support", "contradict"], min_length=1,
        description="Which queries are kept: both, or only 'support' (Dalhousie 2025 expd / empd ground with "
        "the supportive rewrite only)."
    )


class LLMStanceQueries:
    """Two queries for a sentence (the topic's question): one for support (stage ``support``), one for
    contradiction (stage ``contradict``)."""

    name = "llm_stance_queries"
    Config = StanceQueriesConfig

    def __init__(self, llm: LLM, *, persona: str = "expert", max_tokens: int = 256,
                 sides: tuple[str, ...] = ("support", "contradict"), prompt: str = "stance_queries") -> None:
        self.llm, self.persona, self.max_tokens, self.sides = llm, persona, max_tokens, tuple(sides)
        self.prompt = prompt

    @classmethod
    def from_config(cls, cfg: StanceQueriesConfig, ctx: BuildContext) -> LLMStanceQueries:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_stance_queries'")
        return cls(llm, persona=cfg.persona, max_tokens=cfg.max_tokens, sides=tuple(cfg.sides), prompt=cfg.prompt)

    def generate(self, topic: Topic) -> list[Query]:
        if self.prompt == "stance_rewrites":
            return self._rewrites(topic)
        messages = render("stance_queries", sentence=topic.question, persona=PERSONAS[self.persona])
        if self.persona == "emotionprompt":
            messages = frame(messages, "emotionprompt")
        with trace_context(topic_id=topic.id, stage="stance_queries"):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        sides = parse_stance_queries(completion.text)
        if not sides:
            log.warning("topic %s: no support/contradict query could be read from %r", topic.id, completion.text[:200])
        return [Query(f"{side}-1", text, side) for side, text in sides.items() if side in self.sides]

    def _rewrites(self, topic: Topic) -> list[Query]:
        """One call per side (Dal@TREC25 §III-A1): the sentence (``topic.question`` when grounding) with its
        question (``topic.topic``) rewritten as a statement; the persona frames the chat."""
        chats = []
        for side in self.sides:
            messages = render(f"stance_rewrite_{side}", question=topic.topic or topic.question,
                              sentence=topic.question)
            if self.persona in ("expert", "emotionprompt"):
                messages = frame(messages, self.persona)
            else:  # a persona's voice first in the system message
                messages = [{**m, "content": f"{PERSONAS[self.persona]} {m['content']}"} if m["role"] == "system"
                            else m for m in messages]
            chats.append(messages)
        with trace_context(topic_id=topic.id, stage="stance_rewrites"):
            completions = self.llm.complete_many(chats, max_tokens=self.max_tokens)
        out = []
        for side, completion in zip(self.sides, completions, strict=True):
            text = parse_rewrite(completion.text)
            if text:
                out.append(Query(f"{side}-1", text, side))
            else:
                log.warning("topic %s: no %s rewrite could be read from %r", topic.id, side, completion.text[:200])
        return out
