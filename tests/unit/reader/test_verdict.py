"""The one yes/no rule every offline path uses (medcite.reader.verdict); that both paths call it is tested beside
each (tests/unit/generate/test_generate_extractive_qa.py, tests/unit/qa/test_extractive_qa.py)."""

from __future__ import annotations

import numpy as np

from medcite.reader.verdict import decide, sentence_ratio, yes_probability


def test_no_only_under_the_threshold_and_the_prior_otherwise() -> None:
    assert decide(0.2, 0.35) == "no" and decide(0.35, 0.35) == "yes" and decide(0.9, 0.35) == "yes"
    assert decide(0.0, 0.0) == "yes"  # threshold 0: always the prior


def test_passages_that_do_not_settle_count_less() -> None:
    probs = np.array([[0.05, 0.9, 0.05], [0.3, 0.1, 0.6], [0.3, 0.1, 0.6]])
    assert yes_probability(probs) < 0.5  # the one settling passage says no
    assert np.allclose(sentence_ratio(probs), [0.05 / 0.95, 0.75, 0.75])


def test_with_a_second_threshold_the_middle_stays_undecided_unless_a_cue_says_no() -> None:
    assert decide(0.7, 0.65, 0.3) == "yes" and decide(0.65, 0.65, 0.3) == "yes"
    assert decide(0.3, 0.65, 0.3) == "no" and decide(0.1, 0.65, 0.3) == "no"
    assert decide(0.45, 0.65, 0.3) is None  # between the two: no decision
    assert decide(0.45, 0.65, 0.3, cue_no=True) == "no"  # a negated sentence: the reader leaning no suffices
    assert decide(0.5, 0.65, 0.3, cue_no=True) is None  # ... leaning, not undecided
    assert decide(0.45, 0.65, cue_no=True) == "no" and decide(0.45, 0.4) == "yes"  # one threshold: always decided

