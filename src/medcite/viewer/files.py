"""Tolerant parsers for run files and the cache that keeps them, keyed by ``(path, mtime_ns, size)``.

Nothing here raises on bad content: unreadable lines become :class:`Problem` records with their line
number. Two reading strategies keep large runs fast:

- :func:`parse_jsonl_table` parses a whole per-topic JSONL file (``topics.jsonl``, ``answers.jsonl``:
  the topic list needs every row);
- :class:`LazyJsonl` and :class:`TrecFile` keep the raw bytes, find a topic's lines by a byte search and
  parse only those when a topic page asks (evidence, articles, trace, TREC rankings: the bulk of a run).

``medcite.trec.read_run`` is strict (the first bad line raises); the viewer must show what it can, so
TREC lines are parsed here one by one.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias, TypeVar, cast

T = TypeVar("T")
CACHE_ENTRIES = 256
MAX_PROBLEMS_PER_FILE = 50
# the top-level "topic_id" key of a JSONL row; an escaped quote inside a string value cannot match
TOPIC_KEY = re.compile(rb'"topic_id"\s*:\s*("(?:[^"\\\n]|\\.)*"|-?\d+)')


@dataclass(frozen=True, slots=True)
class Problem:
    """Something in a run that could not be read: shown on that run's pages instead of crashing."""

    file: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"


class FileCache:
    """A small LRU of parsed files keyed by (path, parser); an entry is valid while mtime and size hold."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self.entries = entries
        self._data: OrderedDict[tuple[str, str], tuple[tuple[int, int], object]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, path: Path, parser: Callable[[Path], T]) -> T:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        key = (str(path), parser.__qualname__)
        with self._lock:
            found = self._data.get(key)
            if found is not None and found[0] == stamp:
                self._data.move_to_end(key)
                self.hits += 1
                return cast(T, found[1])  # stored by this parser (the key names it)
        value = parser(path)
        with self._lock:
            self.misses += 1
            self._data[key] = (stamp, value)
            self._data.move_to_end(key)
            while len(self._data) > self.entries:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def _report(problems: list[Problem], p: Problem) -> None:
    if len(problems) < MAX_PROBLEMS_PER_FILE:
        problems.append(p)
    elif len(problems) == MAX_PROBLEMS_PER_FILE:
        problems.append(Problem(p.file, "more problems not shown"))


def parse_json(path: Path) -> tuple[object, list[Problem]]:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh), []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, [Problem(path.name, f"not valid JSON ({exc})")]


def _row(name: str, raw: bytes, no: int, problems: list[Problem]) -> tuple[str, dict[str, object]] | None:
    """One JSONL line as (topic id, object), or None with a problem recorded."""
    try:
        row = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        _report(problems, Problem(name, f"not valid JSON ({exc})", no))
        return None
    tid = row.get("topic_id", row.get("id")) if isinstance(row, dict) else None
    if not isinstance(tid, (str, int)) or isinstance(tid, bool):
        _report(problems, Problem(name, "line is not an object with a topic_id", no))
        return None
    for message in check_types(name, row)[:3]:  # shown as far as possible, and listed under Problems
        _report(problems, Problem(name, message, no))
    return str(tid), row


# The types of the fields the pages show, per run file (docs/RUNDIR.md). A value of another type is shown as
# text (or left out) by the page and reported as a Problem with its line; null is always allowed.
_S, _I, _F, _B = str, int, float, bool
#: a field's expected type: a JSON scalar's Python type, ``{key: spec}`` (``"*"``: every key) or ``[spec]``
Spec: TypeAlias = "type | dict[str, Spec] | list[Spec]"
ROW_TYPES: dict[str, dict[str, Spec]] = {
    "topics.jsonl": {"question": _S, "narrative": _S, "topic": _S, "type": _S},
    "answers.jsonl": {
        "text": _S, "generator": _S, "words": _I,
        "sentences": [{"text": _S, "pmids": [_S], "evidence": [_I], "stances": {"*": _S}}],
        "dropped": [{"what": _S, "text": _S, "reason": _S}],
    },
    "evidence.jsonl": {"evidence": [{"index": _I, "pmid": _S, "text": _S, "section": _S, "start": _I, "end": _I,
                                     "score": _F, "rank": _I, "kind": _S, "branches": [_S]}],
                       "read": [{"pmid": _S, "rank": _I, "status": _S, "evidence": _I, "reason": _S}]},
    "articles.jsonl": {"pmid": _S, "title": _S, "abstract": _S, "journal": _S, "year": _I, "retracted": _B,
                       "doi": _S, "publication_types": [_S]},
    "queries.jsonl": {"queries": [{"id": _S, "text": _S, "stage": _S, "stages": [_S]}], "notes": [_S]},
    "verification.jsonl": {
        "citations": {"checks": [{"sentence": _I, "pmid": _S, "stance": _S, "kept": _B, "reason": _S}]},
        "grounding": [{"verdicts": {"*": {"stance": _S}}}],
    },
}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def check_types(name: str, row: dict[str, object]) -> list[str]:
    """Messages for the fields of ``row`` whose JSON type is not the one ``name``'s pages expect."""
    spec = ROW_TYPES.get(name)
    out: list[str] = []
    if spec is not None:
        _check(row, spec, "", out)
    return out


