"""Listwise LLM reranking with a sliding window, after RankGPT (Sun et al., 2023, "Is ChatGPT Good at
Search? Investigating Large Language Models as Re-Ranking Agents"), as used by CLaC 2025 (top 30 -> 10).

The window slides from the bottom of the candidate list to the top, so strong documents found low in the
first-stage ranking can climb step by step. The model answers each window with a permutation such as
``[3] > [1] > [2]``; ids it leaves out keep their relative order after the ones it ranked, and it can only
reorder the documents it was shown, so no PMID is ever invented.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..llm.base import LLM, llm_enabled
from ..llm.prompts import parse_permutation, render
from ..llm.trace import trace_context
from ..types import Article, Hit

if TYPE_CHECKING:
    from ..config import RerankSettings, Settings

log = logging.getLogger(__name__)


def passage(article: Article, max_words: int) -> str:
    """Title and abstract on one line, cut to ``max_words`` words so a window fits the context."""
    words = article.text.split()
    text = " ".join(words[:max_words])
    return text + " ..." if len(words) > max_words else text


class LLMListwiseReranker:
    """Reorders the top ``top_n`` hits with an LLM in windows of ``window``, moving up by ``step``.

    Scores of the returned hits are ``1 / rank`` of the final order (the listwise model gives no scores).
    """

    name = "llm-listwise"

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
    def from_settings(cls, settings: Settings | RerankSettings, llm: LLM | None = None) -> LLMListwiseReranker:
        """Built from the whole :class:`~medcite.config.Settings` (``rerank`` and ``llm`` sections).

        Given only the ``rerank`` section, ``llm`` must be passed (an LLM made by
        :func:`medcite.llm.base.make_llm`), since that section does not say which model to call.
        """
        from ..config import Settings

        if isinstance(settings, Settings):
            rerank = settings.rerank
            if llm is None:
                from ..llm.base import make_llm

                llm = make_llm(settings)
        else:
            rerank = settings
        if llm is None or not llm_enabled(llm):
            raise ConfigError(
                "the llm-listwise reranker needs a language model, but none is configured",
                hint="set llm.backend (e.g. --set llm.backend=local, or openai with llm.model and llm.base_url); "
                "callers holding only the rerank settings must pass llm=make_llm(settings)",
            )
        return cls(llm, top_n=rerank.top_n, window=rerank.window, step=rerank.step,
                   max_words=rerank.passage_words)

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
