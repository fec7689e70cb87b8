"""Listwise citation choice by an LLM (CLaC 2024 Task A, Systems 1 and 2, Appendix A): one call is shown all of a
sentence's candidate abstracts and names the PMIDs that support it (Code Snippet 1, "You ** MUST provide at least
one citation **"), another is shown the contradiction candidates with the question and names the PMIDs that
contradict it (Code Snippet 2, '[]' for none).

Documents are listed as the prompts' example lists them (``* PMID n: text``, title and abstract); the answer is read
by :func:`medcite.llm.reply_parsers.parse_pmid_list`: only PMIDs that were shown, in the model's order, at most the cap.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..llm.base import reject
from ..llm.prompts import render
from ..llm.reply_parsers import parse_pmid_list
from ..llm.trace import trace_context
from ..types import Article

if TYPE_CHECKING:
    from ..llm.base import LLM

log = logging.getLogger(__name__)


def document_list(articles: Sequence[Article]) -> str:
    """The candidates as the Appendix A example lists documents: one ``* PMID n: title abstract`` line each."""
    return "\n".join(f"* PMID {a.pmid}: {' '.join(a.text.split())}" for a in articles)


class ListwiseCitations:
    """Picks supporting and contradicting PMIDs among candidates with one LLM call per list."""

    def __init__(self, llm: LLM, *, support_prompt: str = "clac24_support",
                 contradict_prompt: str = "clac24_contradict", max_tokens: int = 128) -> None:
        self.llm, self.support_prompt, self.contradict_prompt = llm, support_prompt, contradict_prompt
        self.max_tokens = max_tokens

    def _ask(self, prompt: str, stage: str, articles: Sequence[Article], limit: int, **values: str) -> list[str]:
        if not articles or limit <= 0:
            return []
        messages = render(prompt, docs=document_list(articles), **values)
        with trace_context(stage=stage):
            reply = self.llm.complete(messages, max_tokens=self.max_tokens)
        text = reply.text
        chosen = parse_pmid_list(text, [a.pmid for a in articles], limit)
        if not chosen:
            log.debug("%s: no shown PMID in the answer %r", stage, text[:200])
            if "[]" not in "".join(text.split()):  # '[]' is the prompts' own word for none; anything else is unread
                reject(self.llm, reply, "no PMID that was shown, and no empty list '[]'")
        return chosen

    def support(self, sentence: str, articles: Sequence[Article], limit: int = 3) -> list[str]:
        """The PMIDs (among ``articles``) the LLM names as supporting ``sentence``, at most ``limit``."""
        return self._ask(self.support_prompt, "citation-support", articles, limit, sentence=sentence)

    def contradict(self, question: str, sentence: str, articles: Sequence[Article], limit: int = 3) -> list[str]:
        """The PMIDs (among ``articles``) the LLM names as contradicting ``sentence``, at most ``limit``."""
        return self._ask(self.contradict_prompt, "citation-contradict", articles, limit, question=question,
                         sentence=sentence)
