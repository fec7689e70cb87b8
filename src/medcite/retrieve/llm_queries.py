"""LLM query generators: reformulation (CLaC 2025) and decomposition (CLaC 2024).

Both implement :class:`medcite.retrieve.base.QueryGenerator` and return only the new queries; the caller
adds the original question to the query set. Every call is traced with the topic id and the stage. A reply that
fails its format (no numbered line, not a list, an empty keyword query) is asked again once with the prompt
``format_reminder`` (:mod:`medcite.llm.format_retry`); when that reply fails too, the generator's queries are left
out and its ``notes`` say so (the run directory records them with the topic's queries).
The LLM is ``ctx.llm(cfg.llm)``: the default one, or a named entry of ``settings.llms`` (a different
model per stage, as Dalhousie 2025 ran DeepSeek-R1 for rewrites).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..llm.base import LLM, Message, reject
from ..llm.format_retry import FormReply, complete_in_form, complete_many_in_form
from ..llm.personas import frame
from ..llm.prompts import render
from ..llm.reply_parsers import (
    decomposition_is_list,
    parse_decomposition,
    parse_keyword_rewrite,
    parse_reformulations,
    parse_rewrite,
    parse_stance_queries,
)
from ..llm.trace import trace_context
from ..settings_base import UsesLLM
from ..types import Query, Topic
from .base import QueryGenConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)


class _LLMQueryConfig(UsesLLM, QueryGenConfig):
    no_llm: ClassVar[str] = "drop"  # offline: the keyword rewrites stand in (see offline_settings)

    use_narrative: bool = Field(False, description="Show the topic's narrative beside the question.")
    max_tokens: int = Field(256, ge=8, description="Most tokens generated per call.")
    format_reminder: bool = Field(
        True, description="medcite's safety net: a reply that cannot be read in the form the prompt asks for (a "
        "decomposition that is not a list, an empty keyword query) is asked again once with the prompt "
        "'format_reminder' before it is left out. No paper re-asks: every paper preset turns it off wherever its "
        "run reads it (the Task A contradiction sub-queries included; tests/unit/presets/test_safety_nets.py)."
    )


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


#: (what was wrong, the form wanted) of each prompt's format reminder
REFORMULATE_FORM = ('it has no line starting with "1.", "2." or "3."',
                    'as a numbered list of exactly three lines starting with "1.", "2." and "3."')
DECOMPOSE_FORMS = {
    "decompose": ("it is not a list of keyword queries",
                  'as a JSON list of strings only, for example: ["statin myopathy incidence", '
                  '"statin muscle pain risk factors"]'),
    "clac24_decompose": ("it is not a list of keyword queries",
                         'in the specified format: query: ["<query 1>", "<query 2>", "<query 3>", "<query 4>", '
                         '"<query 5>"]'),
}
KEYWORDS_FORM = ("it holds no keyword query", "as one keyword query on one line")
STANCE_QUERIES_FORM = ("it lacks a SUPPORT: or a CONTRADICT: line", "in exactly this form:\nSUPPORT: <query>\n"
                       "CONTRADICT: <query>")
REWRITE_FORM = ("it holds no rewritten statement", "as the rewritten statement on one line")


def _note(notes: list[str], got: FormReply, what: str, problem: str) -> None:
    note = got.note(what, problem)
    if note is not None:
        notes.append(note)


class _LLMQueryGenerator:
    """What the LLM query generators share: the LLM, the reply budget, the format reminder and the last topic's
    ``notes``, and one traced call that asks again once when the reply is not in its form."""

    name: ClassVar[str]

    def __init__(self, llm: LLM, *, max_tokens: int, format_reminder: bool) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.format_reminder = format_reminder
        self.notes: list[str] = []  # the last topic's (a reply left out after its format reminder)

    def _ask(self, topic: Topic, stage: str, messages: list[Message], ok: Callable[[str], bool],
             form: tuple[str, str]) -> FormReply:
        """One call traced as ``stage`` of ``topic``; ``form`` is (what was wrong, the form wanted) of the reminder."""
        problem, wanted = form
        with trace_context(topic_id=topic.id, stage=stage):
            got = complete_in_form(self.llm, messages, ok, problem=problem, form=wanted, max_tokens=self.max_tokens,
                                   remind=self.format_reminder)
        _note(self.notes, got, self.name, problem)
        return got


class _QuestionPromptGenerator(_LLMQueryGenerator):
    """An LLM query generator whose prompt file (``prompt``, from ``prompt_dir``) is shown the topic's question,
    with its narrative when ``use_narrative``."""

    stage: ClassVar[str]

    def __init__(self, llm: LLM, *, use_narrative: bool, max_tokens: int, prompt_dir: str | Path | None, prompt: str,
                 format_reminder: bool) -> None:
        super().__init__(llm, max_tokens=max_tokens, format_reminder=format_reminder)
        self.use_narrative = use_narrative
        self.prompt_dir = prompt_dir
        self.prompt = prompt

    def _ask_question(self, topic: Topic, ok: Callable[[str], bool], form: tuple[str, str]) -> FormReply:
        """The topic's reply (this topic's ``notes`` start empty)."""
        self.notes = []
        messages = render(self.prompt, self.prompt_dir, question=_question(topic, self.use_narrative))
        return self._ask(topic, self.stage, messages, ok, form)


class LLMReformulator(_QuestionPromptGenerator):
    """CLaC 2025: exactly three reformulations (formal clinical, patient-focused, one aspect).

    The numbered-list answer is read by fixed rules (:func:`medcite.llm.reply_parsers.parse_reformulations`);
    a reformulation equal to the question (ignoring case) is dropped, so fewer than three may come back.
    """

    name = "llm_reformulate"
    stage = "reformulation"
    Config = ReformulateConfig

    @classmethod
    def from_config(cls, cfg: ReformulateConfig, ctx: BuildContext) -> LLMReformulator:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_reformulate'")
        return cls(llm, n=cfg.n, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens, prompt=cfg.prompt,
                   format_reminder=cfg.format_reminder)

    def __init__(self, llm: LLM, *, n: int = 3, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None, prompt: str = "reformulate",
                 format_reminder: bool = True) -> None:
        if not 1 <= n <= 3:
            raise ValueError(f"n={n}: the reformulation prompt asks for three queries; use 1 to 3")
        super().__init__(llm, use_narrative=use_narrative, max_tokens=max_tokens, prompt_dir=prompt_dir,
                         prompt=prompt, format_reminder=format_reminder)
        self.n = n

    def generate(self, topic: Topic) -> list[Query]:
        got = self._ask_question(topic, lambda text: bool(parse_reformulations(text, self.n)), REFORMULATE_FORM)
        completion = got.completion
        texts = [t for t in parse_reformulations(completion.text, self.n)
                 if t.casefold() != topic.question.strip().casefold()]
        if not texts:
            log.warning("topic %s: no reformulation other than the question could be read from %r", topic.id,
                        completion.text[:200])
            reject(self.llm, completion, "no reformulation other than the question could be read")
        return [Query(id=f"{self.stage}-{i}", text=t, stage=self.stage) for i, t in enumerate(texts, 1)]


class LLMDecomposer(_QuestionPromptGenerator):
    """CLaC 2024: at most five keyword sub-queries, answered as a JSON-like list."""

    name = "llm_decompose"
    stage = "decomposition"
    Config = DecomposeConfig

    @classmethod
    def from_config(cls, cfg: DecomposeConfig, ctx: BuildContext) -> LLMDecomposer:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_decompose'")
        return cls(llm, max_queries=cfg.max_queries, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens,
                   prompt=cfg.prompt, format_reminder=cfg.format_reminder)

    def __init__(self, llm: LLM, *, max_queries: int = 5, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None, prompt: str = "decompose",
                 format_reminder: bool = True) -> None:
        if max_queries < 1:
            raise ValueError(f"max_queries={max_queries}: ask for at least one sub-query")
        super().__init__(llm, use_narrative=use_narrative, max_tokens=max_tokens, prompt_dir=prompt_dir,
                         prompt=prompt, format_reminder=format_reminder)
        self.max_queries = max_queries

    def generate(self, topic: Topic) -> list[Query]:
        got = self._ask_question(topic, decomposition_is_list,
                                 DECOMPOSE_FORMS.get(self.prompt, DECOMPOSE_FORMS["decompose"]))
        completion = got.completion
        texts = parse_decomposition(completion.text, self.max_queries)
        if not texts:
            log.warning("topic %s: no sub-query could be read from %r", topic.id, completion.text[:200])
            reject(self.llm, completion, "no sub-query could be read")
        elif not decomposition_is_list(completion.text):  # not a list (after the format reminder, if sent): left out
            after = " after a format reminder either" if got.reminded else ""
            log.warning("topic %s: the decomposition is not a list%s (%r); its sub-queries are left out", topic.id,
                        after, completion.text[:200])
            reject(self.llm, completion, f"not a list of sub-queries{after} (left out)")
            self.notes.append(f"{self.name}: the reply is not a list of sub-queries{after}; left out")
            texts = []
        return [Query(id=f"{self.stage}-{i}", text=t, stage=self.stage) for i, t in enumerate(texts, 1)]


class KeywordRewriteConfig(_LLMQueryConfig):
    """Dalhousie 2025: the question rewritten by the LLM as one keyword query with synonyms (for BM25 + Rocchio)."""

    backend: Literal["llm_keywords"] = "llm_keywords"


class LLMKeywordRewriter(_LLMQueryGenerator):
    """Dalhousie 2025: one keyword query with synonyms (stage ``keyword_rewrite``), searched by BM25 + Rocchio."""

    name = "llm_keywords"
    stage = "keyword_rewrite"
    Config = KeywordRewriteConfig

    def __init__(self, llm: LLM, *, use_narrative: bool = False, max_tokens: int = 256,
                 format_reminder: bool = True) -> None:
        super().__init__(llm, max_tokens=max_tokens, format_reminder=format_reminder)
        self.use_narrative = use_narrative

    @classmethod
    def from_config(cls, cfg: KeywordRewriteConfig, ctx: BuildContext) -> LLMKeywordRewriter:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_keywords'")
        return cls(llm, use_narrative=cfg.use_narrative, max_tokens=cfg.max_tokens, format_reminder=cfg.format_reminder)

    def generate(self, topic: Topic) -> list[Query]:
        self.notes = []
        messages = render("keyword_rewrite", question=_question(topic, self.use_narrative))
        got = self._ask(topic, self.stage, messages, lambda text: bool(parse_keyword_rewrite(text)), KEYWORDS_FORM)
        completion = got.completion
        text = parse_keyword_rewrite(completion.text)
        if not text:
            log.warning("topic %s: no keyword query could be read from %r", topic.id, completion.text[:200])
            reject(self.llm, completion, "no keyword query could be read")
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


class LLMStanceQueries(_LLMQueryGenerator):
    """Two queries for a sentence (the topic's question): one for support (stage ``support``), one for
    contradiction (stage ``contradict``)."""

    name = "llm_stance_queries"
    Config = StanceQueriesConfig

    def __init__(self, llm: LLM, *, persona: str = "expert", max_tokens: int = 256,
                 sides: tuple[str, ...] = ("support", "contradict"), prompt: str = "stance_queries",
                 format_reminder: bool = True) -> None:
        super().__init__(llm, max_tokens=max_tokens, format_reminder=format_reminder)
        self.persona, self.sides, self.prompt = persona, tuple(sides), prompt

    @classmethod
    def from_config(cls, cfg: StanceQueriesConfig, ctx: BuildContext) -> LLMStanceQueries:
        llm = ctx.llm(cfg.llm, purpose="the query generator 'llm_stance_queries'")
        return cls(llm, persona=cfg.persona, max_tokens=cfg.max_tokens, sides=tuple(cfg.sides), prompt=cfg.prompt,
                   format_reminder=cfg.format_reminder)

    def generate(self, topic: Topic) -> list[Query]:
        self.notes = []
        if self.prompt == "stance_rewrites":
            return self._rewrites(topic)
        messages = render("stance_queries", sentence=topic.question, persona=PERSONAS[self.persona])
        if self.persona == "emotionprompt":
            messages = frame(messages, "emotionprompt")
        got = self._ask(topic, "stance_queries", messages,
                        lambda text: set(self.sides) <= set(parse_stance_queries(text)), STANCE_QUERIES_FORM)
        completion = got.completion
        sides = parse_stance_queries(completion.text)
        if not sides:
            log.warning("topic %s: no support/contradict query could be read from %r", topic.id, completion.text[:200])
            reject(self.llm, completion, "no support/contradict query could be read")
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
        problem, form = REWRITE_FORM
        with trace_context(topic_id=topic.id, stage="stance_rewrites"):
            got = complete_many_in_form(self.llm, chats, lambda text: bool(parse_rewrite(text)), problem=problem,
                                        form=form, max_tokens=self.max_tokens, remind=self.format_reminder)
        out = []
        for side, reply in zip(self.sides, got, strict=True):
            _note(self.notes, reply, f"{self.name} ({side})", problem)
            completion = reply.completion
            text = parse_rewrite(completion.text)
            if text:
                out.append(Query(f"{side}-1", text, side))
            else:
                log.warning("topic %s: no %s rewrite could be read from %r", topic.id, side, completion.text[:200])
                reject(self.llm, completion, f"no {side} rewrite could be read")
        return out
