"""The ``rules`` labeller: PubMed's indexing where a record has it, else rules on the title and abstract.

The design comes from the record's publication types or MeSH study-design headings when they name one
(:mod:`.indexed`: source ``indexed``); otherwise the cues of :mod:`.cues` are tried in order of precedence
(meta-analysis, guideline, randomised trial, other trial, case report, review, cohort, cross-sectional) and the
first that fires names it (source ``predicted``, its text the label's ``cue``); when none fires the design is
``other``. The subjects (animal, in vitro, human) come from MEDLINE's check tags and headings when the record has
MeSH headings, else from the cues.

A predicted label's confidence is the precision that label reached on the development records of
``benchmarks/bench_design.py`` (NLM records with their indexing hidden, split by record; :data:`CONFIDENCE`);
the held-out records measure it again there. Labelling tests a few words and regular expressions per article (a few
thousand articles a second on one core), so labels are computed where an article is shown or weighed, never stored
at ingest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Self

from ..types import (
    ANIMAL,
    CASE_REPORT,
    CLINICAL_TRIAL,
    COHORT,
    CROSS_SECTIONAL,
    GUIDELINE,
    HUMANS,
    IN_VITRO,
    META_ANALYSIS,
    NARRATIVE_REVIEW,
    OTHER_DESIGN,
    PREDICTED,
    RCT,
    Article,
    DesignLabel,
    StudyDesign,
)
from .base import DesignConfig
from .cues import ANIMAL_CUE, DESIGN_CUES, HUMANS_CUE, IN_VITRO_CUE, Scan, scan
from .indexed import indexed_design, indexed_subjects

if TYPE_CHECKING:
    from ..context import BuildContext

#: each predicted label's precision on the development records (benchmarks/bench_design.py --split dev: MEDLINE-
#: indexed records with their indexing hidden, Laplace-smoothed, (right + 1) / (predicted + 2)); a label with few
#: development records (meta-analysis: 5, guideline: none) keeps a cautious figure
CONFIDENCE: dict[str, float] = {
    META_ANALYSIS: 0.5, RCT: 0.64, CLINICAL_TRIAL: 0.56, COHORT: 0.57, CROSS_SECTIONAL: 0.25, CASE_REPORT: 0.81,
    NARRATIVE_REVIEW: 0.26, GUIDELINE: 0.14, OTHER_DESIGN: 0.9, ANIMAL: 0.97, IN_VITRO: 0.42, HUMANS: 0.91,
}
#: designs of studies done in people: a human study unless the text says animals or cells
_CLINICAL = frozenset({RCT, CLINICAL_TRIAL, COHORT, CROSS_SECTIONAL, CASE_REPORT})


class RulesConfig(DesignConfig):
    backend: Literal["rules"] = "rules"


def predict_design(title: str, abstract: str, scanned: Scan | None = None) -> DesignLabel:
    """The design the title and abstract name (the first cue that fires, in order of precedence), else ``other``.
    ``scanned``: the needles of the text (:func:`.cues.scan`), when the caller has them."""
    found_needles = scanned or scan(title, abstract)
    for cue in DESIGN_CUES:
        found = cue.find(title, abstract, found_needles)
        if found is not None:
            return DesignLabel(cue.label, PREDICTED, CONFIDENCE[cue.label], found)
    return DesignLabel(OTHER_DESIGN, PREDICTED, CONFIDENCE[OTHER_DESIGN])


def predict_subjects(title: str, abstract: str, design: str,
                     scanned: Scan | None = None) -> tuple[DesignLabel, ...]:
    """Animal, in-vitro and human labels from the title and abstract; a clinical design with no animal or cell cue
    is a human study."""
    found_needles = scanned or scan(title, abstract)
    out = []
    animal = ANIMAL_CUE.find(title, abstract, found_needles)
    cells = IN_VITRO_CUE.find(title, abstract, found_needles)
    for name, found in ((ANIMAL, animal), (IN_VITRO, cells)):
        if found is not None:
            out.append(DesignLabel(name, PREDICTED, CONFIDENCE[name], found))
    people = HUMANS_CUE.find(title, abstract, found_needles)
    if people is None and design in _CLINICAL and animal is None and cells is None:
        people = design
    if people is not None:
        out.append(DesignLabel(HUMANS, PREDICTED, CONFIDENCE[HUMANS], people))
    return tuple(out)


def label_article(article: Article) -> StudyDesign:
    """The study design of one article: indexed where PubMed says, predicted from its text where it does not."""
    design = indexed_design(article)
    subjects = indexed_subjects(article)
    if design is not None and subjects is not None:
        return StudyDesign(design, subjects)  # all indexed: the text is not read
    scanned = scan(article.title, article.abstract)
    design = design or predict_design(article.title, article.abstract, scanned)
    if subjects is None:
        subjects = predict_subjects(article.title, article.abstract, design.name, scanned)
    return StudyDesign(design, subjects)


class RulesLabeller:
    """Study-design labels from PubMed's indexing, else from rules on the title and abstract."""

    Config = RulesConfig

    @classmethod
    def from_config(cls, cfg: RulesConfig, ctx: BuildContext | None = None) -> Self:
        return cls()

    def label(self, articles: Sequence[Article]) -> list[StudyDesign]:
        return [label_article(a) for a in articles]
