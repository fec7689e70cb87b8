"""The generator protocol and its base config: a question and numbered evidence in, a cited answer out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field

from ..settings_base import BackendConfig, Section
from ..types import Answer, Dropped, Evidence, Query, Topic

#: ``Answer.generator`` of an LLM answer replaced by the extractive one (invalid, failed, or emptied by a check)
FALLBACK = "llm+extractive-fallback"


class GenerateConfig(BackendConfig):
    """Base of every generator's settings: the caps every answer obeys."""

    max_words: int = Field(250, ge=1, description="Hard cap on answer length in words.")
    max_citations: int = Field(3, ge=1, description="Most PMIDs kept per sentence.")


class ExtractiveOptions(Section):
    """How the extractive generator picks sentences (also when it stands in for a failed LLM answer)."""

    max_sentences: int = Field(5, ge=1, description="Most sentences in an extractive answer.")
    min_relative_score: float = Field(
        0.45, ge=0, le=1, description="Leave out evidence scoring under this share of the best item."
    )


@runtime_checkable
class Generator(Protocol):
    name: str

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        """An answer whose every sentence cites PMIDs of ``evidence`` only (caps enforced)."""
        ...


@runtime_checkable
class Revises(Protocol):
    """A generator that writes again with the reasons its citations were rejected (Dalhousie 2025's
    citation-validation loop); the verification loop asks for it with ``isinstance``."""

    def revise(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence], previous: Answer,
               reasons: Sequence[str]) -> Answer: ...


@runtime_checkable
class FallsBack(Protocol):
    """A generator with an extractive fallback answer (verbatim quotes of the evidence), used when a
    citation gate or check leaves nothing or cannot run; ``why`` and the discarded ``text`` are recorded, and the
    LLM reply it came from is rejected (never replayed from the cache) unless ``reject_reply`` is False."""

    def extractive_answer(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence],
                          notes: list[Dropped], text: str, why: str, *, reject_reply: bool = True) -> Answer: ...
