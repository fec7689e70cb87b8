"""Counterfactual sentences for the sentence reader, and the antonym lexicon the verdicts share."""

from __future__ import annotations

from medcite.evidence.antonyms import opposes, swap
from medcite.train.counterfactual import counterfactuals


def test_a_predicate_swapped_in_the_question_flips_the_answer() -> None:
    made = counterfactuals("Is Keutel syndrome a common genetic disorder?",
                           "Keutel syndrome is a rare genetic disease.", 1)
    swapped = [c for c in made if c.kind == "question-swap"]
    assert swapped and swapped[0].question == "Is Keutel syndrome a rare genetic disorder?" and swapped[0].label == 0


def test_a_predicate_the_question_shares_is_swapped_in_the_sentence() -> None:
    made = counterfactuals("Are circRNAs resistant to RNase R?", "CircRNAs are resistant to RNase R digestion.", 0)
    swapped = [c for c in made if c.kind == "sentence-swap"]
    assert swapped and "resistant" not in swapped[0].sentence and swapped[0].label == 1


def test_negation_is_added_or_removed_only_in_the_sentence_that_names_the_question() -> None:
    made = counterfactuals("Does vitamin D prevent fractures?",
                           "Vitamin D supplementation did not prevent fractures in older women.", 1)
    neg = [c for c in made if c.kind == "negation"]
    assert neg and neg[0].sentence == "Vitamin D supplementation did prevent fractures in older women." and \
        neg[0].label == 0
    two = counterfactuals("Does vitamin D prevent fractures?",
                          "Trials were small. Vitamin D supplementation prevented fractures in older women. "
                          "Other work is needed.", 0)
    neg = [c for c in two if c.kind == "negation"]
    # the middle sentence names the question: it, not "Trials were small", is negated
    assert neg and neg[0].sentence.startswith("Trials were small.") and "not" not in neg[0].sentence.split(".")[0]
    # nothing is made from a sentence that does not settle the question, or one about something else
    assert counterfactuals("Does vitamin D prevent fractures?", "Vitamin D prevents fractures.", 2) == []
    assert not [c for c in counterfactuals("Does vitamin D prevent fractures?", "The trial was stopped early.", 0)
                if c.kind == "negation"]


def test_the_lexicon_finds_the_opposite_of_the_predicate() -> None:
    assert opposes("Is Keutel syndrome a common genetic disorder?", "Keutel syndrome, a rare genetic disease") == \
        "common"
    assert opposes("Are circRNAs susceptible to degradation by RNase R?",
                   "circRNAs were segregated by their RNase R resistance") == "susceptible"
    assert opposes("Are circRNAs susceptible to degradation by RNase R?", "circRNAs are resistant to RNase R") == \
        "susceptible"
    assert opposes("Is X common?", "X is common, and rare forms exist") is None  # it names the predicate too
    assert swap("Aspirin Increases bleeding.") == "Aspirin Decreases bleeding."
    assert swap("No opposite here.") is None
