"""Citation checks judge quoted sentences only: a lead sentence (verdict, entities, abstention) is kept as it is,
and a verdict cites only PMIDs its kept support still cites (issue 24)."""

from __future__ import annotations

from medcite.attribute.validation import CitationCheck, apply_checks
from medcite.types import Answer, AnswerSentence, Stance, StanceVerdict

CONTRA = StanceVerdict(Stance.CONTRADICTS, (("supports", 0.05), ("contradicts", 0.9), ("neutral", 0.05)))
SUPPORT = StanceVerdict(Stance.SUPPORTS, (("supports", 0.9), ("contradicts", 0.05), ("neutral", 0.05)))


def test_a_verdict_survives_the_check_and_loses_the_pmid_its_support_lost() -> None:
    answer = Answer("t", [AnswerSentence("Yes.", ("1", "2"), (1, 2), kind="verdict"),
                          AnswerSentence("Drug A lowered B in adults.", ("1",), (1,)),
                          AnswerSentence("Drug A did not change C in adults.", ("2",), (2,))],
                    generator="extractive-qa", question_type="yesno", verdict="yes")
    # the checks judge "Yes." against abstract 1 as contradicting: a lead sentence is not judged
    checks = [CitationCheck(0, "1", CONTRA, False, "contradicts"), CitationCheck(1, "1", SUPPORT, True),
              CitationCheck(2, "2", CONTRA, False, "contradicts")]
    out = apply_checks(answer, checks)
    assert [s.text for s in out.sentences] == ["Yes.", "Drug A lowered B in adults."]
    assert out.sentences[0].kind == "verdict" and out.sentences[0].pmids == ("1",)
    assert out.verdict == "yes" and out.question_type == "yesno" and out.generator == "extractive-qa"


def test_an_abstention_without_citation_is_not_dropped() -> None:
    answer = Answer("t", [AnswerSentence("The corpus holds no article about zorbalene.", kind="abstain")],
                    abstained=True)
    out = apply_checks(answer, [])
    assert out.abstained and [s.kind for s in out.sentences] == ["abstain"]


def test_the_gate_and_the_stance_check_judge_no_lead_sentence() -> None:
    from medcite.attribute.validation import gate_checks, judge_citations
    from medcite.types import Article

    class Judge:
        seen: list[str] = []

        def classify_articles(self, pairs):
            self.seen.extend(claim for claim, _ in pairs)
            return [SUPPORT for _ in pairs]

    articles = {"1": Article("1", "T", "Drug A lowered B in adults of the trial.")}
    answer = Answer("t", [AnswerSentence("Yes.", ("1",), (1,), kind="verdict"),
                          AnswerSentence("Drug A cut B sharply.", ("1",), (1,))])
    judge = Judge()
    checks, _ = gate_checks(answer, articles, judge, min_support=0.0)
    checks += judge_citations(answer, articles, judge, min_support=0.5, keep_neutral=False)
    assert judge.seen == ["Drug A cut B sharply.", "Drug A cut B sharply."] and {c.sentence for c in checks} == {1}
