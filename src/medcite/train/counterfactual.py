"""Counterfactual (question, sentence) pairs for the sentence reader: a sentence that says yes to a question,
made to say no, and the other way round, by fixed rules.

For a pair whose sentence says yes (or no) to the question:

- **predicate swap in the sentence**: the sentence's first word that the question also uses and that has an
  opposite in :mod:`medcite.evidence.antonyms`, swapped ("... a *common* genetic disease" -> "... a *rare*
  genetic disease"): the answer flips;
- **predicate swap in the question**: the question's first such word swapped ("Is Keutel syndrome a *rare*
  disorder?" for "... a *common* disorder?"): the answer flips;
- **negation** (:func:`medcite.retrieve.negation.negate`): a finding without a negation cue gets one on its first
  auxiliary ("is" -> "is not"), a sentence with one loses it ("did not reduce" -> "did reduce"): the answer flips.
  Only a short text (at most ``NEGATE_WORDS`` words) that names at least half of the question's content words is
  negated, so the auxiliary negated is most likely the finding's own, not one of a clause about something
  else. Rewrites that only wrap the sentence ("It is not true that ...") are not used: no abstract reads that way.

A sentence that does not settle the question (maybe) makes no counterfactual. The rewrites are grammatical in
most cases and meant for training only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..evidence.antonyms import swap, table, words
from ..evidence.concepts import content_words, coverage
from ..evidence.sentences import SPLITTERS
from ..retrieve.negation import negate

FLIP = {0: 1, 1: 0}  # yes <-> no (the reader's yesno labels); maybe makes none
NEGATE_WORDS = 45


@dataclass(frozen=True)
class Counterfactual:
    question: str
    sentence: str
    label: int
    kind: str  # sentence-swap, question-swap, negation


def counterfactuals(question: str, sentence: str, label: int) -> list[Counterfactual]:
    """The counterfactual pairs of one (question, sentence, yes/no label) (see the module doc)."""
    if label not in FLIP:
        return []
    out: list[Counterfactual] = []
    flipped = FLIP[label]
    lexicon = table()
    shared = frozenset(w for w in words(question) if w in lexicon) & frozenset(words(sentence))
    if shared:
        s = swap(sentence, only=shared)
        if s and s != sentence:
            out.append(Counterfactual(question, s, flipped, "sentence-swap"))
    asked = frozenset(w for w in words(question) if w in lexicon)
    if asked:
        q = swap(question, only=asked)
        if q and q != question:
            out.append(Counterfactual(q, sentence, flipped, "question-swap"))
    if len(sentence.split()) > NEGATE_WORDS:
        return out
    # the one sentence of the text that names most of the question is negated, not a clause about something else
    asks = content_words(question)
    parts = [sentence[a:b] for a, b in SPLITTERS["syntok"](sentence)] or [sentence]
    best = max(range(len(parts)), key=lambda i: coverage(asks, parts[i]))
    if coverage(asks, parts[best]) < 0.5:
        return out
    n = negate(parts[best])
    if n and n != parts[best] and not n.startswith("It is not true that"):
        text = " ".join(parts[:best] + [n] + parts[best + 1:])
        out.append(Counterfactual(question, text, flipped, "negation"))
    return out
