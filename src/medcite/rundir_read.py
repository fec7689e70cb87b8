"""Reading a run directory back: its answers, the articles it recorded and its summary (docs/RUNDIR.md).

A line that is not a JSON object, or a row missing a field, is an :class:`InputError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InputError
from .types import Answer, AnswerSentence, Article, DesignLabel, Dropped, Query, Section, Stance, StudyDesign


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


def llm_call_counts(run_dir: str | Path) -> dict[str, int]:
    """The LLM calls of a run, counted from its ``trace.jsonl``: ``total`` calls, those answered ``from_cache``,
    those that ``failed``, and the replies medcite ``rejected`` (lines ``"event": "rejected"``). A line that
    cannot be read is skipped: the trace is a record, not an input."""
    counts = {"total": 0, "from_cache": 0, "failed": 0, "rejected": 0}
    path = Path(run_dir) / "trace.jsonl"
    if not path.exists():
        return counts
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                row = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if not isinstance(row, dict):
                continue
            if row.get("event") == "rejected":
                counts["rejected"] += 1
            elif "event" not in row:
                counts["total"] += 1
                counts["from_cache"] += row.get("cache_hit") is True
                counts["failed"] += "error" in row
    return counts


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """``summary.json`` (written when a run ends: topics answered, LLM calls); for a run without one (older, or
    interrupted) the same counts from its files."""
    path = Path(run_dir) / "summary.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("llm_calls"), dict):
        return value
    answers = Path(run_dir) / "answers.jsonl"
    topics = sum(1 for _ in _rows(answers)) if answers.exists() else 0
    return {"topics": topics, "llm_calls": llm_call_counts(run_dir)}


def read_queries(run_dir: str | Path) -> dict[str, list[Query]]:
    """topic id -> the queries the run searched for it (``queries.jsonl``; a row of an older run without
    ``stages`` belongs to its ``stage`` only). The last row of a topic wins."""
    out: dict[str, list[Query]] = {}
    path = Path(run_dir) / "queries.jsonl"
    if not path.exists():
        return out
    for n, row in _rows(path):
        try:
            queries = []
            for q in row["queries"]:
                stage = str(q.get("stage") or "original")
                stages = [str(s) for s in q.get("stages") or ()]
                queries.append(Query(str(q["id"]), str(q["text"]), stage, tuple(s for s in stages if s != stage)))
            out[str(row["topic_id"])] = queries
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _malformed(path, n, exc) from None
    return out


def read_notes(run_dir: str | Path) -> dict[str, list[str]]:
    """topic id -> the notes of its queries (``queries.jsonl`` ``notes``: a query generator left out, a branch that
    searched the question because its stages produced no query); topics without notes are absent."""
    out: dict[str, list[str]] = {}
    path = Path(run_dir) / "queries.jsonl"
    if not path.exists():
        return out
    for n, row in _rows(path):
        notes = row.get("notes") or []
        if not isinstance(notes, list):
            raise _malformed(path, n, TypeError(f"'notes' is {type(notes).__name__}, not a list"))
        tid = str(row.get("topic_id"))
        if notes:
            out[tid] = [str(x) for x in notes]
        else:
            out.pop(tid, None)
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


def design_from_json(value: object) -> StudyDesign | None:
    """A study design as ``medcite.rundir.design_json`` wrote it; None for anything else (a run without labels)."""
    if not isinstance(value, dict) or not isinstance(value.get("design"), dict):
        return None

    def label(raw: object) -> DesignLabel | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("label"), str):
            return None
        confidence = raw.get("confidence")
        return DesignLabel(raw["label"], str(raw.get("source") or ""),
                           float(confidence) if isinstance(confidence, int | float) else 0.0, str(raw.get("cue") or ""))

    design = label(value["design"])
    if design is None:
        return None
    subjects = value.get("subjects")
    found = [label(s) for s in subjects] if isinstance(subjects, list) else []
    return StudyDesign(design, tuple(s for s in found if s is not None))


def read_designs(run_dir: str | Path) -> dict[str, dict[str, StudyDesign]]:
    """topic id -> PMID -> the study design ``articles.jsonl`` recorded (rows without one are left out)."""
    out: dict[str, dict[str, StudyDesign]] = {}
    path = Path(run_dir) / "articles.jsonl"
    if not path.exists():
        return out
    for _, row in _rows(path):
        design = design_from_json(row.get("design"))
        if design is not None:
            out.setdefault(str(row.get("topic_id")), {})[str(row.get("pmid"))] = design
    return out