def _check(value: object, spec: Spec, where: str, out: list[str]) -> None:
    if value is None or len(out) >= 3:
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            out.append(f"field {where!r} should be an object, got {_kind(value)}")
            return
        for key, sub in spec.items():
            if key == "*":
                for k, v in value.items():
                    _check(v, sub, f"{where}.{k}", out)
            elif key in value:
                _check(value[key], sub, f"{where}.{key}" if where else key, out)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            out.append(f"field {where!r} should be a list, got {_kind(value)}")
            return
        for i, item in enumerate(value):
            _check(item, spec[0], f"{where}.{i}", out)
    else:
        ok = isinstance(value, spec) and (spec is bool or not isinstance(value, bool))
        if spec is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            out.append(f"field {where!r} should be {_TYPE_NAMES[spec]}, got {_kind(value)}")


def _kind(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


@dataclass(slots=True)
class Table:
    """A per-topic JSONL file: rows grouped by ``topic_id`` (or ``id``) in first-seen order."""

    by_topic: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def last(self, topic_id: str) -> dict[str, object] | None:
        """The last row of a topic (a resumed run may have rewritten a topic; the last one wins)."""
        rows = self.by_topic.get(topic_id)
        return rows[-1] if rows else None


def parse_jsonl_table(path: Path) -> Table:
    """Parse every line; bad lines are skipped and reported with their line number."""
    table = Table()
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            if raw.strip() and (got := _row(path.name, raw, no, table.problems)) is not None:
                table.by_topic.setdefault(got[0], []).append(got[1])
    return table


class LazyJsonl:
    """A per-topic JSONL file indexed by topic id; a topic's rows are parsed when first asked for.

    Indexing reads each line's ``"topic_id"`` with a regular expression; only lines where it is not
    found are parsed up front (to report them). JSON errors in a topic's lines show with that topic.
    """

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.data = path.read_bytes()
        self.lines: dict[str, list[tuple[int, int, int]]] = {}  # topic -> (line no, start, end)
        self.problems: list[Problem] = []
        self._parsed: dict[str, tuple[list[dict[str, object]], list[Problem]]] = {}
        data, pos, no = self.data, 0, 0
        while pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            no += 1
            if data[pos:end].strip():
                m = TOPIC_KEY.search(data, pos, end)
                tid = _json_key(m.group(1)) if m else None
                if tid is None and (got := _row(self.name, data[pos:end], no, self.problems)) is not None:
                    tid = got[0]
                if tid is not None:
                    self.lines.setdefault(tid, []).append((no, pos, end))
            pos = end + 1

    def rows(self, topic_id: str) -> tuple[list[dict[str, object]], list[Problem]]:
        found = self._parsed.get(topic_id)
        if found is None:
            rows: list[dict[str, object]] = []
            problems: list[Problem] = []
            for no, start, end in self.lines.get(topic_id, []):
                got = _row(self.name, self.data[start:end], no, problems)
                if got is not None and got[0] == topic_id:
                    rows.append(got[1])
            found = self._parsed[topic_id] = (rows, problems)
        return found


def _json_key(raw: bytes) -> str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class TrecFile:
    """A TREC run file (``qid Q0 docid rank score tag``); one query's lines are found by byte search."""

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.data = path.read_bytes()
        self._parsed: dict[str, tuple[dict[str, tuple[int, float]], list[Problem]]] = {}

    def topic(self, qid: str) -> tuple[dict[str, tuple[int, float]], list[Problem]]:
        """pmid -> (rank, score) for one query (first line wins), and that query's bad lines."""
        found = self._parsed.get(qid)
        if found is not None:
            return found
        key = re.escape(qid.encode("utf-8"))
        first = re.compile(rb"(" + key + rb"[ \t][^\n]*)")
        rest = re.compile(rb"\n(" + key + rb"[ \t][^\n]*)")  # a literal prefix: a fast C-level scan
        spans = [(m.start(1), m.group(1)) for m in (first.match(self.data),) if m]
        spans += [(m.start(1), m.group(1)) for m in rest.finditer(self.data)]
        hits: dict[str, tuple[int, float]] = {}
        problems: list[Problem] = []
        for start, line in spans:
            parts = line.split()
            try:
                pmid, rank, score = parts[2].decode("utf-8", "replace"), int(parts[3]), float(parts[4])
            except (IndexError, ValueError):
                no = self.data.count(b"\n", 0, start) + 1
                _report(problems, Problem(self.name, "not a TREC run line 'qid Q0 docid rank score tag'", no))
                continue
            hits.setdefault(pmid, (rank, score))
        found = self._parsed[qid] = (hits, problems)
        return found
