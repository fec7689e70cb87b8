"""The question-answering stage of BioASQ Phase A+ and B: a question and its snippets in, exact and ideal
answers out.

One protocol, backends chosen by name (registry stage ``qa``): an offline backend with no LLM (medcite's
trained yes/no classifier, entity candidates extracted from the snippets, an extractive ideal answer) and an
LLM backend (DS@GT and PJs, BioASQ 13b: zero/one/few-shot prompts, three prompt styles, JSON output).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field

from ..settings_base import BackendConfig
from ..types import QAAnswer, Question, Snippet

IDEAL_MAX_WORDS = 200  # BioASQ guidance: an ideal answer of up to about 200 words
FACTOID_MAX = 5  # BioASQ reads at most 5 ranked factoid entities


class QAConfig(BackendConfig):
    """Base of every qa backend's settings."""

    ideal_max_words: int = Field(IDEAL_MAX_WORDS, ge=1, le=IDEAL_MAX_WORDS,
                                 description="Cap on the ideal answer's length in words (BioASQ: about 200).")
    list_max: int = Field(10, ge=1, description="Most entities in a list answer.")


@runtime_checkable
class Answerer(Protocol):
    """Answers one BioASQ question from snippets (gold ones in Phase B, the system's own in Phase A+)."""

    name: str

    def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        """Exact answer by ``question.type`` (yes/no; at most 5 ranked factoid entities; list entities; none
        for summary) and an ideal answer of at most ``ideal_max_words`` words, built from ``snippets``."""
        ...
