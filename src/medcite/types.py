"""Small typed objects that pass between stages. Stages take and return only these."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True)
class Section:
    """One part of an abstract: its label and its character span in ``Article.abstract``."""

    label: str | None
    category: str | None
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class MeshHeading:
    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: tuple[tuple[str, str | None, bool], ...] = ()  # (name, UI, major)


@dataclass(frozen=True, slots=True)
class Article:
    """A PubMed record as medcite stores it. ``pmid`` is the bare integer string."""

    pmid: str
    title: str
    abstract: str = ""
    sections: tuple[Section, ...] = ()
    version: int = 1
    journal: str | None = None
    journal_iso: str | None = None
    year: int | None = None
    mesh: tuple[MeshHeading, ...] = ()
    publication_types: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    retracted: bool = False
    doi: str | None = None
    pmc: str | None = None

    @property
    def text(self) -> str:
        """Title and abstract as one passage (what sparse and dense indexes see)."""
        return f"{self.title} {self.abstract}".strip()


@dataclass(frozen=True, slots=True)
class Topic:
    """A question to answer. ``narrative``/``topic`` come from BioGen, ``type`` from BioASQ."""

    id: str
    question: str
    narrative: str | None = None
    topic: str | None = None
    type: str | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """One query of a topic's query set. ``stage`` says what produced it (original, reformulation, ...); ``also``
    names the later stages that produced the same text (a keyword rewrite that repeats the question): the query is
    searched once and belongs to every one of its :attr:`stages`."""

    id: str
    text: str
    stage: str = "original"
    also: tuple[str, ...] = ()

    @property
    def stages(self) -> tuple[str, ...]:
        """Every stage this query belongs to, the first that produced it first."""
        return (self.stage, *(s for s in self.also if s != self.stage))

    def belongs_to(self, stages: Collection[str]) -> bool:
        """Whether any stage of this query is one of ``stages`` (a branch's ``queries`` selection)."""
        return any(s in stages for s in self.stages)


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked document. ``branches`` names the sub-queries/retrievers that found it."""

    pmid: str
    score: float
    rank: int = 0
    branches: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Evidence:
    """One numbered piece of evidence shown to the generator: ``[index] (pmid) text``.

    ``section`` is ``title`` or ``abstract``; ``start``/``end`` are character offsets in that section
    (None for LLM summaries, which are not spans of the source).
    """

    index: int
    pmid: str
    text: str
    section: str | None = None
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    kind: str = "snippet"
    branches: frozenset[str] = frozenset()


class Stance(str, Enum):
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    NEUTRAL = "neutral"
    NOT_RELEVANT = "not relevant"


@dataclass(frozen=True, slots=True)
class StanceVerdict:
    """The stance of a claim toward a text: its label, a probability per label, and the span that decided it.

    ``scores`` maps ``supports``/``contradicts``/``neutral`` to probabilities (they sum to 1). The span is
    ``text[start:end]`` of the judged text; for an article, ``section`` (``title`` or ``abstract``) says
    which of its texts the offsets index.
    """

    label: Stance
    scores: tuple[tuple[str, float], ...]
    start: int | None = None
    end: int | None = None
    section: str | None = None

    def score(self, label: Stance | str) -> float:
        name = label.value if isinstance(label, Stance) else label
        return dict(self.scores).get(name, 0.0)


#: kinds of lead sentences (see :class:`AnswerSentence`)
LEAD_KINDS = ("verdict", "entities", "abstain")


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    """A sentence of an answer with the PMIDs it cites (at most 3 after post-processing).

    ``kind`` is ``""`` for an ordinary (quoted or generated) sentence, or names a *lead* sentence that states
    the answer rather than quoting evidence: ``verdict`` ("Yes."/"No."/"The evidence is mixed.", citing the
    support sentences' PMIDs), ``entities`` (the named answers), ``abstain`` ("The corpus holds no article
    about X.", no citation). Verification gates check quoted sentences only and keep lead sentences."""

    text: str
    pmids: tuple[str, ...] = ()
    evidence: tuple[int, ...] = ()
    stances: tuple[tuple[str, Stance], ...] = ()
    kind: str = ""

    @property
    def is_lead(self) -> bool:
        return self.kind in LEAD_KINDS


@dataclass(frozen=True, slots=True)
class Dropped:
    """Something the post-processor removed, and why."""

    what: str  # "citation" | "sentence" | "answer" (a rejected LLM attempt, a fallback and why)
    text: str
    reason: str


@dataclass(slots=True)
class Answer:
    """A cited answer. ``question_type`` (yesno/factoid/list/summary), ``verdict`` (yes/no/mixed) and
    ``abstained`` (no article of the corpus is about the question) are set by answer-first generators."""

    topic_id: str
    sentences: list[AnswerSentence] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    generator: str = ""
    question_type: str | None = None
    verdict: str | None = None
    abstained: bool = False

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def pmids(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.sentences:
            for p in s.pmids:
                seen.setdefault(p, None)
        return list(seen)



#: the study designs an article can be labelled with (one per article; :mod:`medcite.design`)
META_ANALYSIS = "meta-analysis / systematic review"
RCT = "randomised controlled trial"
CLINICAL_TRIAL = "clinical trial (other)"
COHORT = "cohort or case-control"
CROSS_SECTIONAL = "cross-sectional"
CASE_REPORT = "case report or series"
NARRATIVE_REVIEW = "narrative review"
GUIDELINE = "guideline"
OTHER_DESIGN = "other"
DESIGNS = (META_ANALYSIS, RCT, CLINICAL_TRIAL, COHORT, CROSS_SECTIONAL, CASE_REPORT, NARRATIVE_REVIEW, GUIDELINE,
           OTHER_DESIGN)
#: what a study was done in: labels that combine with any design ("animal" and "in vitro" can both hold)
ANIMAL = "animal study"
IN_VITRO = "in-vitro / cell study"
HUMANS = "human study"
SUBJECTS = (ANIMAL, IN_VITRO, HUMANS)
#: label -> its short name (the `--design` filter, the viewer's filter)
DESIGN_SLUGS = {META_ANALYSIS: "meta-analysis", RCT: "rct", CLINICAL_TRIAL: "clinical-trial", COHORT: "cohort",
                CROSS_SECTIONAL: "cross-sectional", CASE_REPORT: "case-report", NARRATIVE_REVIEW: "review",
                GUIDELINE: "guideline", OTHER_DESIGN: "other", ANIMAL: "animal", IN_VITRO: "in-vitro",
                HUMANS: "humans"}
#: label -> a few letters for a badge or a table column
DESIGN_SHORT = {META_ANALYSIS: "MA/SR", RCT: "RCT", CLINICAL_TRIAL: "trial", COHORT: "cohort",
                CROSS_SECTIONAL: "cross-sect.", CASE_REPORT: "case report", NARRATIVE_REVIEW: "review",
                GUIDELINE: "guideline", OTHER_DESIGN: "other", ANIMAL: "animal", IN_VITRO: "in vitro",
                HUMANS: "human"}
INDEXED, PREDICTED = "indexed", "predicted"


@dataclass(frozen=True, slots=True)
class DesignLabel:
    """One label of an article's study design, where it came from and how sure it is.

    ``source`` is ``indexed`` (PubMed's own indexing: a publication type, a MeSH heading or check tag) or
    ``predicted`` (read from the title and abstract); ``confidence`` is 1.0 for a publication type and otherwise
    the measured precision of what decided it; ``cue`` names what decided it (the publication type, the MeSH
    heading, or the words of the title or abstract)."""

    name: str
    source: str
    confidence: float
    cue: str = ""


@dataclass(frozen=True, slots=True)
class StudyDesign:
    """What kind of study an article is: its design (one of :data:`DESIGNS`) and the subjects it was done in
    (:data:`SUBJECTS`, each a label of its own: an animal RCT is ``RCT`` + ``animal study``)."""

    design: DesignLabel
    subjects: tuple[DesignLabel, ...] = ()

    def has(self, name: str) -> bool:
        return self.design.name == name or any(s.name == name for s in self.subjects)

    @property
    def humans(self) -> bool:
        return self.has(HUMANS)

    @property
    def preclinical(self) -> bool:
        """An animal or in-vitro study that is not also a human study."""
        return (self.has(ANIMAL) or self.has(IN_VITRO)) and not self.humans

    @property
    def text(self) -> str:
        """How a person reads it: the design, then ``animal study`` / ``in-vitro / cell study`` where they hold
        (``other`` alone only when nothing else is known)."""
        extra = [s.name for s in self.subjects if s.name != HUMANS]
        if self.design.name == OTHER_DESIGN and extra:
            return ", ".join(extra)
        return ", ".join([self.design.name, *extra])

QUESTION_TYPES = ("yesno", "factoid", "list", "summary")


@dataclass(frozen=True, slots=True)
class Snippet:
    """A BioASQ snippet: a span of an article's title or abstract, with BioASQ's section offsets.

    ``begin_section`` / ``end_section`` are ``"title"`` or ``"abstract"``; offsets are character offsets into
    that section's text (``Article.title`` / ``Article.abstract``); ``end_offset`` is exclusive, so the text
    of a one-section snippet is ``section_text[begin_offset:end_offset]``. ``score`` ranks system snippets.
    """

    pmid: str
    text: str
    begin_section: str = "abstract"
    begin_offset: int = 0
    end_section: str = "abstract"
    end_offset: int = 0
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class Question:
    """A BioASQ Task b question. ``documents`` are bare PMIDs (ranked, for a system; gold, for a gold file).

    ``exact_answer`` (gold files): ``"yes"``/``"no"`` for yesno; for factoid and list a tuple of synonym
    tuples (one per entity, its first string the preferred name); None for summary or when absent.
    ``ideal_answers`` keeps every reference paragraph a gold file gives.
    """

    id: str
    type: str  # one of QUESTION_TYPES
    body: str
    documents: tuple[str, ...] = ()
    snippets: tuple[Snippet, ...] = ()
    ideal_answers: tuple[str, ...] = ()
    exact_answer: str | tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class QAAnswer:
    """A system's Phase A+/B answer to one question: the exact answer by type and the ideal answer.

    ``exact``: ``"yes"``/``"no"`` (yesno), a ranked list of entity names (factoid: at most 5; list), None
    (summary). ``ideal``: a paragraph of at most 200 words. ``sources`` are the snippets the answer was
    built from, for the run directory and the viewer; ``notes`` say how (e.g. the LLM's repaired JSON);
    ``examples`` are the ids of the training questions shown as few-shot examples (recorded in the run directory).
    """

    question_id: str
    exact: str | tuple[str, ...] | None
    ideal: str
    sources: tuple[Snippet, ...] = ()
    notes: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


def ranked(hits: Sequence[Hit]) -> list[Hit]:
    """Sort by descending score (ties by PMID for determinism) and renumber ranks from 1."""
    order = sorted(hits, key=lambda h: (-h.score, h.pmid))
    return [Hit(h.pmid, h.score, i + 1, h.branches) for i, h in enumerate(order)]
