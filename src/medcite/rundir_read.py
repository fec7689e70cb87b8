"""Reading a run directory back: its answers and the articles it recorded (docs/RUNDIR.md).

A line that is not a JSON object, or a row missing a field, is an :class:`InputError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InputError
from .types import Answer, AnswerSentence, Article, Dropped, Section, Stance


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a run's JSONL file; a line that is not a JSON object is an InputError."""
    try:
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except (ValueError, RecursionError) as exc:
                    raise InputError(f"not a JSON line ({type(exc).__name__})", path=str(path),
                                     position=f"line {n}", hint="re-create the run, or fix that line") from None
                if not isinstance(row, dict):
                    raise InputError("not a JSON object", path=str(path), position=f"line {n}")
                yield n, row
    except OSError as exc:
        raise InputError(f"cannot read it ({exc.strerror or exc})", path=str(path)) from None


def _malformed(path: Path, n: int, exc: Exception) -> InputError:
    return InputError(f"a field is missing or of the wrong type ({type(exc).__name__}: {exc})"[:300],
                      path=str(path), position=f"line {n}", hint="re-create the run, or fix that line")


def read_answers(run_dir: str | Path) -> list[Answer]:
    """The answers of a run directory as :class:`Answer` objects (file order)."""
    out = []
    path = Path(run_dir) / "answers.jsonl"
    for n, row in _rows(path):
        try:
            sentences = [
                AnswerSentence(str(s["text"]), tuple(map(str, s["pmids"])), tuple(s.get("evidence", ())),
                               tuple((str(p), Stance(v)) for p, v in s.get("stances", {}).items()),
                               str(s.get("kind", "")))
                for s in row["sentences"]
            ]
            dropped = [Dropped(d["what"], d["text"], d["reason"]) for d in row.get("dropped", [])]
            out.append(Answer(str(row["topic_id"]), sentences, dropped, row.get("generator", ""),
                              row.get("question_type"), row.get("verdict"), bool(row.get("abstained", False))))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _malformed(path, n, exc) from None
    return out


def read_articles(run_dir: str | Path) -> dict[str, dict[str, Article]]:
    """topic id -> PMID -> the article as the run recorded it (``articles.jsonl``: the evidence articles)."""
    out: dict[str, dict[str, Article]] = {}
    path = Path(run_dir) / "articles.jsonl"
    if not path.exists():
        return out
    for n, row in _rows(path):
        try:
            sections = tuple(Section(label, None, int(start), int(end))
                             for label, start, end in row.get("sections") or ())
            article = Article(str(row["pmid"]), row.get("title") or "", row.get("abstract") or "", sections,
                              journal=row.get("journal"), year=row.get("year"),
                              retracted=bool(row.get("retracted") is True), doi=row.get("doi"),
                              publication_types=tuple(row.get("publication_types") or ()))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _malformed(path, n, exc) from None
        out.setdefault(str(row["topic_id"]), {})[article.pmid] = article
    return out
