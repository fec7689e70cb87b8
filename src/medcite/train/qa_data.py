"""Training and evaluation data of the qa stage: BioASQ Task b questions with gold snippets, exact and ideal
answers; PubMedQA labelled questions; and the one split by question that the qa trainers and
``benchmarks/bench_bioasq_b.py`` share.

The split is :func:`medcite.train.data.split_questions` (the most recent batches held back, a seeded shuffle
inside a batch) with the seed of every other medcite trainer and a larger share (``QA_DEV_FRACTION`` = 0.3).
Because the order is the same, the 20 % held back by ``medcite train reranker|encoder`` — the questions the
retrieval benchmarks evaluate on (``benchmarks/retrieval_corpus.held_back()``) — is a prefix of the qa
held-back side: none of them is ever trained on. The larger share gives the yes/no measures ~115 questions
instead of ~75.

The reader accepts every shape BioASQ gold files use (docs FORMATS.md §5): ``exact_answer`` as a string, a
flat list or a list of synonym lists; ``ideal_answer`` as a string or a list.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import read_bioasq_questions
from ..types import QUESTION_TYPES, Question, Snippet
from .data import read_bioasq, split_questions

QA_DEV_FRACTION = 0.3
QA_SEED = 13
PUBMEDQA_DEV_FRACTION = 0.3
_PMID = re.compile(r"(\d+)/?\s*$")


def _exact(qtype: str, value: Any) -> str | tuple[tuple[str, ...], ...] | None:
    if value is None or qtype == "summary":
        return None
    if qtype == "yesno":
        v = value[0] if isinstance(value, list) and value else value
        v = str(v).strip().lower()
        return v if v in ("yes", "no") else None
    if isinstance(value, str):
        value = [value]
    entities: list[tuple[str, ...]] = []
    for item in value:
        raw = item if isinstance(item, list) else [item]
        names = tuple(str(n).strip() for n in raw if str(n).strip())
        if names:
            entities.append(names)
    return tuple(entities) or None


def _snippet(s: dict[str, Any]) -> Snippet:
    m = _PMID.search(str(s.get("document", "")))
    return Snippet(m.group(1) if m else str(s.get("document", "")), str(s.get("text", "")).strip(),
                   str(s.get("beginSection", "abstract")), int(s.get("offsetInBeginSection") or 0),
                   str(s.get("endSection", "abstract")), int(s.get("offsetInEndSection") or 0))


def question_from_json(q: dict[str, Any]) -> Question:
    """One BioASQ question object (gold or input file) as a :class:`Question`."""
    qtype = str(q.get("type", "")).strip().lower()
    if qtype not in QUESTION_TYPES:
        raise ValueError(f"type {q.get('type')!r} is not one of {', '.join(QUESTION_TYPES)}")
    ideal = q.get("ideal_answer") or ()
    ideal = (ideal,) if isinstance(ideal, str) else tuple(str(i) for i in ideal)
    docs = tuple(m.group(1) for d in q.get("documents") or () if (m := _PMID.search(str(d))))
    return Question(str(q["id"]), qtype, str(q["body"]).strip(), docs,
                    tuple(_snippet(s) for s in q.get("snippets") or () if str(s.get("text", "")).strip()),
                    tuple(i.strip() for i in ideal if i.strip()), _exact(qtype, q.get("exact_answer")))


def read_qa(path: str | Path) -> list[Question]:
    """Every question of a BioASQ Task b JSON file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    questions = read_bioasq_questions(path, hint="give a BioASQ Task b JSON file with --data")
    out = []
    for i, q in enumerate(questions):
        try:
            out.append(question_from_json(q))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"unreadable question ({exc})", path=str(path), position=f"questions[{i}]") from None
    return out


def held_out_ids(path: str | Path, dev_fraction: float = QA_DEV_FRACTION, seed: int = QA_SEED) -> frozenset[str]:
    """Ids of the held-back questions of a BioASQ file (the split of every medcite trainer, see the module doc).

    A question without gold documents is not in the split and so stays on the training side.
    """
    return frozenset(q.id for q in split_questions(read_bioasq(path), dev_fraction, seed).dev)


def split_qa(questions: Sequence[Question], held: Iterable[str]) -> tuple[list[Question], list[Question]]:
    """(train, held back) by question id: no question is on both sides."""
    held = frozenset(held)
    return [q for q in questions if q.id not in held], [q for q in questions if q.id in held]


@dataclass(frozen=True)
class PubMedQAItem:
    """A PubMedQA PQA-L item: question, abstract contexts (no conclusion), gold yes / no / maybe."""

    pmid: str
    question: str
    contexts: tuple[str, ...]
    label: str
    long_answer: str = ""
    sections: tuple[str, ...] = ()  # each context's section label (BACKGROUND, METHODS, RESULTS, ...)


def read_pubmedqa(path: str | Path) -> list[PubMedQAItem]:
    """Labelled items of an ``ori_pqal.json``-style file, sorted by PMID."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable PubMedQA JSON file ({exc})", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object keyed by PMID", path=str(path))
    out = [PubMedQAItem(str(k), str(v["QUESTION"]).strip(), tuple(str(c) for c in v.get("CONTEXTS") or ()),
                        str(v["final_decision"]).strip().lower(), str(v.get("LONG_ANSWER") or ""),
                        tuple(str(c).upper() for c in v.get("LABELS") or ()))
           for k, v in data.items() if isinstance(v, dict) and v.get("final_decision") in ("yes", "no", "maybe")]
    return sorted(out, key=lambda i: i.pmid)


def split_pubmedqa(items: Sequence[PubMedQAItem], dev_fraction: float = PUBMEDQA_DEV_FRACTION,
                   seed: int = QA_SEED) -> tuple[list[PubMedQAItem], list[PubMedQAItem]]:
    """(train, held back): a seeded share of the PMIDs (one question each) is held back."""
    order = sorted(items, key=lambda i: i.pmid)
    random.Random(seed).shuffle(order)
    n = max(1, round(dev_fraction * len(order))) if len(order) > 1 else 0
    held = {i.pmid for i in order[:n]}
    return [i for i in items if i.pmid not in held], [i for i in items if i.pmid in held]
