"""The answer-first generator (generate backend ``extractive-qa``): a verdict only when a cited sentence says it,
"not settled" otherwise; answers named as written in the sentences cited; support after; abstention when the
evidence is about none of the question's key concepts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from medcite.generate.extractive_qa import ExtractiveQAGenerator
from medcite.reader import verdict
from medcite.reader.spans import Answer as SpanAnswer
from medcite.reader.spans import SpanHit
from medcite.tasks.biogen_b_format import biogen25_line
from medcite.types import Answer, Evidence, Topic

pytest.importorskip("wordfreq")


@dataclass
class FakeAnswerer:
    """A stand-in for the qa stage's offline answerer: per sentence a fixed (P(yes), P(no), P(maybe)) (by a word
    it contains, else ``default``), and fixed span answers."""

    default: tuple[float, float, float] = (0.85, 0.1, 0.05)
    by_word: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    spans: list[tuple[str, float]] = field(default_factory=list)  # (answer text, probability), ranked
    seen: list[Sequence[str]] = field(default_factory=list)

    def yesno_probabilities(self, question: str, texts: Sequence[str]) -> np.ndarray:
        self.seen.append(list(texts))
        rows = [next((v for w, v in self.by_word.items() if w in t), self.default) for t in texts]
        return np.asarray(rows, dtype=np.float64).reshape(-1, 3)

    def span_answers(self, question: str, texts: Sequence[str]) -> list[SpanAnswer]:
        out = []
        for text, p in self.spans:
            hits = [SpanHit(i, t.find(text), t.find(text) + len(text), text, p) for i, t in enumerate(texts)
                    if text in t]
            if hits:
                out.append(SpanAnswer(text, text.lower(), p, [text], hits))
        return out


EV = [
    Evidence(1, "11", "Zorbalene infusion reversed quellitis in 70% of adults in a randomised trial.", score=0.9),
    Evidence(2, "22", "In a cohort of 300 adults, zorbalene shortened quellitis flares by four days.", score=0.85),
    Evidence(3, "33", "Zorbalene may also help children with quellitis, but further studies are needed.", score=0.8),
    Evidence(4, "44", "Zorbalene was well tolerated by adults with quellitis in two trials of infusions.", score=0.75),
    Evidence(5, "55", "Zorbalene lowered quellitis scores in adults treated for twelve weeks in hospital.", score=0.7),
]
Q = Topic("t", "Does zorbalene infusion reverse quellitis in adults?")


def test_a_verdict_is_stated_only_with_a_sentence_that_says_it_and_cites_that_sentence() -> None:
    fake = FakeAnswerer(by_word={"reversed": (0.95, 0.03, 0.02)}, default=(0.5, 0.4, 0.1))
    gen = ExtractiveQAGenerator(fake, keep_ratio=0, yes_from=0.5)
    answer = gen.generate(Q, [], EV)
    lead, *support = answer.sentences
    assert lead.text == "Yes." and lead.kind == "verdict" and answer.verdict == "yes"
    assert lead.pmids == ("11",) and lead.evidence == (1,)  # the one sentence that says yes decides it
    assert support[0].pmids == ("11",) and support[0].text == EV[0].text  # and opens the support
    assert answer.question_type == "yesno" and not answer.abstained
    assert 1 <= len(support) <= 4 and all(s.kind == "" for s in support)
    assert all(len(s.pmids) == 1 for s in support)  # each support sentence cites its own source
    assert {s.text for s in support} <= {e.text for e in EV}  # verbatim quotes
    assert fake.seen  # the reader read the evidence


def test_a_confident_question_without_an_agreeing_sentence_is_undecided_not_unsettled() -> None:
    # P(yes) of the question is high, but no sentence read alone says yes clearly: no verdict; the findings read as
    # saying yes or no (P(maybe) 0.08), so the lead must not say the abstracts leave the question open
    gen = ExtractiveQAGenerator(FakeAnswerer(default=(0.62, 0.3, 0.08)), keep_ratio=0, yes_from=0.6,
                                sentence_agree=0.7)
    answer = gen.generate(Q, [], EV)
    lead, *support = answer.sentences
    assert answer.verdict == "undecided" and "not sure enough to say yes or no" in lead.text
    assert lead.pmids == () and support  # no citation for the lead; the most relevant findings follow
    assert "may also help" in support[-1].text or len(support) == 4  # hedged findings last
    # sentences the reader reads as not saying either (P(maybe) 0.6): then, and only then, "do not settle"
    open_ = ExtractiveQAGenerator(FakeAnswerer(default=(0.25, 0.15, 0.6)), keep_ratio=0, yes_from=0.6,
                                  sentence_agree=0.7).generate(Q, [], EV)
    assert open_.verdict == "unsettled" and open_.sentences[0].text == "The retrieved abstracts do not settle this."
    assert open_.sentences[0].pmids == () and len(open_.sentences) > 1


def test_a_deciding_sentence_must_name_what_the_question_asks() -> None:
    # "Is hemoglobin antimicrobial?": a sentence on hemoglobin that never says antimicrobial decides nothing
    q = Topic("t", "Is hemoglobin antimicrobial?")
    ev = [Evidence(1, "11", "Hemoglobin of rhesus monkeys migrates like human hemoglobin A on cellulose acetate.",
                   score=0.9),
          Evidence(2, "22", "Hemoglobin-derived peptides showed antimicrobial activity against Escherichia coli.",
                   score=0.8)]
    gen = ExtractiveQAGenerator(FakeAnswerer(default=(0.9, 0.05, 0.05)), keep_ratio=0, yes_from=0.6,
                                predicate_cover=0.75)
    answer = gen.generate(q, [], ev)
    assert answer.verdict == "yes" and answer.sentences[0].pmids == ("22",)
    assert gen.generate(q, [], ev[:1]).verdict == "unsettled"


def test_a_verdict_whose_deciding_sentences_do_not_fit_is_not_stated() -> None:
    # "mixed" rests on two sentences; when the word cap leaves room for only the first, it is not stated
    long = "Zorbalene infusion reversed quellitis in adults " + " ".join(["in the trial"] * 15) + "."
    ev = [Evidence(1, "11", long, score=0.9),
          Evidence(2, "22", "Zorbalene infusion did not reverse quellitis in adults in a second trial.", score=0.8)]
    fake = FakeAnswerer(by_word={"did not": (0.05, 0.9, 0.05), "reversed": (0.95, 0.03, 0.02)})
    roomy = ExtractiveQAGenerator(fake, keep_ratio=0, yes_from=0.9, no_below=0.1).generate(Q, [], ev)
    assert roomy.verdict == "mixed" and set(roomy.sentences[0].pmids) == {"11", "22"}
    tight = ExtractiveQAGenerator(fake, keep_ratio=0, yes_from=0.9, no_below=0.1, max_words=60).generate(Q, [], ev)
    # no verdict without its quotes; the quoted sentence reads as settling it, so the lead does not say "do not
    # settle" either
    assert tight.verdict == "undecided" and tight.sentences[0].pmids == ()
    assert all("did not" not in s.text for s in tight.sentences)


def test_a_yes_sentence_must_state_a_finding_without_negation() -> None:
    aim = [Evidence(1, "11", "We investigated whether zorbalene infusion reverses quellitis in adults.", score=0.9),
           Evidence(2, "22", "Zorbalene infusion did not reverse quellitis in adults in a trial.", score=0.8)]
    gen = ExtractiveQAGenerator(FakeAnswerer(default=(0.9, 0.05, 0.05)), keep_ratio=0, yes_from=0.5)
    answer = gen.generate(Q, [], aim)
    # an aim and a negated sentence: neither says yes; the negated one, read as yes, is a finding the lead must not
    # call unsettling
    assert answer.verdict == "undecided" and answer.sentences[0].pmids == ()
    assert gen.generate(Q, [], aim[:1]).verdict == "unsettled"  # an aim alone settles nothing


def test_what_earlier_work_suggested_or_a_study_did_decides_no_verdict() -> None:
    # real abstracts open with background and methods: "Recent studies have implicated ...", "... was assessed by
    # ...": read as yes by the reader, they are no finding of the study
    q = Topic("t", "Is human cytomegalovirus infection associated with hypertension?")
    ev = [Evidence(1, "11", "Recent studies have implicated human cytomegalovirus infection as a cause of "
                            "hypertension in adults.", score=0.9),
          Evidence(2, "22", "Hypertension and cytomegalovirus infection were assessed by questionnaire in 300 "
                            "adults.", score=0.8)]
    gen = ExtractiveQAGenerator(FakeAnswerer(default=(0.9, 0.05, 0.05)), keep_ratio=0, yes_from=0.5)
    assert gen.generate(q, [], ev).verdict == "unsettled"
    finding = Evidence(3, "33", "Cytomegalovirus infection was associated with hypertension in 300 adults.", score=0.7)
    assert gen.generate(q, [], [*ev, finding]).verdict == "yes"


def test_no_needs_a_negated_finding_and_mixed_needs_both_sides() -> None:
    neg = [Evidence(1, "11", "Zorbalene infusion did not reverse quellitis in adults in a trial.", score=0.9),
           Evidence(2, "22", "Zorbalene infusion reversed quellitis in 70% of adults in a cohort.", score=0.8)]
    no = ExtractiveQAGenerator(FakeAnswerer(by_word={"did not": (0.05, 0.9, 0.05)}, default=(0.3, 0.6, 0.1)),
                               keep_ratio=0, no_below=0.4).generate(Q, [], neg)
    assert no.verdict == "no" and no.sentences[0].text == "No." and no.sentences[0].pmids == ("11",)
    # a sentence without a negation cue or an opposite, read as "no", cannot decide "No." (nor be called unsettling)
    plain = ExtractiveQAGenerator(FakeAnswerer(default=(0.05, 0.9, 0.05)), keep_ratio=0, no_below=0.4)
    assert plain.generate(Q, [], neg[1:]).verdict == "undecided"
    both = FakeAnswerer(by_word={"did not": (0.05, 0.9, 0.05), "reversed": (0.95, 0.03, 0.02)})
    mixed = ExtractiveQAGenerator(both, keep_ratio=0, yes_from=0.9, no_below=0.1).generate(Q, [], neg)
    assert mixed.verdict == "mixed" and mixed.sentences[0].text == "The evidence is mixed."
    assert set(mixed.sentences[0].pmids) == {"11", "22"}  # one sentence of each side, both cited


def test_an_opposite_of_the_predicate_blocks_yes_and_turns_it_into_no() -> None:
    q = Topic("t", "Is Keutel syndrome a common genetic disorder?")
    ev = [Evidence(1, "11", "Keutel syndrome is a rare genetic disease with abnormal cartilage calcification.",
                   score=0.9)]
    # the reader reads "yes" (on topic, affirmative): the opposite of "common" blocks it
    blocked = ExtractiveQAGenerator(FakeAnswerer(default=(0.9, 0.05, 0.05)), keep_ratio=0, yes_from=0.5)
    answer = blocked.generate(q, [], ev)
    assert answer.verdict == "undecided" and answer.sentences[0].pmids == ()
    # the reader leans no: with cue_no the sentence that names the opposite decides "No." and opens the support
    leaning = ExtractiveQAGenerator(FakeAnswerer(default=(0.3, 0.5, 0.2)), keep_ratio=0, cue_no=True)
    answer = leaning.generate(q, [], ev)
    assert answer.verdict == "no" and answer.sentences[0].pmids == ("11",) and answer.sentences[1].pmids == ("11",)
    # by default (cue_no off: chosen on real abstracts) a lean is not enough: the quote settles it, "not sure enough"
    assert ExtractiveQAGenerator(FakeAnswerer(default=(0.3, 0.5, 0.2)), keep_ratio=0).generate(
        q, [], ev).verdict == "undecided"
    # "resistance" is the opposite of "susceptible" too
    q2 = Topic("t", "Are circRNAs susceptible to degradation by RNase R?")
    ev2 = [Evidence(1, "11", "Circular RNAs were segregated from linear RNAs by their RNase R resistance.",
                    score=0.9)]
    assert blocked.generate(q2, [], ev2).verdict != "yes"


def test_a_no_from_a_cue_alone_can_be_refused() -> None:
    # the reader reads no and the sentence says no by a negation, but no_below (below 0) never lets P(yes) alone
    # decide: "No." comes from the cue
    neg = [Evidence(1, "11", "Zorbalene infusion did not reverse quellitis in adults in a trial.", score=0.9)]
    fake = FakeAnswerer(default=(0.1, 0.85, 0.05))
    cued = ExtractiveQAGenerator(fake, keep_ratio=0, no_below=-0.01, cue_no=True)
    assert cued.generate(Q, [], neg).verdict == "no"
    refused = ExtractiveQAGenerator(fake, keep_ratio=0, no_below=-0.01, cue_no=False)
    answer = refused.generate(Q, [], neg)
    # no "No." without P(yes) under no_below; the quote still settles it, so the lead is the undecided one
    assert answer.verdict == "undecided" and answer.sentences[0].pmids == ()


def test_a_strict_predicate_cover_never_calls_a_settling_quote_unsettled() -> None:
    # "Does relaxation therapy lower blood pressure in essential hypertension?": the quote names half of what is
    # asked, under a strict predicate_cover it decides no verdict, but it bears on the question and the reader
    # reads it as settling it: the lead is "not sure enough", never "do not settle"
    q = Topic("t", "Does relaxation therapy lower blood pressure in essential hypertension?")
    ev = [Evidence(1, "11", "Relaxation therapy resulted in greater reduction of blood pressure than placebo.",
                   score=0.9)]
    strict = ExtractiveQAGenerator(FakeAnswerer(default=(0.6, 0.3, 0.1)), keep_ratio=0, yes_from=0.5,
                                   predicate_cover=0.75)
    answer = strict.generate(q, [], ev)
    assert answer.verdict == "undecided" and answer.sentences[1].pmids == ("11",)
    loose = ExtractiveQAGenerator(FakeAnswerer(default=(0.9, 0.05, 0.05)), keep_ratio=0, yes_from=0.5,
                                  predicate_cover=0.5)
    assert loose.generate(q, [], ev).verdict == "yes"


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


def test_a_lead_names_sure_spans_as_written_in_a_cited_sentence_and_never_the_question_subject() -> None:
    ev = [Evidence(1, "11", "The drug zorbalene targets the kinase QLK1 in adults with quellitis.", score=0.9),
          Evidence(2, "22", "Inhibition of QLK1 by zorbalene reduced quellitis in mice and adults.", score=0.8),
          Evidence(3, "33", "Zorbalene also binds ZRP9 weakly in quellitis tissue of adults.", score=0.7)]
    fake = FakeAnswerer(spans=[("zorbalene", 0.99), ("QLK1", 0.9), ("ZRP9", 0.4)])
    gen = ExtractiveQAGenerator(fake, keep_ratio=0, span_min=0.5, span_pmids=1)
    answer = gen.generate(Topic("t", "Which kinase does zorbalene target in quellitis?"), [], ev)
    lead = answer.sentences[0]
    assert answer.question_type == "factoid" and lead.kind == "entities"
    assert lead.text == "The abstracts name QLK1."  # not the question's own drug, not the unsure ZRP9
    assert lead.pmids == ("11",)
    cited = next(s for s in answer.sentences[1:] if lead.evidence[0] in s.evidence)
    assert "QLK1" in cited.text  # the named answer is written in the sentence the lead cites
    listed = ExtractiveQAGenerator(fake, keep_ratio=0, span_min=0.3, span_pmids=1).generate(
        Topic("t", "List the kinases that zorbalene binds in quellitis."), [], ev)
    assert listed.sentences[0].text == "The abstracts name QLK1 and ZRP9."
    unsure = ExtractiveQAGenerator(fake, keep_ratio=0, span_min=0.95, span_pmids=1).generate(
        Topic("t", "Which kinase does zorbalene target in quellitis?"), [], ev)
    assert all(s.kind != "entities" for s in unsure.sentences)  # nothing that sure: no lead


def test_caps_hold_and_every_pmid_is_in_the_evidence() -> None:
    long = " ".join(["zorbalene reversed quellitis in adults"] * 14)  # 70 words
    ev = [Evidence(i, str(100 + i), f"Trial {i}: {long} number {i}.", score=1.0) for i in range(1, 9)]
    gen = ExtractiveQAGenerator(FakeAnswerer(), keep_ratio=0, max_words=250, max_citations=3)
    answer = gen.generate(Topic("t", "Does zorbalene reverse quellitis?"), [], ev)
    assert len(answer.text.split()) <= 250
    assert all(len(s.pmids) <= 3 for s in answer.sentences)
    assert set(answer.pmids) <= {e.pmid for e in ev}
    assert answer.sentences[0].kind == "verdict"


def _verdict_abstention_unsettled() -> list[Answer]:
    """Three answers of the extractive QA generator: a verdict (yes), an abstention and an unsettled one."""
    gen = ExtractiveQAGenerator(FakeAnswerer(), yes_from=0.75)
    unsure = ExtractiveQAGenerator(FakeAnswerer(default=(0.25, 0.2, 0.55)), yes_from=0.75)
    answers = [gen.generate(Topic("1", "Does zorbalene infusion reverse quellitis in adults?"), [], EV),
               gen.generate(Topic("2", "Does frobnaxil cure glimmeritis?"), [], EV),
               unsure.generate(Topic("3", "Does zorbalene infusion reverse quellitis in adults?"), [], EV)]
    assert [a.verdict for a in answers] == ["yes", None, "unsettled"]
    return answers


def test_biogen_task_b_lines_of_a_verdict_an_abstention_and_an_unsettled_answer_are_valid(tmp_path) -> None:
    import json

    from medcite.tasks.biogen_b_validate import validate_biogen25

    answers = _verdict_abstention_unsettled()
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(biogen25_line(a, "team", "run")) + "\n" for a in answers))
    report = validate_biogen25(path)
    assert report.ok, report.errors


def test_biogen_2024_answers_of_a_verdict_an_abstention_and_an_unsettled_answer_are_valid(tmp_path) -> None:
    from medcite.tasks.biogen_b_format import write_biogen24
    from medcite.tasks.biogen_b_validate import validate_biogen24

    answers = _verdict_abstention_unsettled()
    path = tmp_path / "run24.json"
    write_biogen24(path, answers, team_id="team", run_name="run", contact_email="team@example.org")
    report = validate_biogen24(path)
    assert report.ok, report.errors


def test_the_verdict_is_decided_by_the_one_yes_no_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """medcite.reader.verdict.decide with the generator's two thresholds (BioASQ's exact answer calls the same
    function with the reader's one: tests/unit/qa/test_extractive_qa.py); turned around, it turns the verdict."""
    calls: list[tuple[float, float, float | None, bool]] = []
    decide = verdict.decide

    def spy(p_yes: float, yes_from: float, no_below: float | None = None, *, cue_no: bool = False) -> str | None:
        calls.append((p_yes, yes_from, no_below, cue_no))
        return decide(p_yes, yes_from, no_below, cue_no=cue_no)

    monkeypatch.setattr(verdict, "decide", spy)
    fake = FakeAnswerer(by_word={"reversed": (0.95, 0.03, 0.02)}, default=(0.5, 0.4, 0.1))
    gen = ExtractiveQAGenerator(fake, keep_ratio=0, yes_from=0.5, no_below=0.25)
    assert gen.generate(Q, [], EV).verdict == "yes"
    assert [c[1:] for c in calls] == [(0.5, 0.25, False)]
    monkeypatch.setattr(verdict, "decide", lambda *a, **k: None)
    assert gen.generate(Q, [], EV).verdict == "undecided"  # a sentence settles it, the function decided nothing
