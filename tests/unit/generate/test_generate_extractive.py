from __future__ import annotations

from medcite.generate.extractive import ExtractiveGenerator
from medcite.types import Evidence, Query, Topic


def test_extractive_answer_cites_only_the_sentence_source() -> None:
    """Finding: similar sentences cited each other's abstract, negation or not; a sentence cites its source."""
    ev = [
        Evidence(1, "11", "Vitamin D prevented hip fractures in older adults.", score=0.9),
        Evidence(2, "22", "Vitamin D did not prevent hip fractures in older adults.", score=0.8),
        Evidence(3, "33", "Statins lower LDL cholesterol in adults with diabetes.", score=0.5),
    ]
    gen = ExtractiveGenerator(max_sentences=3)
    answer = gen.generate(Topic("t1", "Does vitamin D prevent fractures?"), [Query("q0", "vitamin D fracture")], ev)
    assert [s.pmids for s in answer.sentences] == [("11",), ("22",), ("33",)]
    assert answer.sentences[0].text.endswith(".")
    assert answer.generator == "extractive"


def test_extractive_respects_caps_and_skips_duplicates() -> None:
    text = "Aspirin reduces the risk of myocardial infarction in men"
    ev = [Evidence(i, str(100 + i), text, score=1.0 - i / 10) for i in range(1, 8)]
    ev.append(Evidence(8, "999", "Different content about kidneys and renal failure outcomes", score=0.1))
    answer = ExtractiveGenerator(max_sentences=5, max_citations=3, min_relative=0).generate(Topic("t", "q"), [], ev)
    assert len(answer.sentences) == 2  # identical texts collapse to one sentence
    assert all(len(s.pmids) <= 3 for s in answer.sentences)
    assert answer.sentences[1].pmids == ("999",)


def test_extractive_empty_evidence_gives_empty_answer() -> None:
    answer = ExtractiveGenerator().generate(Topic("t", "q"), [], [])
    assert answer.sentences == [] and answer.text == ""


def test_titles_only_used_when_no_abstract_sentence_is_usable() -> None:
    ev = [
        Evidence(1, "1", "Relaxation therapy for hypertension", section="title", score=0.9),
        Evidence(2, "1", "Relaxation lowered systolic pressure by 17 mm Hg.", section="abstract", score=0.8),
        Evidence(3, "2", "Diastolic pressure fell in the relaxation group.", section="abstract", score=0.7),
    ]
    answer = ExtractiveGenerator(max_sentences=3).generate(Topic("t", "q"), [], ev)
    assert [s.text for s in answer.sentences][:2] == [ev[1].text, ev[2].text]
    assert all(s.text != ev[0].text + "." for s in answer.sentences)
    only_title = ExtractiveGenerator().generate(Topic("t", "q"), [], ev[:1])
    assert only_title.sentences[0].pmids == ("1",)


def test_weak_evidence_below_the_relative_floor_is_left_out() -> None:
    ev = [Evidence(1, "1", "Relaxation lowered systolic pressure by 17 mm Hg.", score=0.4),
          Evidence(2, "2", "Renin activity was lower after pindolol.", score=0.1)]
    answer = ExtractiveGenerator(min_relative=0.45).generate(Topic("t", "q"), [], ev)
    assert [s.pmids for s in answer.sentences] == [("1",)]


def _answer(ev: list[Evidence], **kw: object) -> list[tuple[str, tuple[str, ...]]]:
    answer = ExtractiveGenerator(min_relative=0, **kw).generate(Topic("t", "Does X help?"), [], ev)  # type: ignore[arg-type]
    return [(s.text, s.pmids) for s in answer.sentences]


def test_structured_labels_are_stripped_and_titles_never_used_next_to_abstract_sentences() -> None:
    """Issue 16 item 2: 'BACKGROUND:'/'Conclusions:' and titles leaked into offline answers."""
    ev = [
        Evidence(1, "1", "Melatonin for jet lag", section="title", start=0, end=21, score=0.9),
        Evidence(2, "1", "CONCLUSIONS: Melatonin reduced jet lag after eastward flights.", section="abstract",
                 start=200, end=262, score=0.8),
        Evidence(3, "2", "Results: sleep onset improved by 20 minutes with melatonin.", section="abstract",
                 start=0, end=59, score=0.7),
    ]
    got = _answer(ev)
    assert got == [("Melatonin reduced jet lag after eastward flights.", ("1",)),
                   ("Sleep onset improved by 20 minutes with melatonin.", ("2",))]


