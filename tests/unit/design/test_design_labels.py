"""Issue 44: study-design labels from PubMed's indexing where a record has it, else from its title and abstract;
every label says where it came from and how sure it is."""

from __future__ import annotations

import pytest

from medcite.design.base import level, matches, parse_designs
from medcite.design.indexed import indexed_design, indexed_subjects
from medcite.design.rules import CONFIDENCE, label_article
from medcite.errors import ConfigError
from medcite.types import (
    ANIMAL,
    CASE_REPORT,
    CLINICAL_TRIAL,
    COHORT,
    CROSS_SECTIONAL,
    DESIGNS,
    HUMANS,
    IN_VITRO,
    INDEXED,
    META_ANALYSIS,
    NARRATIVE_REVIEW,
    OTHER_DESIGN,
    PREDICTED,
    RCT,
    Article,
    MeshHeading,
)


def art(title: str = "", abstract: str = "", types: tuple[str, ...] = (), mesh: tuple[str, ...] = ()) -> Article:
    return Article("1", title, abstract, publication_types=("Journal Article", *types),
                   mesh=tuple(MeshHeading(m) for m in mesh))


@pytest.mark.parametrize(("types", "mesh", "want", "cue"), [
    (("Randomized Controlled Trial", "Clinical Trial"), (), RCT, "Randomized Controlled Trial"),
    (("Meta-Analysis", "Randomized Controlled Trial"), (), META_ANALYSIS, "Meta-Analysis"),
    (("Systematic Review", "Review"), (), META_ANALYSIS, "Systematic Review"),
    (("Case Reports", "Review"), (), CASE_REPORT, "Case Reports"),  # a case report "and review of the literature"
    (("Review",), (), NARRATIVE_REVIEW, "Review"),
    (("Clinical Trial, Phase II",), (), CLINICAL_TRIAL, "Clinical Trial, Phase II"),
    (("Practice Guideline",), (), "guideline", "Practice Guideline"),
    ((), ("Humans", "Retrospective Studies"), COHORT, "Retrospective Studies"),
    ((), ("Cross-Sectional Studies", "Cohort Studies"), CROSS_SECTIONAL, "Cross-Sectional Studies"),
    (("Letter",), (), OTHER_DESIGN, "Letter"),
    (("Letter", "Case Reports"), (), CASE_REPORT, "Case Reports"),  # a case described in a letter is a case report
])
def test_publication_types_and_mesh_name_the_design(types: tuple[str, ...], mesh: tuple[str, ...], want: str,
                                                    cue: str) -> None:
    found = indexed_design(art(types=types, mesh=mesh))
    assert found is not None and (found.name, found.source, found.cue) == (want, INDEXED, cue)
    assert found.confidence == (1.0 if types and cue in types else 0.95)


def test_a_plain_journal_article_names_no_design_and_unindexed_records_no_subjects() -> None:
    assert indexed_design(art()) is None
    assert indexed_design(art(mesh=("Humans", "Aspirin"))) is None  # MEDLINE-indexed, but no design heading
    assert indexed_subjects(art()) is None  # no MeSH: not indexed yet, predicted from the text
    tags = indexed_subjects(art(mesh=("Animals", "Humans", "Cells, Cultured")))
    assert tags is not None and [t.name for t in tags] == [ANIMAL, IN_VITRO, HUMANS]
    assert all(t.source == INDEXED for t in tags)
    assert indexed_subjects(art(mesh=("Aspirin",))) == ()  # indexed: no check tag is an answer too


@pytest.mark.parametrize(("title", "abstract", "want"), [
    ("Statins for stroke prevention: a systematic review and meta-analysis", "We searched MEDLINE.", META_ANALYSIS),
    ("Aspirin after surgery", "Patients were randomly assigned to aspirin or placebo.", RCT),
    ("Aspirin after surgery", "A double-blind study of 40 patients given aspirin or placebo.", CLINICAL_TRIAL),
    ("Hemangioma of the liver", "We report a 45-year-old woman with a giant hemangioma.", CASE_REPORT),
    ("Gas in the appendix", "Three patients with a gas-filled appendix are described.", CASE_REPORT),
    ("Zinc deficiency", "The literature on zinc in parenteral nutrition is reviewed.", NARRATIVE_REVIEW),
    ("Smoking and lung cancer", "In this prospective cohort study of 5,000 nurses, smoking doubled risk.", COHORT),
    ("Vaccine hesitancy", "This cross-sectional study surveyed 900 parents.", CROSS_SECTIONAL),
    ("Corrigendum", "This corrects the article on page 4.", OTHER_DESIGN),
])
def test_the_text_names_the_design_when_the_indexing_does_not(title: str, abstract: str, want: str) -> None:
    got = label_article(art(title, abstract))
    assert (got.design.name, got.design.source) == (want, PREDICTED)
    assert got.design.confidence == CONFIDENCE[want]
    assert want == OTHER_DESIGN or got.design.cue  # the words that decided it


def test_indexing_wins_over_the_text_and_subjects_combine_with_the_design() -> None:
    trial_text = "Mice were randomly assigned to the drug or placebo; in vitro, cultured cells were treated."
    indexed = label_article(art("A trial in mice", trial_text, types=("Review",), mesh=("Animals",)))
    assert indexed.design.name == NARRATIVE_REVIEW and indexed.design.source == INDEXED
    assert [s.name for s in indexed.subjects] == [ANIMAL]  # the check tags, not the text's cells
    predicted = label_article(art("Drug X in mice", trial_text))
    assert predicted.design.name == RCT
    assert {s.name for s in predicted.subjects} == {ANIMAL, IN_VITRO}
    assert predicted.preclinical and not predicted.humans
    assert predicted.text == "randomised controlled trial, animal study, in-vitro / cell study"
    people = label_article(art("Aspirin", "Patients were randomly assigned to aspirin or placebo."))
    assert people.humans and not people.preclinical and people.text == RCT


def test_levels_order_the_designs_and_preclinical_studies_come_last() -> None:
    designs = [label_article(art(types=(t,), mesh=("Humans",))) for t in
               ("Meta-Analysis", "Randomized Controlled Trial", "Case Reports", "Review")]
    assert [level(d) for d in designs] == sorted((level(d) for d in designs), reverse=True)
    mouse_trial = label_article(art(types=("Randomized Controlled Trial",), mesh=("Animals",)))
    assert level(mouse_trial) < level(designs[-1])


def test_the_filter_reads_slugs_names_and_lists() -> None:
    assert parse_designs(["rct,meta-analysis"]) == [RCT, META_ANALYSIS]
    assert parse_designs(["Case Report or Series", "systematic-review", "animal"]) == [CASE_REPORT, META_ANALYSIS,
                                                                                       ANIMAL]
    assert set(parse_designs(d for d in DESIGNS)) == set(DESIGNS)
    with pytest.raises(ConfigError, match="unknown study design 'rtc'") as err:
        parse_designs(["rct,rtc"])
    assert "case-report" in (err.value.hint or "")
    mouse = label_article(art(types=("Randomized Controlled Trial",), mesh=("Animals",)))
    assert matches(mouse, [RCT], humans=False) and not matches(mouse, [RCT], humans=True)
    assert matches(mouse, [ANIMAL], humans=False) and not matches(mouse, [META_ANALYSIS], humans=False)
    assert matches(mouse, [], humans=False)
