"""Study-design labels from PubMed's own indexing: publication types, MeSH study-design headings and check tags.

NLM's indexers assign publication types (``Randomized Controlled Trial``, ``Meta-Analysis``, ``Case Reports``,
``Review``, ...) and, on MEDLINE-indexed records, MeSH headings that name a design (``Cohort Studies``,
``Cross-Sectional Studies``, ...) and the check tags ``Humans`` and ``Animals``. Publishers supply some publication
types before indexing (``Review``, ``Case Reports``, ``Systematic Review``...). A record that NLM has not indexed
yet has no MeSH headings, and a JSONL corpus may carry neither: what is missing here is predicted from the title
and abstract by the labeller (:mod:`.rules`).
"""

from __future__ import annotations

from ..types import (
    ANIMAL,
    CASE_REPORT,
    CLINICAL_TRIAL,
    COHORT,
    CROSS_SECTIONAL,
    GUIDELINE,
    HUMANS,
    IN_VITRO,
    INDEXED,
    META_ANALYSIS,
    NARRATIVE_REVIEW,
    OTHER_DESIGN,
    RCT,
    Article,
    DesignLabel,
)

#: publication types naming a design, in order of precedence (a case report "and review of the literature" is a
#: case report; an RCT that is also tagged "Clinical Trial" is an RCT)
PUBLICATION_TYPES: tuple[tuple[str, frozenset[str]], ...] = (
    (META_ANALYSIS, frozenset({"Meta-Analysis", "Systematic Review", "Network Meta-Analysis", "Scoping Review"})),
    (GUIDELINE, frozenset({"Practice Guideline", "Guideline", "Consensus Development Conference",
                           "Consensus Development Conference, NIH"})),
    (RCT, frozenset({"Randomized Controlled Trial", "Randomized Controlled Trial, Veterinary"})),
    (CLINICAL_TRIAL, frozenset({"Clinical Trial", "Clinical Trial, Phase I", "Clinical Trial, Phase II",
                                "Clinical Trial, Phase III", "Clinical Trial, Phase IV", "Controlled Clinical Trial",
                                "Pragmatic Clinical Trial", "Equivalence Trial", "Adaptive Clinical Trial",
                                "Clinical Trial, Veterinary"})),
    (CASE_REPORT, frozenset({"Case Reports"})),
    (NARRATIVE_REVIEW, frozenset({"Review"})),
    (COHORT, frozenset({"Observational Study", "Observational Study, Veterinary"})),
)
#: MeSH headings of MEDLINE's study-design vocabulary (after the publication types)
MESH_DESIGNS: tuple[tuple[str, frozenset[str]], ...] = (
    (CROSS_SECTIONAL, frozenset({"Cross-Sectional Studies"})),
    (COHORT, frozenset({"Cohort Studies", "Prospective Studies", "Retrospective Studies", "Longitudinal Studies",
                        "Case-Control Studies", "Follow-Up Studies"})),
)
#: publication types of what is not a study (an editorial, a letter, a comment, a news item...): design "other"
NOT_STUDIES = frozenset({
    "Editorial", "Letter", "Comment", "News", "Newspaper Article", "Biography", "Autobiography", "Historical Article",
    "Portrait", "Interview", "Lecture", "Address", "Bibliography", "Directory", "Dictionary", "Published Erratum",
    "Retraction of Publication", "Expression of Concern", "Video-Audio Media", "Congress", "Patient Education Handout",
    "Legal Case", "Legislation", "Clinical Trial Protocol", "Personal Narrative", "Festschrift", "Obituary",
})
#: MeSH headings that index work on cells or tissues outside an organism
IN_VITRO_MESH = frozenset({
    "In Vitro Techniques", "Cells, Cultured", "Cell Line", "Cell Line, Tumor", "Cell Line, Transformed",
    "Tumor Cells, Cultured", "Cell Culture Techniques", "Primary Cell Culture", "Organ Culture Techniques",
    "Organoids", "Cell Culture Techniques, Three Dimensional", "HeLa Cells", "HEK293 Cells", "Hep G2 Cells",
    "MCF-7 Cells", "Caco-2 Cells", "Jurkat Cells", "A549 Cells", "THP-1 Cells", "CHO Cells", "PC12 Cells",
    "U937 Cells", "K562 Cells", "HL-60 Cells", "COS Cells", "Vero Cells", "RAW 264.7 Cells", "3T3 Cells",
    "NIH 3T3 Cells", "HT29 Cells", "MCF-10A Cells",
})
#: the confidence of a design read from a MeSH heading (a publication type is 1.0): the heading says the study
#: used that design, not that it is the whole design (a retrospective review of one case is a case report)
MESH_CONFIDENCE = 0.95


def indexed_design(article: Article) -> DesignLabel | None:
    """The design PubMed's indexing names (a publication type, then a MeSH study-design heading, then a type that
    is no study: "other"), or None when the record names none (a plain "Journal Article")."""
    types = set(article.publication_types)
    for name, wanted in PUBLICATION_TYPES:
        found = sorted(types & wanted)
        if found:
            return DesignLabel(name, INDEXED, 1.0, found[0])
    if article.mesh:
        headings = {m.descriptor for m in article.mesh}
        for name, wanted in MESH_DESIGNS:
            found = sorted(headings & wanted)
            if found:
                return DesignLabel(name, INDEXED, MESH_CONFIDENCE, found[0])
    found = sorted(types & NOT_STUDIES)
    if found:
        return DesignLabel(OTHER_DESIGN, INDEXED, 1.0, found[0])
    return None


def indexed_subjects(article: Article) -> tuple[DesignLabel, ...] | None:
    """The subjects MEDLINE's check tags and headings name (``Humans``, ``Animals``, cell and culture headings), or
    None when the record has no MeSH headings (not indexed yet, or a corpus without them)."""
    if not article.mesh:
        return None
    headings = {m.descriptor for m in article.mesh}
    out = []
    if "Animals" in headings:
        out.append(DesignLabel(ANIMAL, INDEXED, 1.0, "Animals"))
    found = sorted(headings & IN_VITRO_MESH)
    if found:
        out.append(DesignLabel(IN_VITRO, INDEXED, 1.0, found[0]))
    if "Humans" in headings:
        out.append(DesignLabel(HUMANS, INDEXED, 1.0, "Humans"))
    return tuple(out)
