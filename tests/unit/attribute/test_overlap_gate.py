"""The overlap stance backend and the support gate of generated citations (issue 16, item 1)."""

from __future__ import annotations

import pytest

from medcite.attribute.overlap import OverlapStance, content_words
from medcite.attribute.validation import apply_checks, gate_checks, quotes
from medcite.types import Answer, AnswerSentence, Article, Stance

STATINS = Article("1", "Statins in adults",
                  "We enrolled 200 adults. Statins lowered LDL cholesterol by 30% after one year. "
                  "Muscle pain was rare.")
ZEBRA = Article("2", "Zebrafish fins", "Zebrafish fins regenerate within days after amputation.")


def test_content_words_drop_function_words_and_stem_by_prefix() -> None:
    assert content_words("The statins were lowering the LDL levels in 30% of adults") == {
        "stati", "lower", "ldl", "level", "30", "adult"}


@pytest.mark.parametrize(("claim", "article", "label"), [
    ("Statins lowered LDL cholesterol by 30%.", STATINS, Stance.SUPPORTS),           # one sentence
    ("Statin therapy lowers LDL cholesterol in adults.", STATINS, Stance.SUPPORTS),  # 5 of 6 words, 2 windows
    ("Statins did not lower LDL cholesterol.", STATINS, Stance.NEUTRAL),             # negation differs
    ("Statins cure Alzheimer's disease in children.", STATINS, Stance.NEUTRAL),      # invented
    ("Statins lowered LDL cholesterol by 30%.", ZEBRA, Stance.NEUTRAL),              # real PMID, other topic
])
def test_verdicts(claim: str, article: Article, label: Stance) -> None:
    (v,) = OverlapStance(threshold=0.6).classify_articles([(claim, article)])
    assert v.label is label
    assert v.score(Stance.CONTRADICTS) == 0.0  # a word count never claims a contradiction
    if label is Stance.SUPPORTS:
        assert v.section in ("title", "abstract") and v.end > v.start


def test_coverage_by_hand() -> None:
    judge = OverlapStance(threshold=0.6)
    # content words of the claim: statins, cure, alzheimer's, disease, children -> only "stati" found: 1/5
    (v,) = judge.classify_articles([("Statins cure Alzheimer's disease in children.", STATINS)])
    assert v.score(Stance.SUPPORTS) == pytest.approx(0.2)
    assert "at most 20% of the sentence's content words" in judge.reason(v)


def test_gate_keeps_quotes_and_supported_paraphrase_and_drops_invented() -> None:
    answer = Answer("t", [
        AnswerSentence("Statins lowered LDL cholesterol by 30% after one year.", ("1",), (1,)),  # a quote
        AnswerSentence("Statins lowered LDL cholesterol by about 30% in adults.", ("1", "2"), (1, 2)),
        AnswerSentence("Statins also cure Alzheimer's disease.", ("1",), (1,)),                 # invented
    ], [], "llm:model")
    articles = {"1": STATINS, "2": ZEBRA}
    checks, quoted = gate_checks(answer, articles, OverlapStance(0.6), min_support=0.0)
    assert quoted == 1
    assert [(c.sentence, c.pmid, c.kept) for c in checks] == [(1, "1", True), (1, "2", False), (2, "1", False)]
    gated = apply_checks(answer, checks, record_stance=False, check_name="the overlap gate")
    assert [(s.text[:20], s.pmids) for s in gated.sentences] == [
        ("Statins lowered LDL ", ("1",)), ("Statins lowered LDL ", ("1",))]
    assert all(s.stances == () for s in gated.sentences)  # a lexical gate is not a stance judgement
    reasons = [(d.what, d.reason) for d in gated.dropped]
    assert ("sentence", "no citation survived the overlap gate") in reasons
    assert sum(w == "citation" for w, _ in reasons) == 2


def test_quotes_ignores_case_and_spacing_but_not_words() -> None:
    assert quotes("statins  lowered LDL cholesterol by 30%", STATINS)
    assert quotes("Statins in adults", STATINS)  # the title
    assert not quotes("Statins lowered LDL cholesterol by 40%", STATINS)
    assert quotes("We enrolled 200 adults. Statins lowered LDL…", STATINS)  # cut at the word cap


class _AlwaysContradicts:
    name = "always-contradicts"

    def classify_articles(self, pairs: list[tuple[str, Article]]) -> list[object]:
        from medcite.types import StanceVerdict

        return [StanceVerdict(Stance.CONTRADICTS, (("supports", 0.05), ("contradicts", 0.9), ("neutral", 0.05)))
                for _ in pairs]


def test_the_stance_check_never_drops_a_verbatim_quote_of_its_source() -> None:
    from medcite.attribute.validation import judge_citations

    answer = Answer("t", [
        AnswerSentence("Statins lowered LDL cholesterol by 30% after one year.", ("1",), (1,)),  # a quote
        AnswerSentence("Statins lowered LDL cholesterol by half.", ("1",), (1,)),               # written
    ], [], "extractive")
    checks = judge_citations(answer, {"1": STATINS}, _AlwaysContradicts())  # type: ignore[arg-type]
    assert [c.kept for c in checks] == [True, False]
    assert checks[0].verdict.label is Stance.CONTRADICTS and "verbatim quote" in checks[0].reason
