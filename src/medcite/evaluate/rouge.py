"""ROUGE-2 and ROUGE-SU4 of BioASQ ideal answers, on rouge-score's tokens.

BioASQ scores ideal answers with ROUGE-2 and ROUGE-SU4 (recall and F1). medcite fixes one convention so numbers
compare across runs (docs/BIOASQ.md):

- **Tokens** are rouge-score's (Google's ``rouge-score`` package, ``tokenizers.DefaultTokenizer(use_stemmer=True)``):
  lowercase, every run of characters outside ``[a-z0-9]`` is a separator, and words longer than 3 characters go
  through NLTK's Porter stemmer. This is meant to mimic ROUGE-1.5.5 ``-m``.
- **ROUGE-2** is rouge-score's own ``rouge2`` (clipped bigram counts).
- **ROUGE-SU4**, which rouge-score lacks, is computed here (Lin, "ROUGE: A Package for Automatic Evaluation of
  Summaries", ACL workshop 2004, §5): the units of a text are its unigrams plus its skip-bigrams, every ordered
  pair of tokens ``(t_i, t_j)`` with ``i < j`` and at most 4 tokens between them (``j - i <= 5``). With
  clipped matches ``hit = sum_u min(count_ref(u), count_cand(u))``, recall is ``hit / units(ref)``, precision
  ``hit / units(cand)`` and F1 their harmonic mean. ROUGE-1.5.5's ``-2 4 -u`` differs in one detail: its loop
  skips the unigram of a text's last token; we count every unigram, as the paper defines ROUGE-SU.
- **Several references** (gold files give one or more ideal answers): each is scored and the one with the best
  F1 is kept (the first on ties), as rouge-score's ``score_multi`` does; recall is that reference's recall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from ..errors import MissingExtraError

SU_MAX_GAP = 4
"""ROUGE-SU4: at most 4 tokens between the two words of a skip-bigram (ROUGE-1.5.5 ``-2 4``)."""


@dataclass(frozen=True, slots=True)
class RougeScore:
    precision: float
    recall: float
    f1: float


ZERO = RougeScore(0.0, 0.0, 0.0)


class _Score(Protocol):
    precision: float
    recall: float
    fmeasure: float


class _Scorer(Protocol):
    """``rouge_score.rouge_scorer.RougeScorer``, as used here."""

    def score(self, target: str, prediction: str) -> dict[str, _Score]: ...


class _Tokenizer(Protocol):
    def tokenize(self, text: str) -> list[str]: ...


@lru_cache(maxsize=1)
def _backend() -> tuple[_Scorer, _Tokenizer]:
    """rouge-score's ROUGE-2 scorer and the tokenizer it uses (one Porter stemmer for both measures)."""
    try:
        from rouge_score import rouge_scorer, tokenizers
    except ImportError:
        raise MissingExtraError("rouge-score", "eval", "ROUGE scoring of BioASQ ideal answers") from None
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
    return rouge_scorer.RougeScorer(["rouge2"], tokenizer=tokenizer), tokenizer


def tokenize(text: str) -> list[str]:
    """rouge-score's tokens of ``text``: lowercased, split on non-alphanumerics, Porter-stemmed when > 3 chars."""
    return list(_backend()[1].tokenize(text))


def su_units(tokens: Sequence[str], max_gap: int = SU_MAX_GAP) -> Counter[tuple[str, ...]]:
    """The ROUGE-SU units of a token sequence: every unigram and every skip-bigram with at most ``max_gap``
    tokens between its two words."""
    units: Counter[tuple[str, ...]] = Counter((t,) for t in tokens)
    for i, first in enumerate(tokens):
        for j in range(i + 1, min(len(tokens), i + max_gap + 2)):
            units[(first, tokens[j])] += 1
    return units


def _score(reference: Counter[tuple[str, ...]], candidate: Counter[tuple[str, ...]]) -> RougeScore:
    hit = sum(min(n, candidate[u]) for u, n in reference.items())
    precision = hit / max(sum(candidate.values()), 1)
    recall = hit / max(sum(reference.values()), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return RougeScore(precision, recall, f1)


def rouge_su(reference: str, candidate: str, max_gap: int = SU_MAX_GAP) -> RougeScore:
    """ROUGE-SU (ROUGE-SU4 by default) of ``candidate`` against one ``reference`` (see the module docstring)."""
    return _score(su_units(tokenize(reference), max_gap), su_units(tokenize(candidate), max_gap))


def rouge_2(reference: str, candidate: str) -> RougeScore:
    """rouge-score's ROUGE-2 of ``candidate`` against one ``reference``."""
    s = _backend()[0].score(reference, candidate)["rouge2"]
    return RougeScore(s.precision, s.recall, s.fmeasure)


def best_of(references: Sequence[str], candidate: str, measure: str) -> RougeScore:
    """``measure`` (``"rouge2"`` or ``"rougesu4"``) against the reference with the best F1; zero for none."""
    score = {"rouge2": rouge_2, "rougesu4": rouge_su}[measure]
    best = ZERO
    for i, ref in enumerate(references):
        s = score(ref, candidate)
        if i == 0 or s.f1 > best.f1:
            best = s
    return best
