"""Candidate answer sentences, their features, and the answer-sentences selector (medcite.evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from medcite.evidence.answer_features import ANSWER_FEATURES, answer_candidates, answer_features, usable
from medcite.evidence.answer_sentences import AnswerSentenceSelector
from medcite.evidence.sentence_features import FEATURES
from medcite.types import Article, Hit, Query

pytest.importorskip("wordfreq")

ABSTRACT = ("BACKGROUND: Zorbalene is a new kinase inhibitor. "
            "METHODS: 1) Adults were randomised. "
            "We enrolled 120 adults with quellitis in a randomised trial of zorbalene infusion. "
            "RESULTS: Zorbalene infusion reversed quellitis in 70% of adults compared with 20% on placebo. "
            "Results. "
            "Copyright 2020 Elsevier Ltd. All rights reserved. "
            "Trial registration: ClinicalTrials.gov NCT01234567 registered the trial in 2018 for adults.")
# the cut fragment opens the abstract: after a sentence, the splitter would glue it to that sentence (which the
# glue check then drops whole)
OTHER = ("ent options that target the classical complement pathway are under development for adults. "
         "Aspirin lowers the risk of myocardial infarction in older men with diabetes. "
         "Zorbalene infusion reversed quellitis in 70% of adults compared with 20% on placebo in the trial.")


def arts() -> dict[str, Article]:
    return {"1": Article("1", "Zorbalene for quellitis", ABSTRACT), "2": Article("2", "Aspirin", OTHER)}


def test_usable_drops_fragments_list_items_headings_and_metadata() -> None:
    assert usable("Zorbalene infusion reversed quellitis in most adults.")
    assert not usable("Results.")  # a fragment
    assert not usable("1) Adults were randomised to two arms of the trial.")  # a list item
    assert not usable("• Adults were randomised to two arms of the trial.")
    assert not usable("MAIN OUTCOME MEASURES AND RESULTS:")  # a heading
    assert not usable("Copyright 2020 Elsevier Ltd. All rights reserved by the publisher.")
    assert not usable("Trial registration: ClinicalTrials.gov NCT01234567 registered in 2018.")
    assert not usable("ent options that target the classical complement pathway are under development.")
    assert not usable(" ".join(["Toripalimab was approved for melanoma in China."] * 12))  # a run-on of 84 words


def test_usable_drops_reference_strings_glued_pieces_and_words_cut_at_an_edge() -> None:
    # the sentence `make demo` once quoted from PMID 32494854's abstract
    assert not usable("Coronavirus disease 2019 (COVID-19) situation report-96.,].")
    assert not usable("World Health Organization. Available from: https://www.who.int/emergencies/diseases.")
    assert not usable("Smith J, et al. 2020;12(3):45-52 reported the same association in adults.")
    assert not usable("tion of the receptor was observed in all treated patients.")  # cut at the start
    assert not usable("The cohort of 45 patients showed an improvement in the")  # cut at the end
    assert not usable("Outcomes improved in the treated cohort.Results were similar in the controls.")  # glued
    assert not usable("Patients were treated with zorbalene (n = 20 and improved.")  # bracket never closed
    assert not usable("Approaches targeting it are currently in clinical development. aches targeting pGlu3 by QC.")
    assert not usable("Aramchol downregulated SCD1, a key enzyme involved in triglyceride biosynthesis wh Aramchol "
                      "downregulated SCD1, a key enzyme involved in triglyceride biosynthesis whose loss helps.")
    assert usable("Two antibodies, fremanezumab and galcanezumab, were approved by the FDA in September 2018.")
    assert usable("Salmonella enterica subsp. enterica serovar Typhimurium grew in approx. half of the cultures.")
    assert not usable("1p/19q co-deletion is associated with increased The study demonstrated that it is poor.")
    # found in the shared NLM update file: a figure reference glued to the sentence after it
    assert not usable("plantcell;31/10/tpc.119.tt0819/FIG1F1fig1The age of big data includes sophisticated imaging.")
    assert usable("mRNA levels of IL-6 were increased in the treated tumours.")  # a name may start lower-case
    assert usable("α-Synuclein aggregates were found in all samples tested.")
    assert usable("p53 was mutated in half of the tumours examined (n = 40).")


@pytest.mark.slow  # parses the shared PubMed XML sample
def test_no_candidate_from_real_pubmed_xml_is_a_label_reference_or_fragment(shared_data) -> None:
    import re

    from medcite.corpus.pubmed_xml import iter_pubmed_xml

    path = shared_data / "pubmed_xml" / "pubmed21n1298_first300_plus_deletecitation.xml.gz"
    with open(path, "rb") as fh:
        articles = {a.pmid: a for a in iter_pubmed_xml(fh, path.name) if isinstance(a, Article) and a.abstract}
    hits = [Hit(p, 1.0, i + 1) for i, p in enumerate(articles)]
    cands = answer_candidates(hits, articles, docs=len(hits))
    assert len(cands) > 1000 and any(a.sections for a in articles.values())  # structured abstracts among them
    label = re.compile(r"^(?:[A-Z][A-Z /&-]{2,}|Background|Methods?|Results?|Conclusions?|Objectives?):")
    for c in cands:
        t = c.text
        assert articles[c.span.pmid].abstract[c.span.start:c.span.end] == t  # an exact span of the abstract
        assert not label.match(t), t  # no structured-abstract label left at its start
        starts = t[0].isupper() or t[0].isdigit() or not t[0].isalpha() or "\u0370" <= t[0] <= "\u03ff"
        assert starts or re.match(r"[a-z]+-?[A-Z0-9]", t), t  # a capital, a digit, a Greek letter or a name
        assert t.rstrip()[-1] in ".!?)]\"'\u201d", t  # ends as a sentence ends
        assert t.count("(") == t.count(")") and t.count("[") == t.count("]"), t
        assert "http" not in t and ".,]" not in t, t


def test_candidates_are_abstract_spans_without_labels_or_near_copies() -> None:
    articles = arts()
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    texts = [c.text for c in cands]
    assert "Zorbalene for quellitis" not in texts  # titles are not candidates
    assert all(not t.startswith(("RESULTS", "METHODS", "BACKGROUND")) for t in texts)
    assert not any("Copyright" in t or "NCT0" in t or t.startswith("1)") for t in texts)
    for c in cands:  # exact spans of the abstract, labels cut off
        assert articles[c.span.pmid].abstract[c.span.start:c.span.end] == c.text
    # the near-copy in article 2 (one sentence contained in the other) merged into article 1's
    reversed_ = [c for c in cands if c.text.startswith("Zorbalene infusion reversed")]
    assert len(reversed_) == 1 and reversed_[0].copies == 2 and reversed_[0].span.pmid == "1"


def test_features_shape_and_concept_coverage() -> None:
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], arts())
    x, sim = answer_features("Does zorbalene reverse quellitis?", "yesno", cands, ["zorbalene", "quellitis"])
    assert x.shape == (len(cands), len(ANSWER_FEATURES)) and sim.shape == (len(cands), len(cands))
    assert ANSWER_FEATURES[: len(FEATURES)] == FEATURES  # the ideal scorer's features come first, unchanged
    cover = x[:, ANSWER_FEATURES.index("concept_coverage")]
    for c, v in zip(cands, cover, strict=True):
        expected = sum(w in c.text.lower() for w in ("zorbalene", "quellitis")) / 2
        assert v == pytest.approx(expected)
    assert np.all(x[:, ANSWER_FEATURES.index("type_yesno")] == 1)


def test_selector_requires_key_concepts_and_returns_nothing_for_an_unknown_one() -> None:
    sel = AnswerSentenceSelector(None, max_items=3)
    hits = [Hit("2", 2.0, 1), Hit("1", 1.0, 2)]
    ev = sel.select([Query("q", "Does zorbalene infusion reverse quellitis?")], hits, arts())
    assert ev and all("zorbalene" in e.text.lower() or "quellitis" in e.text.lower() for e in ev)
    assert [e.index for e in ev] == list(range(1, len(ev) + 1))
    assert all(e.section == "abstract" and arts()[e.pmid].abstract[e.start:e.end] == e.text for e in ev)
    assert sel.select([Query("q", "Does frobnaxil cure quellitis?")], hits, arts()) == []
    assert sel.last["missing"] == ["frobnaxil"]


def test_a_negated_sentence_is_never_merged_into_its_affirmative_twin() -> None:
    articles = {"1": Article("1", "A", "Aspirin reduced the risk of stroke in older adults with diabetes."),
                "2": Article("2", "B", "Aspirin did not reduce the risk of stroke in older adults with diabetes.")}
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    assert [c.span.pmid for c in cands] == ["1", "2"] and all(c.copies == 1 for c in cands)
    ev = AnswerSentenceSelector(None).select([Query("q", "Does aspirin reduce stroke in diabetes?")],
                                             [Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    assert {e.pmid for e in ev} == {"1", "2"}  # both findings reach the generator


def test_titles_stand_in_only_when_no_abstract_sentence_is_usable() -> None:
    only_titles = {"1": Article("1", "Cabotegravir injections prevent HIV infection in women", ""),
                   "2": Article("2", "Short title", "")}
    cands = answer_candidates([Hit("1", 2.0, 1), Hit("2", 1.0, 2)], only_titles)
    assert [(c.span.pmid, c.span.section) for c in cands] == [("1", "title")]
    with_abstract = answer_candidates([Hit("1", 2.0, 1), Hit("9", 1.0, 2)],
                                      {**only_titles, "9": Article("9", "A title of six words here", OTHER)})
    assert all(c.span.section == "abstract" for c in with_abstract)


def test_the_top_three_articles_are_always_read_and_a_rejection_says_why() -> None:
    off = ("Suicide prevention resources were disrupted during the COVID-19 pandemic in many states. "
           "Disruption due to the pandemic reduced access to crisis lines for adults in rural counties.")
    real = ("Olfactory sensory neurons lose their nuclear architecture after SARS-CoV-2 infection of the "
            "epithelium. Disruption of nuclear architecture in these neurons explains the loss of smell in "
            "COVID-19 anosmia.")
    weak = ("COVID-19 anosmia is frequent in young adults and resolves within weeks in most patients. "
            "Anosmia was reported by 60% of COVID-19 outpatients in the survey of 2020.")
    articles = {"1": Article("1", "Suicide prevention during the COVID-19 pandemic: anosmia and mood", off),
                "2": Article("2", "Disruption of nuclear architecture as a cause of COVID-19 induced anosmia", real),
                "3": Article("3", "Smell loss in COVID-19", weak)}
    hits = [Hit("1", 3.0, 1), Hit("2", 2.0, 2), Hit("3", 1.0, 3)]
    sel = AnswerSentenceSelector(None, max_items=2)
    ev = sel.select([Query("q", "Is COVID-19 anosmia caused by disruption of nuclear architecture?")], hits, articles)
    read = {r["pmid"]: r for r in sel.last["read"]}
    assert [r["rank"] for r in sel.last["read"]] == [1, 2, 3]
    # the article that asks what the question asks is read although the evidence was full
    assert read["2"]["status"] == "evidence" and "2" in {e.pmid for e in ev}
    # the suicide-prevention report shares "disruption" with the question, not what it asks: rejected, with why
    assert read["1"]["status"] == "rejected" and "little of what the question asks" in read["1"]["reason"]
    assert all(r["status"] == "evidence" or r["reason"] for r in read.values())


def test_an_article_that_names_the_subject_is_read_whole() -> None:
    # "HYDIN (Hydrocephalus-inducing protein homolog)": either name will do, and an article whose title names it
    # gives its sentences although they say only "the protein"
    articles = {"1": Article("1", "Hydin is a component of the ciliary central pair",
                             "The protein localizes to the axoneme of motile cilia in mice and humans. "
                             "Loss of the protein causes hydrocephalus in mutant mice."),
                "2": Article("2", "Hydrocephalus-inducing protein homolog in sperm flagella",
                             "This axonemal protein is required for sperm motility in men with infertility.")}
    sel = AnswerSentenceSelector(None)
    ev = sel.select([Query("q", "Is HYDIN (Hydrocephalus-inducing protein homolog) an axonemal protein?")],
                    [Hit("1", 2.0, 1), Hit("2", 1.0, 2)], articles)
    assert {e.pmid for e in ev} == {"1", "2"}


def test_a_top_article_that_names_most_of_the_question_is_read_whole() -> None:
    # a question written as a title: the abstract says "motor function", never "psychomotor", the key concept the
    # topic guard asks for; it names the question's other rare words (binge drinking, pregnancy)
    text = ("We examined binge drinking during early pregnancy and child motor function at age five. "
            "There were no significant differences in motor deficits between children of binge drinkers and "
            "of abstainers.")
    articles = {"1": Article("1", "", text)}
    question = "Does binge drinking during early pregnancy increase the risk of psychomotor deficits?"
    # the corpus mentions psychomotor elsewhere (so the question is about something the corpus holds)
    strict = AnswerSentenceSelector(None, cover_whole=1.01, in_corpus=lambda w: True)
    assert strict.select([Query("q", question)], [Hit("1", 2.0, 1)], articles) == []
    assert "off topic" in strict.last["read"][0]["reason"]
    covering = AnswerSentenceSelector(None, cover_whole=0.6, in_corpus=lambda w: True)
    ev = covering.select([Query("q", question)], [Hit("1", 2.0, 1)], articles)
    assert {e.pmid for e in ev} == {"1"} and covering.last["covering"] == ["1"]
    # an article that shares only the question's common words is not covered
    other = {"1": Article("1", "", "Early discharge did not increase the risk of readmission in children. "
                                   "The risk of readmission was low after early discharge in this cohort.")}
    sel = AnswerSentenceSelector(None, cover_whole=0.6, in_corpus=lambda w: True)
    assert sel.select([Query("q", question)], [Hit("1", 2.0, 1)], other) == []
