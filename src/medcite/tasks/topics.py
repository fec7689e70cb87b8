"""Read a topics/questions file of any supported shape into :class:`~medcite.types.Topic` objects.

Shapes (FORMATS.md §1, §3, §5), recognised by content, not by file name (``.gz`` is read transparently):

- BioASQ JSON: ``{"questions": [{"id", "body", "type", ...}]}``;
- BioGen 2024, one JSON object: ``{"topics": [{"id", "topic", "question", "narrative"}]}``;
- BioGen 2024, JSON lines: ``{"topic_id", "title", "question", "narrative"}`` per line;
- BioGen 2025 (Task B) JSON list: ``[{"id", "question", "narrative", "topic"}]``;
- TREC topics TSV: ``qid<TAB>query`` per line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

from ..errors import InputError
from ..io import open_maybe_gz
from ..trec import check_id
from ..types import Topic

SHAPES_HINT = (
    "medcite reads BioASQ JSON {'questions': [{id, body, type}]}, BioGen 2024 {'topics': [{id, topic, question, "
    "narrative}]} or JSON lines with topic_id/title/question/narrative, BioGen 2025 [{id, question, narrative, "
    "topic}], or a TREC topics TSV file 'qid<TAB>query' per line"
)


def read_topics(path: str | Path) -> list[Topic]:
    """Read topics from ``path`` (shape detected from the content). Raises :class:`InputError`."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such topics file", path=str(path))
    try:
        with open_maybe_gz(path) as fh:
            text = fh.read()
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise InputError(f"cannot read the file as UTF-8 text ({exc})", hint=SHAPES_HINT, path=str(path)) from None
    stripped = text.lstrip()
    if not stripped:
        raise InputError("the topics file is empty", hint=SHAPES_HINT, path=str(path))
    if stripped[0] in "{[":
        try:
            data = json.loads(text)
        except RecursionError:
            raise InputError("JSON nested too deeply to be a topics file", hint=SHAPES_HINT, path=str(path)) from None
        except json.JSONDecodeError:
            if stripped[0] == "{":
                topics = _from_jsonl(text, path)
            else:
                raise InputError("not valid JSON", hint=SHAPES_HINT, path=str(path)) from None
        else:
            topics = _from_json(data, path)
    else:
        topics = _from_tsv(text, path)
    _check_unique(topics, path)
    return topics


def _from_json(data: object, path: Path) -> list[Topic]:
    if isinstance(data, Mapping) and isinstance(data.get("questions"), list):
        return [_bioasq(q, path, i) for i, q in enumerate(data["questions"])]
    if isinstance(data, Mapping) and isinstance(data.get("topics"), list):
        return [_biogen(t, path, i) for i, t in enumerate(data["topics"])]
    if isinstance(data, list) and data and all(isinstance(t, Mapping) for t in data):
        return [_biogen(t, path, i) for i, t in enumerate(data)]
    if isinstance(data, Mapping) and "question" in data:  # a one-line JSONL file of BioGen 2024
        return [_biogen(data, path, 0)]
    if isinstance(data, list) and not data:
        raise InputError("the topics list is empty", path=str(path))
    keys = sorted(data)[:8] if isinstance(data, Mapping) else type(data).__name__
    raise InputError(f"unknown topics JSON shape (top level: {keys})", hint=SHAPES_HINT, path=str(path))


def _from_jsonl(text: str, path: Path) -> list[Topic]:
    topics = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON ({exc.msg})", hint=SHAPES_HINT, path=str(path), position=f"line {n}"
            ) from None
        if not isinstance(item, Mapping):
            raise InputError("each JSON line must be an object", hint=SHAPES_HINT, path=str(path), position=f"line {n}")
        topics.append(_biogen(item, path, n, where=f"line {n}"))
    return topics


def _text(item: Mapping[str, object], *keys: str, who: str, path: Path, where: str) -> str | None:
    """The first of ``keys`` holding text; a value that is not a string (a list, a number) is an InputError."""
    for key in keys:
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            shown = json.dumps(value, ensure_ascii=False)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise InputError(f"{who}: field {key!r} must be a string, got {type(value).__name__} {shown}",
                             hint=SHAPES_HINT, path=str(path), position=where)
        if value.strip():
            return value.strip()
    return None


def _id(item: Mapping[str, object], *keys: str) -> str | None:
    for key in keys:
        value = item.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def _bioasq(item: object, path: Path, i: int) -> Topic:
    where = f"questions[{i}]"
    if not isinstance(item, Mapping):
        raise InputError("each question must be a JSON object", path=str(path), position=where)
    qid = _id(item, "id")
    who = f"question {qid!r}" if qid else "a question"
    body = _text(item, "body", who=who, path=path, where=where)
    if qid is None or body is None:
        raise InputError("a BioASQ question needs 'id' and 'body'", hint=SHAPES_HINT, path=str(path), position=where)
    return Topic(id=qid, question=body, type=_text(item, "type", who=who, path=path, where=where))


def _biogen(item: Mapping[str, object], path: Path, i: int, where: str | None = None) -> Topic:
    where = where or f"item {i}"
    qid = _id(item, "id", "topic_id", "qid")
    who = f"topic {qid!r}" if qid else "a topic"
    question = _text(item, "question", who=who, path=path, where=where)
    if qid is None or question is None:
        raise InputError(
            f"a topic needs an id ('id' or 'topic_id') and a 'question'; found keys {sorted(item)[:8]}",
            hint=SHAPES_HINT,
            path=str(path),
            position=where,
        )
    return Topic(id=qid, question=question, narrative=_text(item, "narrative", who=who, path=path, where=where),
                 topic=_text(item, "topic", "title", who=who, path=path, where=where))


def _from_tsv(text: str, path: Path) -> list[Topic]:
    topics = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        if not tab or not qid.strip() or not query.strip():
            raise InputError(
                f"expected 'qid<TAB>query', found {line[:80]!r}",
                hint=SHAPES_HINT,
                path=str(path),
                position=f"line {n}",
            )
        topics.append(Topic(id=qid.strip(), question=query.strip()))
    return topics


def _check_unique(topics: list[Topic], path: Path) -> None:
    """Ids are unique TREC words and every text is encodable (checked before any work is done)."""
    seen: set[str] = set()
    for t in topics:
        try:
            check_id(t.id, "topic id")
        except InputError as exc:
            raise InputError(exc.message, exc.hint, path=str(path)) from None
        for f in fields(t):
            value = getattr(t, f.name)
            bad = _SURROGATE.search(value) if isinstance(value, str) else None
            if bad:
                raise InputError(
                    f"topic {t.id!r}: field {f.name!r} holds a lone surrogate ({bad.group(0)!r}), which is not text",
                    hint="fix the \\udXXX escape at that place in the file", path=str(path))
        if t.id in seen:
            raise InputError(f"topic id {t.id!r} appears twice", path=str(path))
        seen.add(t.id)


_SURROGATE = re.compile("[\ud800-\udfff]")

