"""The extractive generator: no LLM, the offline default and the fallback when an LLM answer fails validation.

It composes a concise answer from the best evidence sentences (already ranked by relevance and de-duplicated by
MMR), put in reading order by :mod:`.reading_order`: labels of structured abstracts cut off, an anaphoric
sentence ("These results...") only right after its antecedent, the answering sentence first, then support,
then caveats; titles only when no abstract sentence is usable. Each sentence cites the PMID it was taken from,
and only that one: a lexical similarity between two sentences cannot tell "prevented" from "did not prevent",
so other sources are not attached until a stance check confirms they support the sentence. Evidence scoring
under ``min_relative`` of the best item is left out: a short answer of relevant findings beats a long one
padded with loosely related sentences. The result goes through the same :func:`finalize` as LLM output, so
the caps and the evidence-only rule hold by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..types import Answer, Evidence, Query, Topic
from .base import GenerateConfig
from .citations import DraftSentence
from .postprocess import finalize
from .reading_order import Unit, reading_order, units

if TYPE_CHECKING:
    from ..context import BuildContext


class ExtractiveConfig(GenerateConfig):
    """Answers composed of the best evidence sentences, each citing its own source (no LLM)."""

    backend: Literal["extractive"] = "extractive"
    max_sentences: int = Field(5, ge=1, description="Most sentences in the answer.")
    min_relative_score: float = Field(
        0.45, ge=0, le=1, description="Leave out evidence scoring under this share of the best item."
    )


@dataclass
class ExtractiveGenerator:
    name: str = "extractive"
    max_sentences: int = 5
    max_words: int = 250
    max_citations: int = 3
    min_score: float = 0.0
    min_relative: float = 0.45  # keep evidence scoring at least this share of the best item's score

    Config: ClassVar[type[ExtractiveConfig]] = ExtractiveConfig

    @classmethod
    def from_config(cls, cfg: ExtractiveConfig, ctx: BuildContext | None = None) -> ExtractiveGenerator:
        return cls(max_sentences=cfg.max_sentences, max_words=cfg.max_words, max_citations=cfg.max_citations,
                   min_relative=cfg.min_relative_score)

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        top = max((e.score for e in evidence), default=0.0)
        floor = max(self.min_score, self.min_relative * top)
        texts = [e for e in evidence if e.text.strip()]
        usable = [e for e in texts if e.score >= floor]
        # a title names a topic but rarely answers it: titles are used only when the evidence holds no abstract
        # sentence that can stand in an answer (even one under the floor)
        found: list[Unit] = []
        for pool in ([e for e in usable if e.section != "title"], [e for e in texts if e.section != "title"],
                     usable, texts):
            found = units(pool)
            if found:
                break
        chosen: list[tuple[Evidence, str]] = []
        seen_text: set[str] = set()
        for unit in reading_order(found):
            fresh = [(e, t) for e, t in zip(unit.items, unit.texts, strict=True)
                     if " ".join(t.lower().split()) not in seen_text]
            if len(fresh) != len(unit.items) or len(chosen) + len(fresh) > self.max_sentences:
                continue  # a repeated sentence, or an anaphor pair that would not fit whole
            seen_text.update(" ".join(t.lower().split()) for _, t in fresh)
            chosen.extend(fresh)
            if len(chosen) >= self.max_sentences:
                break
        drafts = [DraftSentence(_as_sentence(text), [e.index]) for e, text in chosen]
        sentences, dropped = finalize(drafts, evidence, max_citations=self.max_citations, max_words=self.max_words)
        return Answer(topic_id=topic.id, sentences=sentences, dropped=dropped, generator=self.name)


def _as_sentence(text: str) -> str:
    text = " ".join(text.split())
    if text and text[-1] not in ".!?":
        text += "."
    return text
