"""The study-design step of the answering pipeline: labels for every article an answer shows, and what medcite's
own presets do with them (``design.prefer_levels``, ``design.caveat``; :mod:`medcite.design.weigh`).

Labels are computed when the articles are read (the ``rules`` labeller reads their stored publication types, MeSH
headings, title and abstract), for the articles that need one only: the hits of equal relevance that the tie-break
orders, and the articles of the evidence. The time it takes is the topic's ``design_s`` timing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from ..config import Settings
from ..context import BuildContext
from ..design.base import Labeller
from ..design.weigh import prefer_levels, with_caveat, years_of
from ..types import Answer, Article, Hit, StudyDesign


class DesignStep:
    """The labeller of one pipeline, with the settings that say what to do with its labels."""

    #: labels kept per pipeline (an article's label is a function of its stored record and version)
    CACHE = 50_000

    def __init__(self, settings: Settings, context: BuildContext) -> None:
        self.cfg = settings.design
        self.max_words = int(getattr(settings.generate, "max_words", 250))
        self.labeller: Labeller = context.build("design", settings.design)
        self.seconds = 0.0
        self._known: dict[tuple[str, int], StudyDesign] = {}
        self._depth = 0

    @contextmanager
    def _clock(self) -> Iterator[None]:
        """Add the time of the outermost timed call to :attr:`seconds` (a call inside another is not counted twice)."""
        self._depth += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.seconds += time.perf_counter() - start

    def label(self, articles: Iterable[Article]) -> dict[str, StudyDesign]:
        """PMID -> study design of ``articles`` (each article labelled once per pipeline and version)."""
        with self._clock():
            items = list(articles)
            new = [a for a in items if (a.pmid, a.version) not in self._known]
            if new:
                if len(self._known) + len(new) > self.CACHE:
                    self._known.clear()
                for a, d in zip(new, self.labeller.label(new), strict=True):
                    self._known[(a.pmid, a.version)] = d
            return {a.pmid: self._known[(a.pmid, a.version)] for a in items}

    def order(self, hits: Sequence[Hit], articles: Mapping[str, Article]) -> list[Hit]:
        """``hits`` as evidence selection should read them: with ``prefer_levels``, equally relevant hits by
        evidence level, human studies and recency; else unchanged."""
        if not self.cfg.prefer_levels:
            return list(hits)
        with self._clock():
            return prefer_levels(hits, lambda pmids: self.label(articles[p] for p in pmids if p in articles),
                                 years_of(articles), self.cfg.equal_within, self.cfg.levels_depth)

    def finish(self, answer: Answer, articles: Mapping[str, Article]) -> tuple[Answer, dict[str, StudyDesign]]:
        """The labels of ``articles`` (the answer's evidence) and the answer, with its caveat line when
        ``design.caveat`` is on and some sentence rests only on animal, in-vitro or case-report studies."""
        with self._clock():
            designs = self.label(articles.values())
            if self.cfg.caveat:
                answer = with_caveat(answer, designs, self.max_words)
            return answer, designs

    def take_seconds(self) -> float:
        """The labelling time since the last call (one topic's ``design_s``)."""
        spent, self.seconds = self.seconds, 0.0
        return spent
