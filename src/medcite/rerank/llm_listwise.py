"""Listwise LLM reranking with a sliding window, after RankGPT (Sun et al., 2023, "Is ChatGPT Good at
Search? Investigating Large Language Models as Re-Ranking Agents"), as used by DS@GT, BioASQ 13b (Verma et al.,
CLEF 2025: gpt-4o reorders the fine-tuned cross-encoder's top 30 and returns the top 10).

The window slides from the bottom of the candidate list to the top, so strong documents found low in the
first-stage ranking can climb step by step. The model answers each window with a permutation such as
``[3] > [1] > [2]``; ids it leaves out keep their relative order after the ones it ranked, and it can only
reorder the documents it was shown, so no PMID is ever invented.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..errors import ConfigError
from ..llm.base import LLM, reject
from ..llm.prompts import render
from ..llm.reply_parsers import parse_permutation, permutation_ids
from ..llm.trace import trace_context
from ..settings_base import UsesLLM
from ..types import Article, Hit
from .base import RerankConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)


def passage(article: Article, max_words: int) -> str:
    """Title and abstract on one line, cut to ``max_words`` words so a window fits the context."""
    words = article.text.split()
    text = " ".join(words[:max_words])
    return text + " ..." if len(words) > max_words else text


class ListwiseConfig(UsesLLM, RerankConfig):
    """RankGPT-style listwise reranking by an LLM with a sliding window (DS@GT, BioASQ 13b: top 30 -> 10)."""

    no_llm: ClassVar[dict[str, str]] = {"backend": "none"}

    backend: Literal["llm-listwise"] = "llm-listwise"
    window: int = Field(20, ge=2, description="Passages ranked per LLM call (RankGPT window).")
    step: int = Field(10, ge=1, description="How far the window moves up after each call.")
    passage_words: int = Field(120, ge=8, description="Words of title + abstract shown per passage.")
    max_tokens: int = Field(200, ge=8, description="Most tokens generated per call.")


class LLMListwiseReranker:
    """Reorders the top ``top_n`` hits with an LLM in windows of ``window``, moving up by ``step``.

    Scores of the returned hits are ``1 / rank`` of the final order (the listwise model gives no scores).
    """

    name = "llm-listwise"
    Config = ListwiseConfig

    def __init__(self, llm: LLM, *, top_n: int = 30, window: int = 20, step: int = 10, max_words: int = 120,
                 max_tokens: int = 200, prompt_dir: str | Path | None = None) -> None:
        if window < 2 or not 1 <= step <= window or top_n < 1:
            raise ConfigError(
                f"listwise reranker window={window}, step={step}, top_n={top_n} cannot slide",
                hint="use window >= 2, 1 <= step <= window (RankGPT: window 20, step 10) and top_n >= 1",
            )
        self.llm = llm
        self.top_n = top_n
        self.window = window
        self.step = step
        self.max_words = max_words
        self.max_tokens = max_tokens
        self.prompt_dir = prompt_dir
        self.calls = 0

    @classmethod
    def from_config(cls, cfg: ListwiseConfig, ctx: BuildContext) -> LLMListwiseReranker:
        llm = ctx.llm(cfg.llm, purpose="the llm-listwise reranker")
        return cls(llm, top_n=cfg.top_n, window=cfg.window, step=cfg.step, max_words=cfg.passage_words,
                   max_tokens=cfg.max_tokens)

    def windows(self, n: int) -> list[tuple[int, int]]:
        """The [start, end) spans ranked, bottom window first (RankGPT's sliding order)."""
        spans: list[tuple[int, int]] = []
        end = n
        while end > 0:
            start = max(0, end - self.window)
            spans.append((start, end))
            if start == 0:
                break
            end -= self.step
        return spans

    def _rank_window(self, query: str, hits: list[Hit], articles: Mapping[str, Article]) -> list[Hit]:
        lines = "\n".join(f"[{i}] {passage(articles[h.pmid], self.max_words)}" for i, h in enumerate(hits, 1))
        messages = render("listwise_rerank", self.prompt_dir, question=query, num=len(hits), passages=lines)
        with trace_context(stage="rerank"):
            completion = self.llm.complete(messages, max_tokens=self.max_tokens)
        self.calls += 1
        if not permutation_ids(completion.text, len(hits)):  # the window would keep its order: unread
            reject(self.llm, completion, f"no passage id 1-{len(hits)} could be read")
        order = parse_permutation(completion.text, len(hits))
        return [hits[i] for i in order]

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        """Rerank the top ``top_n`` readable hits (in input order) and return the best ``k``."""
        readable = [h for h in hits if h.pmid in articles]
        if len(readable) < len(hits):
            log.debug("dropped %d hits without an article", len(hits) - len(readable))
        head, tail = readable[: self.top_n], readable[self.top_n:]
        for start, end in self.windows(len(head)):
            if end - start >= 2:
                head[start:end] = self._rank_window(query, head[start:end], articles)
        final = head + tail
        return [Hit(h.pmid, 1.0 / rank, rank, h.branches) for rank, h in enumerate(final[:k], 1)]
