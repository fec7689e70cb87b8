"""The study-design step of the answering pipeline: labels for every article an answer shows, and what medcite's
own presets do with them (``design.prefer_levels``, ``design.caveat``; :mod:`medcite.design.weigh`).

Labels are computed when the articles are read (the ``rules`` labeller reads their stored publication types, MeSH
headings, title and abstract), for the articles that need one only: the hits of equal relevance that the tie-break
orders, and the articles of the evidence. The time it takes is the topic's ``design_s`` timing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from ..config import Settings
from ..context import BuildContext
from ..design.base import Labeller, label_map
from ..design.weigh import prefer_levels, with_caveat, years_of
from ..types import Answer, Article, Hit, StudyDesign


class DesignStep:
    """The labeller of one pipeline, with the settings that say what to do with its labels."""

    def __init__(self, settings: Settings, context: BuildContext) -> None:
        self.cfg = settings.design
        self.max_words = int(getattr(settings.generate, "max_words", 250))
        self.labeller: Labeller = context.build("design", settings.design)
        self.seconds = 0.0

    def label(self, articles: Iterable[Article]) -> dict[str, StudyDesign]:
        start = time.perf_counter()
        try:
            return label_map(self.labeller, articles)
        finally:
            self.seconds += time.perf_counter() - start

    def order(self, hits: Sequence[Hit], articles: Mapping[str, Article]) -> list[Hit]:
        """``hits`` as evidence selection should read them: with ``prefer_levels``, equally relevant hits by
        evidence level, human studies and recency; else unchanged."""
        if not self.cfg.prefer_levels:
            return list(hits)
        start = time.perf_counter()
        try:
            return prefer_levels(hits, lambda pmids: label_map(self.labeller, [articles[p] for p in pmids
                                                                                if p in articles]),
                                 years_of(articles), self.cfg.equal_within)
        finally:
            self.seconds += time.perf_counter() - start

    def finish(self, answer: Answer, articles: Mapping[str, Article]) -> tuple[Answer, dict[str, StudyDesign]]:
        """The labels of ``articles`` (the answer's evidence) and the answer, with its caveat line when
        ``design.caveat`` is on and some sentence rests only on animal, in-vitro or case-report studies."""
        designs = self.label(articles.values())
        if self.cfg.caveat:
            answer = with_caveat(answer, designs, self.max_words)
        return answer, designs

    def take_seconds(self) -> float:
        """The labelling time since the last call (one topic's ``design_s``)."""
        spent, self.seconds = self.seconds, 0.0
        return spent
