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


def test_titles_only_used_when_abstracts_give_too_little() -> None:
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
