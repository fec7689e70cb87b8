"""TREC BioGen Task B outputs: the 2025 JSONL and the 2024 JSON (FORMATS.md §1, §3).

Writers turn :class:`~medcite.types.Answer` objects into the official files; the validators live in
:mod:`medcite.tasks.validate`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write, write_json
from ..types import Answer


def biogen25_line(answer: Answer, team_id: str, run_id: str) -> dict[str, Any]:
    """One line of the 2025 Task B submission: ``{"metadata": {...}, "responses": [{"text", "citations"}]}``."""
    return {
        "metadata": {"team_id": team_id, "run_id": run_id, "topic_id": str(answer.topic_id)},
        "responses": [{"text": s.text, "citations": [str(p) for p in s.pmids]} for s in answer.sentences],
    }


def write_biogen25(path: str | Path, answers: Iterable[Answer], team_id: str, run_id: str) -> None:
    with atomic_write(path) as fh:
        for a in answers:
            fh.write(json.dumps(biogen25_line(a, team_id, run_id), ensure_ascii=False) + "\n")


def biogen24_answer_text(answer: Answer) -> str:
    """The 2024 answer string: `` [pmid,pmid]`` placed before each sentence's final punctuation (webis)."""
    parts = []
    for s in answer.sentences:
        text = s.text.rstrip()
        cite = f" [{','.join(s.pmids)}]" if s.pmids else ""
        if text and text[-1] in ".!?":
            parts.append(f"{text[:-1]}{cite}{text[-1]}")
        else:
            parts.append(f"{text}{cite}.")
    return " ".join(parts)


def write_biogen24(path: str | Path, answers: Sequence[Answer], *, team_id: str, run_name: str,
                   contact_email: str) -> None:
    results = []
    for a in answers:
        results.append({"topic_id": str(a.topic_id), "answer": biogen24_answer_text(a), "references": a.pmids})
    write_json(path, {"team_id": team_id, "run_name": run_name, "contact_email": contact_email, "results": results})
