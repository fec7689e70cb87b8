"""LLM query generators: reformulation (CLaC 2025) and decomposition (CLaC 2024).

Both implement :class:`medcite.retrieve.base.QueryGenerator` and return only the new queries; the caller
adds the original question to the query set. Every call is traced with the topic id and the stage.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..types import Query, Topic
from .base import LLM
from .prompts import parse_decomposition, parse_reformulations, render
from .trace import trace_context

log = logging.getLogger(__name__)


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

    def __init__(self, llm: LLM, *, n: int = 3, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None) -> None:
        if not 1 <= n <= 3:
            raise ValueError(f"n={n}: the reformulation prompt asks for three queries; use 1 to 3")
        self.llm = llm
        self.n = n
        self.use_narrative = use_narrative
        self.max_tokens = max_tokens
        self.prompt_dir = prompt_dir

    def generate(self, topic: Topic) -> list[Query]:
        messages = render("reformulate", self.prompt_dir, question=_question(topic, self.use_narrative))
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

    def __init__(self, llm: LLM, *, max_queries: int = 5, use_narrative: bool = False, max_tokens: int = 256,
                 prompt_dir: str | Path | None = None) -> None:
        if max_queries < 1:
            raise ValueError(f"max_queries={max_queries}: ask for at least one sub-query")
        self.llm = llm
        self.max_queries = max_queries
        self.use_narrative = use_narrative
        self.max_tokens = max_tokens
        self.prompt_dir = prompt_dir

    def generate(self, topic: Topic) -> list[Query]:
        messages = render("decompose", self.prompt_dir, question=_question(topic, self.use_narrative))
        with trace_context(topic_id=topic.id, stage=self.stage):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        texts = parse_decomposition(completion.text, self.max_queries)
        if not texts:
            log.warning("topic %s: no sub-query could be read from %r", topic.id, completion.text[:200])
        return [Query(id=f"{self.stage}-{i}", text=t, stage=self.stage) for i, t in enumerate(texts, 1)]
