"""Predicates and their opposites: "rare" against "common", "resistant" against "susceptible", "increases"
against "decreases".

Two uses share this one lexicon:

- **training** (:mod:`medcite.train.counterfactual`): a sentence that says yes to a question, with its predicate
  swapped for the opposite, says no (and the same with the question's predicate swapped), so the reader learns
  to read "a rare genetic disease" as "no" to "Is Keutel syndrome a common genetic disorder?";
- **verdicts** (:func:`opposes`): a sentence that names the opposite of the question's predicate and not the
  predicate itself cannot decide "Yes.".

Each pair lists word forms that are opposites in every sense medicine uses them in; words whose opposite
depends on the sense ("acute", "positive" of a test) stay out or are listed with their one clear opposite.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: (word, opposite) pairs; each is read in both directions
PAIRS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"), ("increasing", "decreasing"),
    ("reduce", "increase"), ("reduces", "increases"), ("reduced", "increased"), ("reduction", "increase"),
    ("higher", "lower"), ("high", "low"), ("more", "less"), ("greater", "smaller"), ("larger", "smaller"),
    ("elevated", "reduced"), ("raise", "lower"), ("raises", "lowers"), ("raised", "lowered"),
    ("upregulated", "downregulated"), ("up-regulated", "down-regulated"), ("upregulates", "downregulates"),
    ("upregulation", "downregulation"), ("up-regulation", "down-regulation"),
    ("overexpressed", "underexpressed"), ("overexpression", "underexpression"),
    ("activates", "inhibits"), ("activate", "inhibit"), ("activated", "inhibited"), ("activation", "inhibition"),
    ("activator", "inhibitor"), ("promotes", "suppresses"), ("promote", "suppress"), ("promoted", "suppressed"),
    ("stimulates", "inhibits"), ("stimulate", "inhibit"), ("enhances", "impairs"), ("enhance", "impair"),
    ("enhanced", "impaired"), ("improves", "worsens"), ("improve", "worsen"), ("improved", "worsened"),
    ("improvement", "deterioration"), ("effective", "ineffective"), ("efficacious", "ineffective"),
    ("safe", "unsafe"), ("beneficial", "harmful"), ("protective", "harmful"),
    ("common", "rare"), ("frequent", "rare"), ("frequently", "rarely"), ("commonly", "rarely"),
    ("resistant", "susceptible"), ("resistance", "susceptibility"), ("sensitive", "resistant"),
    ("susceptible", "resistance"), ("resistant", "susceptibility"), ("rare", "commonly"), ("common", "rarely"),
    ("benign", "malignant"), ("present", "absent"), ("presence", "absence"),
    ("dominant", "recessive"), ("agonist", "antagonist"), ("essential", "dispensable"),
    ("required", "dispensable"), ("sufficient", "insufficient"), ("accurate", "inaccurate"),
    ("associated", "unassociated"), ("correlated", "uncorrelated"), ("stable", "unstable"),
    ("soluble", "insoluble"), ("reversible", "irreversible"), ("toxic", "nontoxic"), ("coding", "non-coding"),
    ("methylated", "unmethylated"), ("hypermethylated", "hypomethylated"), ("hypermethylation", "hypomethylation"),
    ("homozygous", "heterozygous"), ("congenital", "acquired"), ("hereditary", "sporadic"),
    ("inherited", "sporadic"), ("faster", "slower"), ("fast", "slow"), ("longer", "shorter"), ("early", "late"),
    ("gain-of-function", "loss-of-function"), ("likely", "unlikely"), ("possible", "impossible"),
    ("better", "worse"), ("positively", "negatively"), ("intracellular", "extracellular"),
    ("superior", "inferior"), ("excess", "deficiency"), ("overactive", "underactive"),
)


@lru_cache(maxsize=1)
def table() -> dict[str, frozenset[str]]:
    """word -> its opposites (lower case)."""
    out: dict[str, set[str]] = {}
    for a, b in PAIRS:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in out.items()}


_TOKEN = re.compile(r"[A-Za-z][A-Za-z-]*")


def words(text: str) -> list[str]:
    """The lower-case word tokens of ``text`` (hyphenated words kept whole)."""
    return [m.group(0).lower().strip("-") for m in _TOKEN.finditer(text)]


def opposites_in(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, word, its first opposite) of each lexicon word in ``text``, in order."""
    t = table()
    out = []
    for m in _TOKEN.finditer(text):
        w = m.group(0).lower().strip("-")
        if w in t:
            out.append((m.start(), m.start() + len(w), m.group(0)[: len(w)], sorted(t[w])[0]))
    return out


def swap(text: str, only: frozenset[str] | None = None) -> str | None:
    """``text`` with its first lexicon word (among ``only``, when given) replaced by its opposite, keeping the
    capital; None when it has none."""
    for start, end, word, opposite in opposites_in(text):
        if only is not None and word.lower() not in only:
            continue
        if word[:1].isupper():
            opposite = opposite[:1].upper() + opposite[1:]
        return text[:start] + opposite + text[end:]
    return None


def opposes(question: str, sentence: str) -> str | None:
    """The question's predicate word whose opposite ``sentence`` names while it never names the word itself
    (e.g. "common" for "Is Keutel syndrome a common genetic disorder?" against "Keutel syndrome, a rare genetic
    disease"); None when there is none."""
    t = table()
    q = set(words(question))
    s = set(words(sentence))
    for w in q:
        if w in t and w not in s and t[w] & s:
            return w
    return None
