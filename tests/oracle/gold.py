"""Held-out gold data the oracle answers from: BioASQ questions (ideal and exact answers, gold documents and
snippets) and HealthVer claim-evidence labels. Only the held-back side of medcite's own split is used, so
nothing the oracle says was ever trained on."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from medcite.train.qa_data import held_out_ids, read_qa
from medcite.types import Question

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
BIOASQ = SHARED / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
HEALTHVER = SHARED / "healthver" / "healthver_dev.csv"

_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
STOP = frozenset("""a an the of in on for to and or with by from at as is are was were be been being that this these
those it its their there which who whom what when where why how does do did can could may might should would will
not no than then also into about between among after before during over under such more most less other others
any all each both some than very via per vs""".split())


def key(text: str) -> str:
    """A question or claim as a lookup key: case, spacing and end punctuation ignored."""
    return " ".join(_WORD.findall(text.casefold()))


def words(text: str) -> set[str]:
    """Content words of ``text`` (lower case, stop words out)."""
    return {w for w in _WORD.findall(text.casefold()) if w not in STOP and len(w) > 1}


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s content words that ``b`` holds."""
    wa = words(a)
    return len(wa & words(b)) / len(wa) if wa else 0.0


@dataclass
class Gold:
    """Lookups from what a prompt shows to the gold answer behind it."""

    questions: dict[str, Question] = field(default_factory=dict)  # key(body) -> question
    by_id: dict[str, Question] = field(default_factory=dict)
    stance: dict[tuple[str, str], str] = field(default_factory=dict)  # (key(claim), key(evidence)) -> label
    written: dict[str, str] = field(default_factory=dict)  # key(sentence the oracle wrote) -> question id

    def add_questions(self, questions: Iterable[Question]) -> None:
        for q in questions:
            self.questions[key(q.body)] = q
            self.by_id[q.id] = q

    def question(self, text: str) -> Question | None:
        """The gold question asked in ``text`` (the question itself, or a run's topic text)."""
        found = self.questions.get(key(text))
        if found is not None:
            return found
        k = key(text)
        for body, q in self.questions.items():  # a topic line that holds the question ("Topic: ... Question")
            if body and body in k:
                return q
        return None

    def relevance(self, q: Question, text: str) -> float:
        """How much of ``text`` is gold evidence of ``q``: the best share of a gold snippet's words it holds."""
        best = 0.0
        for s in q.snippets:
            best = max(best, overlap(s.text, text))
        return best

    def is_gold(self, q: Question, text: str, threshold: float = 0.7) -> bool:
        return self.relevance(q, text) >= threshold


@lru_cache(maxsize=1)
def held_out_questions() -> tuple[Question, ...]:
    held = held_out_ids(BIOASQ)
    return tuple(q for q in read_qa(BIOASQ) if q.id in held)


def healthver_held_out() -> list[tuple[str, str, str]]:
    """HealthVer (claim, evidence, label) pairs of the claims medcite's stance trainer holds back (its own
    split by claim, its defaults): label one of SUPPORTS, CONTRADICTS, NEUTRAL."""
    from medcite.train.stance import StanceTrainOptions
    from medcite.train.stance_data import LABELS, read_stance_csv, split_by_claim

    opts = StanceTrainOptions()
    _, held = split_by_claim(read_stance_csv(HEALTHVER), opts.dev_fraction, opts.seed)
    names = {"supports": "SUPPORTS", "contradicts": "CONTRADICTS", "neutral": "NEUTRAL"}
    return [(p.claim, p.evidence, names[LABELS[p.label]]) for p in held]


def load(questions: Sequence[Question] | None = None,
         healthver: Sequence[tuple[str, str, str]] = ()) -> Gold:
    gold = Gold()
    gold.add_questions(held_out_questions() if questions is None else questions)
    for claim, evidence, label in healthver:
        gold.stance[(key(claim), key(evidence))] = label
    return gold
