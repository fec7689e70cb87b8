"""Tolerant, cached reading of run directories (docs/RUNDIR.md) for the viewer.

Runs may be partial (interrupted), hand-edited or written by an older medcite. Nothing here raises on
bad content: every unreadable file or line becomes a :class:`Problem` that the page shows, and the
rest of the run is still displayed. Parsed files are cached keyed by ``(path, mtime_ns, size)``
(:mod:`.files`), so a page reads a large run from disk once and a run that is still being written is
re-read as it grows. The topic list parses only ``topics.jsonl`` and ``answers.jsonl``; a topic page
parses only that topic's lines of the other files.

Run and topic names coming from URLs are never joined into paths unchecked: :func:`resolve_run`
accepts only run ids (:data:`medcite.rundir.RUN_ID_RE`) naming a directory that stays inside the runs
folder after resolving symlinks, and topics are looked up by id in parsed data, never on disk.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from ..rundir import RUN_ID_RE
from .files import FileCache, LazyJsonl, Problem, Table, TrecFile, parse_json, parse_jsonl_table

log = logging.getLogger(__name__)

T = TypeVar("T")
VALIDATION_STATES = ("valid", "invalid", "not validated")
LAZY_FILES = ("queries.jsonl", "evidence.jsonl", "articles.jsonl", "timings.jsonl", "trace.jsonl",
              "verification.jsonl")
#: metrics files and the top-level keys taken from each (None: all); an earlier file wins a key.
#: ``medcite eval biogen-b`` writes metrics_task_b.json (its "run" and "judge" entries are not scores).
METRICS_FILES: tuple[tuple[str, frozenset[str] | None], ...] = (
    ("metrics.json", None),
    ("metrics_task_b.json", frozenset({"citations", "nuggets", "completeness"})),
)


@dataclass(slots=True)
class Validation:
    """What ``medcite validate`` wrote to ``validation.json`` (absent means not validated)."""

    state: str = "not validated"  # one of VALIDATION_STATES
    errors: list[str] = field(default_factory=list)
    by_topic: dict[str, list[str]] = field(default_factory=dict)

    def topic_state(self, topic_id: str) -> str:
        if self.state == "not validated":
            return self.state
        return "invalid" if self.by_topic.get(topic_id) else "valid"


CACHE = FileCache()


# "topic 181: ...", "qa_id=116 ...", "topic_id '5e5b...'": an id must hold a digit ("topic list" is no id)
_TOPIC_IN_TEXT = re.compile(
    r"\b(?:topic|qa)[ _-]?(?:id)?\s*[=:#]?\s*['\"]?((?=[A-Za-z._-]*\d)[A-Za-z0-9._-]+)", re.I)


def parse_validation(value: object) -> tuple[Validation, list[Problem]]:
    """Read ``{"ok": bool, "errors": [...]}``; errors may be strings or objects naming a topic."""
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        return Validation(), [Problem("validation.json", 'expected {"ok": true|false, "errors": [...]}')]
    raw = value.get("errors") or []
    if not isinstance(raw, list):
        raw = [raw]
    v = Validation(state="valid" if value["ok"] and not raw else "invalid")
    for err in raw:
        tid: object = None
        if isinstance(err, dict):
            tid = next((err[k] for k in ("topic_id", "qa_id", "topic", "id") if err.get(k) is not None), None)
            text = str(err.get("message") or err.get("error") or json.dumps(err, ensure_ascii=False))
        else:
            text = str(err)
            m = _TOPIC_IN_TEXT.search(text)
            tid = m.group(1).rstrip(".") if m else None
        v.errors.append(text)
        if tid is not None:
            v.by_topic.setdefault(str(tid), []).append(text)
    return v, []


def resolve_run(runs_dir: Path, name: str) -> Path | None:
    """The directory of run ``name`` if it is a run id inside ``runs_dir``; None for anything else."""
    if not RUN_ID_RE.match(name) or name in (".", ".."):
        return None
    root = runs_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_dir():
        return None
    return path


def list_run_dirs(runs_dir: Path) -> list[Path]:
    """Run directories directly inside ``runs_dir`` (by name); other entries are ignored."""
    try:
        names = sorted(os.listdir(runs_dir))
    except OSError as exc:
        log.warning("cannot list %s: %s", runs_dir, exc)
        return []
    return [p for p in (resolve_run(runs_dir, n) for n in names) if p is not None]


class Run:
    """One run directory, read lazily through the shared :data:`CACHE`. Never raises on bad content."""

    def __init__(self, path: Path, cache: FileCache = CACHE) -> None:
        self.path = path
        self.name = path.name
        self.cache = cache
        self._problems: list[Problem] = []

    def _cached(self, name: str, parser: Callable[[Path], T]) -> T | None:
        path = self.path / name
        try:
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                # a symlink (it may point out of the runs folder), a folder, a fifo: never opened
                kind = "a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "a special file"
                self._add([Problem(name, f"cannot read: it is {kind}, not a regular file inside the run")])
                return None
            return self.cache.get(path, parser)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._add([Problem(name, f"cannot read ({exc.strerror or exc})")])
            return None

    def _add(self, problems: list[Problem]) -> None:
        for p in problems:
            if p not in self._problems:
                self._problems.append(p)

    def _json(self, name: str) -> object:
        got = self._cached(name, parse_json)
        if got is None:
            return None
        value, problems = got
        self._add(problems)
        return value

    def _table(self, name: str) -> Table:
        table = self._cached(name, parse_jsonl_table)
        if table is None:
            return Table()
        self._add(table.problems)
        return table

    def report(self, problems: list[Problem]) -> None:
        """Add problems found by a page while interpreting this run's content (shown under Problems)."""
        self._add(problems)

    @property
    def problems(self) -> list[Problem]:
        """Problems met by everything read so far (read the parts a page shows, then ask)."""
        return list(self._problems)

    @cached_property
    def config(self) -> dict[str, object]:
        value = self._json("config.json")
        if value is None and not (self.path / "config.json").exists():
            self._add([Problem("config.json", "missing (not a complete medcite run?)")])
        if value is not None and not isinstance(value, dict):
            self._add([Problem("config.json", "expected a JSON object")])
            return {}
        return value or {}

    @property
    def preset(self) -> str:
        p = self.config.get("preset")
        if not isinstance(p, str):
            settings = self.config.get("settings")
            p = settings.get("preset") if isinstance(settings, dict) else None
        return p if isinstance(p, str) and p else "unknown"

    @property
    def created_at(self) -> str:
        return str(self.config.get("created_at") or "")

    @cached_property
    def validation(self) -> Validation:
        value = self._json("validation.json")
        if value is None:
            return Validation()
        v, problems = parse_validation(value)
        self._add(problems)
        return v

    @cached_property
    def _metrics(self) -> tuple[dict[str, object], dict[str, str]]:
        merged: dict[str, object] = {}
        source: dict[str, str] = {}
        for name, keys in METRICS_FILES:
            value = self._json(name)
            if value is None:
                continue
            if not isinstance(value, dict):
                self._add([Problem(name, "expected a JSON object")])
                continue
            for key, v in value.items():
                if (keys is None or key in keys) and key not in merged:
                    merged[key] = v
                    source[key] = name
        return merged, source

    @property
    def metrics(self) -> dict[str, object]:
        """``metrics.json``, plus the scores of ``metrics_task_b.json`` that it does not hold itself."""
        return self._metrics[0]

    def metrics_source(self, key: str) -> str:
        """The file a top-level key of :attr:`metrics` came from."""
        return self._metrics[1].get(key, "metrics.json")

    def verification(self) -> list[dict[str, object]]:
        """The last ``verification.jsonl`` row of every topic (a resumed run's rewrite wins)."""
        table = self._table("verification.jsonl")
        return [rows[-1] for rows in table.by_topic.values() if rows]

    @cached_property
    def topics(self) -> Table:
        return self._table("topics.jsonl")

    @cached_property
    def answers(self) -> Table:
        return self._table("answers.jsonl")

    def rows(self, name: str, topic_id: str) -> list[dict[str, object]]:
        """One topic's rows of a per-topic file read lazily (one of :data:`LAZY_FILES`)."""
        lazy = self._cached(name, LazyJsonl)
        if lazy is None:
            return []
        rows, problems = lazy.rows(topic_id)
        self._add(lazy.problems)
        self._add(problems)
        return rows

    def last(self, name: str, topic_id: str) -> dict[str, object] | None:
        """The last row of a topic in a lazily read file (a resumed run's rewrite wins)."""
        rows = self.rows(name, topic_id)
        return rows[-1] if rows else None

    def topic_ids(self) -> list[str]:
        """Topics in input order, then answered topics missing from topics.jsonl."""
        ids = dict.fromkeys(self.topics.by_topic)
        ids.update(dict.fromkeys(self.answers.by_topic))
        return list(ids)

    def trec_files(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.path) if n.endswith(".trec"))
        except OSError:
            return []

    def rankings(self, topic_id: str) -> dict[str, dict[str, tuple[int, float]]]:
        """Stage name (file stem) -> pmid -> (rank, score) for one topic, from every ``*.trec`` file."""
        out: dict[str, dict[str, tuple[int, float]]] = {}
        for name in self.trec_files():
            trec = self._cached(name, TrecFile)
            if trec is None:
                continue
            hits, problems = trec.topic(topic_id)
            self._add(problems)
            out[name[: -len(".trec")]] = hits
        return out


def as_str(value: object, default: str = "") -> str:
    """A display string for a JSON value that should have been a string."""
    if value is None:
        return default
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def as_list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def as_dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float (JSON allows any number of digits)
        return None
