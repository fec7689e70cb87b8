"""The study-design stage: its protocol, its base settings, the label vocabulary and the ``--design`` filter.

A labeller says what kind of study each article is (:class:`~medcite.types.StudyDesign`): one design of
:data:`~medcite.types.DESIGNS` and the subjects it was done in (animal, in vitro, human), every label with where it
came from (PubMed's indexing or a prediction from the title and abstract) and a confidence. Labels are computed
when an article is read, from the fields the store already holds (publication types, MeSH headings and check tags,
title, abstract), so ingest is untouched.

The settings of this section also hold medcite's own uses of the labels (none of the published systems labels or
weighs its citations; every paper preset leaves them off): the ``--design`` / ``--humans`` retrieval filter, the
tie-break that prefers higher evidence levels among equally relevant hits, and the one-line caveat of an answer
whose claim rests only on animal, in-vitro or case-report studies (:mod:`.weigh`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field, field_validator

from ..errors import ConfigError
from ..settings_base import BackendConfig
from ..types import (
    ANIMAL,
    CASE_REPORT,
    CLINICAL_TRIAL,
    COHORT,
    CROSS_SECTIONAL,
    DESIGN_SLUGS,
    DESIGNS,
    GUIDELINE,
    HUMANS,
    IN_VITRO,
    META_ANALYSIS,
    NARRATIVE_REVIEW,
    OTHER_DESIGN,
    RCT,
    Article,
    StudyDesign,
)

#: evidence level of each design, higher first (the usual hierarchy of evidence-based medicine; a guideline sits
#: with trials: it rests on them); an animal or in-vitro study that is not also a human study ranks below all
LEVELS: dict[str, int] = {META_ANALYSIS: 8, RCT: 7, GUIDELINE: 6, CLINICAL_TRIAL: 6, COHORT: 5, CROSS_SECTIONAL: 4,
                          CASE_REPORT: 3, NARRATIVE_REVIEW: 2, OTHER_DESIGN: 1}
PRECLINICAL_LEVEL = 0

#: what the filter accepts besides the slugs and full names (DESIGN_SLUGS)
_ALIASES = {"systematic-review": META_ANALYSIS, "meta-analyses": META_ANALYSIS, "ma": META_ANALYSIS,
            "sr": META_ANALYSIS, "randomised-controlled-trial": RCT, "randomized-controlled-trial": RCT,
            "trial": CLINICAL_TRIAL, "case-control": COHORT, "observational": COHORT, "case-series": CASE_REPORT,
            "narrative-review": NARRATIVE_REVIEW, "guidelines": GUIDELINE, "animals": ANIMAL,
            "cell": IN_VITRO, "human": HUMANS}


def level(design: StudyDesign) -> int:
    """The evidence level of a labelled article (:data:`LEVELS`; a preclinical study is the lowest)."""
    return PRECLINICAL_LEVEL if design.preclinical else LEVELS.get(design.design.name, 1)


def parse_designs(values: Iterable[str]) -> list[str]:
    """Canonical label names of a filter given as slugs (``rct``), full names or a comma-separated list of them;
    raises ConfigError naming the choices for an unknown one."""
    names: list[str] = []
    by_name = {**{slug: name for name, slug in DESIGN_SLUGS.items()}, **_ALIASES,
               **{name.lower(): name for name in DESIGN_SLUGS}}
    for value in values:
        for part in str(value).split(","):
            key = part.strip().lower()
            if not key:
                continue
            name = by_name.get(key) or by_name.get(key.replace(" ", "-").replace("_", "-"))
            if name is None:
                choices = ", ".join(slug for slug in DESIGN_SLUGS.values() if slug != "humans")
                raise ConfigError(f"unknown study design {part.strip()!r}",
                                  hint=f"choose from {choices} (comma-separated, e.g. --design rct,meta-analysis)")
            if name not in names:
                names.append(name)
    return names


def matches(design: StudyDesign, wanted: Sequence[str], humans: bool) -> bool:
    """Whether an article passes the filter: one of the ``wanted`` labels (any, when empty) and, with ``humans``,
    a human study."""
    if humans and not design.humans:
        return False
    return not wanted or any(design.has(name) for name in wanted)


class DesignConfig(BackendConfig):
    """Base settings of every study-design labeller: the labeller's own options live in its subclass; these say
    what medcite does with the labels."""

    only: list[str] = Field(
        default_factory=list, description="Keep only articles of these designs in every first-stage run (`--design`: "
        "slugs such as rct, meta-analysis, clinical-trial, cohort, cross-sectional, case-report, review, guideline, "
        "animal, in-vitro, other; an article passes with any one). Empty: no filter.")
    humans: bool = Field(False, description="Keep only human studies in every first-stage run (`--humans`).")
    depth: int = Field(
        10, ge=1, le=1000, description="With a filter, each first-stage run searches depth x its k hits and keeps the "
        "first k that pass (a filter that keeps one article in 20 still fills most of k).")
    prefer_levels: bool = Field(
        False, description="medcite's own option (no published system does this; off in every paper preset): among "
        "hits of equal relevance (scores within `equal_within` of each other) evidence selection reads higher evidence "
        "levels first (meta-analysis, RCT, guideline and other trials, cohort, cross-sectional, case report, review, "
        "other; animal and in-vitro studies last), then human studies, then the more recent.")
    levels_depth: int = Field(
        10, ge=1, le=10_000, description="prefer_levels: only the first N hits are reordered (evidence selection "
        "reads the top of the ranking; a tie further down would be labelled for nothing).")
    equal_within: float = Field(
        0.01, ge=0, le=1, description="prefer_levels: hits count as equally relevant when their scores differ by at "
        "most this fraction of the higher score (0: exact ties only).")
    caveat: bool = Field(
        False, description="medcite's own option (off in every paper preset): when every citation of an answer "
        "sentence is an animal, in-vitro or case-report study, the answer ends with one short line saying so.")

    @field_validator("only", mode="before")
    @classmethod
    def _known_designs(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            return value
        try:
            return parse_designs(str(v) for v in value)
        except ConfigError as exc:
            raise ValueError(f"{exc.message} ({exc.hint})") from None

    @property
    def filters(self) -> bool:
        """Whether the first-stage runs are filtered."""
        return bool(self.only) or self.humans


@runtime_checkable
class Labeller(Protocol):
    """Labels articles with their study design (one :class:`StudyDesign` per article, in order)."""

    def label(self, articles: Sequence[Article]) -> list[StudyDesign]: ...


def label_map(labeller: Labeller, articles: Mapping[str, Article] | Iterable[Article]) -> dict[str, StudyDesign]:
    """PMID -> its label, for the given articles (a mapping by PMID or any iterable of articles)."""
    items = list(articles.values()) if isinstance(articles, Mapping) else list(articles)
    return {a.pmid: d for a, d in zip(items, labeller.label(items), strict=True)}


__all__ = ["DESIGNS", "DesignConfig", "LEVELS", "Labeller", "label_map", "level", "matches",
           "parse_designs"]
