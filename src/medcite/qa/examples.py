"""Few-shot examples for the LLM qa backend: BioASQ training questions, drawn at random or picked by similarity.

DS@GT (BioASQ 13b) and PJs-team show the model 1 or 10 solved questions (snippets, question, gold answer)
before the question asked. :func:`read_examples` reads them from a BioASQ training or golden file (every
answer shape the files use: flat or synonym-list exact answers, ideal answers as a string or a list). Two ways
to choose the ``n`` examples of a question, both among the usable training questions of its type and never the
question itself (same id or same text):

- :class:`RandomDraw` (``qa.draw=random``): DS@GT's "The examples were drawn from the training set as
  snippets-question-answer triplets" (004 §3.3), which says no more; medcite draws them at random, seeded by
  ``qa.draw_seed`` and the question id (the same question always gets the same examples, whatever else is asked);
- :class:`ExamplePicker` (``qa.draw=similar``, medcite's own choice): the questions whose bodies are closest to
  the question by encoder cosine (the packaged MiniLM by default).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import InputError
from ..io import read_bioasq_questions
from ..set_option import set_line
from ..types import QUESTION_TYPES, Question, Snippet

log = logging.getLogger(__name__)

class QueryEncoder(Protocol):
    """What the example picker needs from an encoder (a part of the dense index's Encoder protocol)."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...


_PMID = re.compile(r"(\d+)\s*/?\s*$")


def _exact(value: Any, qtype: str) -> str | tuple[tuple[str, ...], ...] | None:
    if value is None or qtype == "summary":
        return None
    if qtype == "yesno":
        text = value[0] if isinstance(value, list) and value else value
        return str(text).strip().casefold() or None
    items = value if isinstance(value, list) else [value]
    out: list[tuple[str, ...]] = []
    for item in items:
        raw = item if isinstance(item, list) else [item]
        names = tuple(str(n).strip() for n in raw if str(n).strip())
        if names:
            out.append(names)
    return tuple(out) or None


def _snippets(raw: Any) -> tuple[Snippet, ...]:
    out = []
    for s in raw or []:
        if not isinstance(s, dict) or not str(s.get("text") or "").strip():
            continue
        m = _PMID.search(str(s.get("document") or ""))
        out.append(Snippet(m.group(1) if m else "", str(s["text"]), str(s.get("beginSection") or "abstract"),
                           int(s.get("offsetInBeginSection") or 0), str(s.get("endSection") or "abstract"),
                           int(s.get("offsetInEndSection") or 0)))
    return tuple(out)


def read_examples(path: str | Path) -> list[Question]:
    """The questions of a BioASQ JSON file (``.json`` or ``.json.gz``) with their gold snippets and answers."""
    path = Path(path).expanduser()
    questions = read_bioasq_questions(
        path, "no such BioASQ training file",
        hint=f"give a BioASQ training or golden JSON as qa.examples (e.g. {set_line('qa.examples', 'FILE')})")
    out = []
    for i, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not isinstance(q.get("body"), str):
            raise InputError("each question needs string 'id' and 'body'", path=str(path), position=f"questions[{i}]")
        qtype = str(q.get("type") or "")
        if qtype not in QUESTION_TYPES:
            continue
        ideal = q.get("ideal_answer")
        ideals = tuple(str(x).strip() for x in (ideal if isinstance(ideal, list) else [ideal]) if x and str(x).strip())
        docs = tuple(m.group(1) for d in q.get("documents") or [] if (m := _PMID.search(str(d))))
        out.append(Question(q["id"], qtype, q["body"].strip(), docs, _snippets(q.get("snippets")), ideals,
                            _exact(q.get("exact_answer"), qtype)))
    log.info("%s: %d example questions", path, len(out))
    return out


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def usable(example: Question) -> bool:
    """An example can be shown: it has snippets, an ideal answer and (except summary) an exact answer."""
    return bool(example.snippets and example.ideal_answers and (example.type == "summary" or example.exact_answer))


def by_type(examples: Sequence[Question]) -> dict[str, list[Question]]:
    """The usable ``examples`` by question type, in file order."""
    out: dict[str, list[Question]] = {}
    for q in examples:
        if usable(q):
            out.setdefault(q.type, []).append(q)
    return out


def _other(ex: Question, question: Question) -> bool:
    return ex.id != question.id and not _same_text(ex.body, question.body)


class Draw(Protocol):
    """What the LLM qa backend asks of an example chooser."""

    def pick(self, question: Question, n: int) -> list[Question]: ...


class RandomDraw:
    """``n`` training questions of the question's type drawn at random (seeded by ``seed`` and the question id)."""

    def __init__(self, examples: Sequence[Question], seed: int = 13) -> None:
        self.seed = seed
        # sorted by id: the draw does not depend on the order of the training file
        self.by_type = {t: sorted(qs, key=lambda q: q.id) for t, qs in by_type(examples).items()}

    def pick(self, question: Question, n: int) -> list[Question]:
        """At most ``n`` examples of ``question.type``, in the order drawn; never ``question`` itself."""
        pool = [ex for ex in self.by_type.get(question.type, []) if _other(ex, question)]
        if n <= 0 or not pool:
            return []
        # a str seed is hashed with SHA-512 by random.seed: the same draw on every run and machine
        return random.Random(f"{self.seed}:{question.id}").sample(pool, min(n, len(pool)))


class ExamplePicker:
    """The training questions most similar to a question (cosine of encoder vectors of the question bodies)."""

    def __init__(self, examples: Sequence[Question], encoder: QueryEncoder) -> None:
        self.encoder = encoder
        self.by_type: dict[str, list[Question]] = by_type(examples)
        self._vectors: dict[str, np.ndarray] = {}

    def _matrix(self, qtype: str) -> np.ndarray:
        if qtype not in self._vectors:
            bodies = [q.body for q in self.by_type.get(qtype, [])]
            vecs = np.asarray(self.encoder.encode_queries(bodies), dtype=np.float64) if bodies else np.zeros((0, 1))
            norms = np.linalg.norm(vecs, axis=1, keepdims=True) if len(vecs) else np.ones((0, 1))
            self._vectors[qtype] = vecs / np.where(norms > 0, norms, 1.0)
        return self._vectors[qtype]

    def pick(self, question: Question, n: int) -> list[Question]:
        """At most ``n`` examples of ``question.type``, most similar first; never ``question`` itself."""
        pool = self.by_type.get(question.type, [])
        if n <= 0 or not pool:
            return []
        matrix = self._matrix(question.type)
        q = np.asarray(self.encoder.encode_queries([question.body]), dtype=np.float64)[0]
        q = q / (np.linalg.norm(q) or 1.0)
        sims = matrix @ q
        order = sorted(range(len(pool)), key=lambda i: (-float(sims[i]), pool[i].id))
        out = []
        for i in order:
            ex = pool[i]
            if not _other(ex, question):
                continue
            out.append(ex)
            if len(out) >= n:
                break
        return out
