"""The one place a yes/no is decided from the reader's probabilities, for every offline path: the offline
answer's verdict (:mod:`medcite.generate.extractive_qa`) and BioASQ Phase B's exact answer
(:mod:`medcite.qa.extractive`), and the reader's own measures (:mod:`medcite.train.reader_eval`).

- :func:`yes_probability`: a question's P(yes) from its passages' (P(yes), P(no), P(maybe)) as the reader reads
  each (question, passage) pair;
- :func:`decide`: the one yes/no decision from that P(yes). With one threshold (BioASQ's exact answer, the
  reader's measures) "no" only when P(yes) is under the reader's threshold (chosen on validation so that saying
  "no" is right more often than the prior "yes" would be); an unsure reader falls back to the prior "yes", so a
  decision is never worse than always-yes on data like the validation side's. With a second threshold (the
  offline answer, which may leave a question open) "yes" from the first, "no" up to the second -- or, when a
  sentence says no by a cue of its own, whenever the reader leans no -- and no decision in between.
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np

YesNo = Literal["yes", "no"]


def yes_probability(probs: np.ndarray) -> float:
    """A question's P(yes) from its passages' (P(yes), P(no), P(maybe)): the mean of P(yes) / (P(yes) + P(no))
    weighted by how much each passage settles the question (1 - P(maybe)); 0.5 without passages."""
    p = np.asarray(probs, dtype=np.float64).reshape(-1, 3)
    if not len(p):
        return 0.5
    weight = np.clip(1.0 - p[:, 2], 1e-6, None)
    return float((sentence_ratio(p) * weight).sum() / weight.sum())


#: P(yes) under which the reader leans no
LEANS_NO = 0.5


@overload
def decide(p_yes: float, yes_from: float, no_below: None = None, *, cue_no: bool = False) -> YesNo: ...


@overload
def decide(p_yes: float, yes_from: float, no_below: float, *, cue_no: bool = False) -> YesNo | None: ...


def decide(p_yes: float, yes_from: float, no_below: float | None = None, *, cue_no: bool = False) -> YesNo | None:
    """"yes" from ``yes_from`` on. Below it: "no" when ``no_below`` is None (every question is answered), else
    "no" up to ``no_below``, or under :data:`LEANS_NO` when a sentence says no by a cue of its own (``cue_no``: a
    negation, the opposite of what is asked); None (undecided) in between."""
    if p_yes >= yes_from:
        return "yes"
    if no_below is None or p_yes <= no_below or (cue_no and p_yes < LEANS_NO):
        return "no"
    return None


def sentence_ratio(probs: np.ndarray) -> np.ndarray:
    """Per passage, P(yes) / (P(yes) + P(no)): which way it leans, whatever it settles."""
    p = np.asarray(probs, dtype=np.float64).reshape(-1, 3)
    return p[:, 0] / np.clip(p[:, 0] + p[:, 1], 1e-9, None)