def test_an_anaphoric_sentence_comes_right_after_its_antecedent_or_not_at_all() -> None:
    """Issue 16 item 2: 'This effect...' appeared without the sentence it refers to."""
    ev = [
        # highest score, but refers to the sentence before it in PMID 1 (ends at 40, this starts at 41)
        Evidence(1, "1", "This effect persisted for 12 months.", section="abstract", start=41, end=77, score=0.9),
        Evidence(2, "2", "These results suggest a benefit.", section="abstract", start=90, end=122, score=0.85),
        Evidence(3, "3", "Exercise lowered HbA1c in adults with type 2 diabetes.", section="abstract",
                 start=0, end=55, score=0.6),
        Evidence(4, "1", "Metformin reduced HbA1c by 1.1 percent.", section="abstract", start=0, end=40, score=0.5),
    ]
    got = _answer(ev)
    texts = [t for t, _ in got]
    # PMID 2's anaphor has no antecedent in the evidence: dropped
    assert "These results suggest a benefit." not in texts
    # PMID 1's anaphor follows its antecedent directly, each citing only PMID 1
    i = texts.index("Metformin reduced HbA1c by 1.1 percent.")
    assert texts[i + 1] == "This effect persisted for 12 months."
    assert got[i][1] == got[i + 1][1] == ("1",)
    assert len(got) == 3


def test_an_anaphor_pair_that_does_not_fit_is_left_out_whole() -> None:
    ev = [
        Evidence(1, "1", "Metformin reduced HbA1c by 1.1 percent.", section="abstract", start=0, end=40, score=0.9),
        Evidence(2, "1", "This effect persisted for 12 months.", section="abstract", start=41, end=77, score=0.8),
        Evidence(3, "2", "Exercise lowered HbA1c in adults.", section="abstract", start=0, end=33, score=0.95),
    ]
    assert [p for _, p in _answer(ev, max_sentences=2)] == [("2",)]


def test_reading_order_answer_first_then_support_then_caveats() -> None:
    """Issue 16 item 2: sentences came in retrieval order; a caveat led the answer."""
    ev = [
        Evidence(1, "1", "Further research is needed to confirm the effect of zinc on colds.", section="abstract",
                 start=0, end=66, score=0.95),
        Evidence(2, "2", "Zinc lozenges were given to 100 adults with colds.", section="abstract",
                 start=0, end=50, score=0.9),
        Evidence(3, "3", "We conclude that zinc lozenges shorten the common cold by two days.", section="abstract",
                 start=0, end=66, score=0.85),
        Evidence(4, "4", "Nausea was more frequent with zinc.", section="abstract", start=0, end=35, score=0.5),
    ]
    assert [p[0] for _, p in _answer(ev)] == ["3", "2", "4", "1"]


def test_key_words_and_registration_lines_are_no_answer_sentences() -> None:
    ev = [
        Evidence(1, "1", "Key words: depression, lithium prophylaxis, bipolar disorder.", section="abstract",
                 start=500, end=560, score=0.9),
        Evidence(2, "2", "Trial registration: NCT01234567 registered on clinicaltrials.gov.", section="abstract",
                 start=400, end=460, score=0.8),
        Evidence(3, "3", "Lithium halved relapse in bipolar disorder.", section="abstract", start=0, end=43,
                 score=0.7),
    ]
    assert _answer(ev) == [("Lithium halved relapse in bipolar disorder.", ("3",))]


def test_a_weak_abstract_sentence_beats_a_title_and_questions_are_no_answers() -> None:
    ev = [
        Evidence(1, "1", "Lithium and bipolar disorder", section="title", start=0, end=28, score=0.9),
        Evidence(2, "2", "What is the role of lithium in bipolar disorder?", section="abstract", start=0, end=48,
                 score=0.8),
        Evidence(3, "3", "Lithium levels were measured in 40 patients.", section="abstract", start=0, end=44,
                 score=0.2),
    ]
    answer = ExtractiveGenerator(min_relative=0.45).generate(Topic("t", "Does lithium help?"), [], ev)
    assert [(s.text, s.pmids) for s in answer.sentences] == [("Lithium levels were measured in 40 patients.", ("3",))]
