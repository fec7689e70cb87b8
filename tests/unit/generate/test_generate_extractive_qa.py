"""The answer-first generator (generate backend ``extractive-qa``): verdict or entities first, support after,
abstention when the evidence is about none of the question's key concepts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from medcite.generate.extractive_qa import ExtractiveQAGenerator
from medcite.tasks.biogen import biogen25_line
from medcite.types import Evidence, Question, Snippet, Topic

pytest.importorskip("wordfreq")


@dataclass
class FakeAnswerer:
    """A stand-in for the qa stage's offline answerer: a fixed P(yes) and fixed entity names."""

    p_yes: float = 0.8
    threshold: float = 0.5
    names: list[str] = field(default_factory=list)
    seen: list[Sequence[str]] = field(default_factory=list)

    def yes_probability(self, question: str, texts: Sequence[str]) -> tuple[float, float]:
        self.seen.append(list(texts))
        return self.p_yes, self.threshold

    def entities(self, question: Question, snippets: Sequence[Snippet]) -> list[str]:
        return list(self.names)


EV = [
    Evidence(1, "11", "Zorbalene infusion reversed quellitis in 70% of adults in a randomised trial.", score=0.9),
    Evidence(2, "22", "In a cohort of 300 adults, zorbalene shortened quellitis flares by four days.", score=0.85),
    Evidence(3, "33", "Zorbalene may also help children with quellitis, but further studies are needed.", score=0.8),
    Evidence(4, "44", "Zorbalene was well tolerated by adults with quellitis in two trials of infusions.", score=0.75),
    Evidence(5, "55", "Zorbalene lowered quellitis scores in adults treated for twelve weeks in hospital.", score=0.7),
]


def test_yes_no_question_opens_with_a_cited_verdict() -> None:
    gen = ExtractiveQAGenerator(FakeAnswerer(p_yes=0.8), keep_ratio=0)
    answer = gen.generate(Topic("t", "Does zorbalene infusion reverse quellitis in adults?"), [], EV)
    lead, *support = answer.sentences
    assert lead.text == "Yes." and lead.kind == "verdict"
    assert answer.verdict == "yes" and answer.question_type == "yesno" and not answer.abstained
    assert lead.pmids and set(lead.pmids) <= {p for s in support for p in s.pmids}  # cites its support
    assert 1 <= len(support) <= 4 and all(s.kind == "" for s in support)
    assert all(len(s.pmids) == 1 for s in support)  # each support sentence cites its own source
    assert {s.text for s in support} <= {e.text for e in EV}  # verbatim quotes
    assert "may also help" not in " ".join(s.text for s in support)  # 4 firm sentences fill the 4 places
    assert gen.answerer.seen  # the head read the evidence
    fewer = gen.generate(Topic("t", "Does zorbalene infusion reverse quellitis in adults?"), [], EV[:4])
    assert "may also help" in fewer.sentences[-1].text  # a hedged sentence comes last, after the firm ones
    assert "may also help" in EV[2].text and EV[2].score > EV[3].score


def test_no_and_mixed_verdicts() -> None:
    q = Topic("t", "Does zorbalene infusion reverse quellitis in adults?")
    assert ExtractiveQAGenerator(FakeAnswerer(p_yes=0.2)).generate(q, [], EV).sentences[0].text == "No."
    mixed = ExtractiveQAGenerator(FakeAnswerer(p_yes=0.51), mixed_margin=0.03).generate(q, [], EV)
    assert mixed.sentences[0].text == "The evidence is mixed." and mixed.verdict == "mixed"


def test_invented_entity_abstains_without_citation() -> None:
    gen = ExtractiveQAGenerator(FakeAnswerer())
    answer = gen.generate(Topic("t", "Does frobnaxil cure glimmeritis?"), [], EV)
    assert answer.abstained and len(answer.sentences) == 1
    (s,) = answer.sentences
    assert s.kind == "abstain" and s.pmids == ()
    assert s.text == "The corpus holds no article about frobnaxil or glimmeritis."
    empty = gen.generate(Topic("t", "Does zorbalene reverse quellitis?"), [], [])
    assert empty.abstained and empty.sentences[0].text == "The corpus holds no article about zorbalene or quellitis."
    # told that the corpus has one of them, the abstention names only the other
    known = ExtractiveQAGenerator(FakeAnswerer(), in_corpus=lambda w: w == "zorbalene")
    assert known.generate(Topic("t", "Does zorbalene reverse quellitis?"), [], []).sentences[0].text == \
        "The corpus holds no article about quellitis."


def test_factoid_names_only_entities_several_articles_name() -> None:
    ev = [Evidence(1, "11", "The drug zorbalene targets the kinase QLK1 in adults with quellitis.", score=0.9),
          Evidence(2, "22", "Inhibition of QLK1 by zorbalene reduced quellitis in mice and adults.", score=0.8),
          Evidence(3, "33", "Zorbalene also binds ZRP9 weakly in quellitis tissue of adults.", score=0.7)]
    gen = ExtractiveQAGenerator(FakeAnswerer(names=["ZRP9", "clinical", "QLK1"]), keep_ratio=0)
    answer = gen.generate(Topic("t", "Which kinase does zorbalene target in quellitis?"), [], ev)
    lead = answer.sentences[0]
    assert answer.question_type == "factoid" and lead.kind == "entities"
    assert "QLK1" in lead.text and "ZRP9" not in lead.text and "clinical" not in lead.text
    assert set(lead.pmids) == {"11", "22"}


def test_caps_hold_and_every_pmid_is_in_the_evidence() -> None:
    long = " ".join(["zorbalene reversed quellitis in adults"] * 14)  # 70 words
    ev = [Evidence(i, str(100 + i), f"Trial {i}: {long} number {i}.", score=1.0) for i in range(1, 9)]
    gen = ExtractiveQAGenerator(FakeAnswerer(), keep_ratio=0, max_words=250, max_citations=3)
    answer = gen.generate(Topic("t", "Does zorbalene reverse quellitis?"), [], ev)
    assert len(answer.text.split()) <= 250
    assert all(len(s.pmids) <= 3 for s in answer.sentences)
    assert set(answer.pmids) <= {e.pmid for e in ev}
    assert answer.sentences[0].kind == "verdict"


def test_biogen_task_b_lines_of_a_verdict_and_an_abstention_are_valid(tmp_path) -> None:
    import json

    from medcite.tasks.validate import validate_biogen25

    gen = ExtractiveQAGenerator(FakeAnswerer())
    answers = [gen.generate(Topic("1", "Does zorbalene infusion reverse quellitis in adults?"), [], EV),
               gen.generate(Topic("2", "Does frobnaxil cure glimmeritis?"), [], EV)]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(biogen25_line(a, "team", "run")) + "\n" for a in answers))
    report = validate_biogen25(path)
    assert report.ok, report.errors


def test_biogen_2024_answers_of_a_verdict_and_an_abstention_are_valid(tmp_path) -> None:
    from medcite.tasks.biogen import write_biogen24
    from medcite.tasks.validate import validate_biogen24

    gen = ExtractiveQAGenerator(FakeAnswerer())
    answers = [gen.generate(Topic("1", "Does zorbalene infusion reverse quellitis in adults?"), [], EV),
               gen.generate(Topic("2", "Does frobnaxil cure glimmeritis?"), [], EV)]
    path = tmp_path / "run24.json"
    write_biogen24(path, answers, team_id="team", run_name="run", contact_email="team@example.org")
    report = validate_biogen24(path)
    assert report.ok, report.errors
