"""BioACE's answer-completeness judge on an LLM (``medcite eval biogen-b``): one request per answer.

The prompt (``prompts/bioace_completeness.txt``) shows the question and the answer's numbered sentences; the reply
gives each sentence one of :data:`medcite.evaluate.completeness.LABELS` (read by
:func:`medcite.llm.reply_parsers.parse_sentence_labels`). A reply that leaves a sentence without a label is
rejected (the cache does not replay it) and that sentence counts as unjudged.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..evaluate.completeness import LABELS
from .base import LLM, reject
from .prompts import render
from .reply_parsers import parse_sentence_labels
from .trace import trace_context


class LLMCompletenessJudge:
    """Implements :class:`medcite.evaluate.biogen_b.CompletenessJudge` with ``llm``."""

    def __init__(self, llm: LLM, max_tokens: int = 256) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def label(self, answers: Sequence[tuple[str, Sequence[str]]]) -> list[list[str | None]]:
        chats = [render("bioace_completeness", question=question,
                        sentences="\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1)))
                 for question, sentences in answers]
        with trace_context(stage="completeness"):
            replies = self.llm.complete_many(chats, max_tokens=self.max_tokens) if chats else []
        out = []
        for (_, sentences), reply in zip(answers, replies, strict=True):
            labels = parse_sentence_labels(reply.text, len(sentences), LABELS)
            if None in labels:  # a sentence left unjudged: no line, or a label outside LABELS
                reject(self.llm, reply, f"{labels.count(None)} of {len(sentences)} sentences got no label "
                                        f"among {', '.join(LABELS)}")
            out.append(labels)
        return out
