"""The run directory: the unit every command writes and the viewer reads (docs/RUNDIR.md).

Per-topic files are appended one JSON line per finished topic (flushed and fsynced), so a long run that
is interrupted resumes by skipping the topics already present; a torn last line is dropped on resume.
Whole-run files (config.json, metrics.json, submissions) are written atomically.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .config import Settings
from .errors import InputError
from .io import write_json
from .types import Answer, AnswerSentence, Article, Dropped, Evidence, Hit, Stance, Topic

log = logging.getLogger(__name__)

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PER_TOPIC_FILES = ("topics.jsonl", "queries.jsonl", "evidence.jsonl", "answers.jsonl", "articles.jsonl",
                   "timings.jsonl", "trace.jsonl")


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}"


def topic_json(t: Topic) -> dict[str, Any]:
    return {k: v for k, v in asdict(t).items() if v is not None}


def evidence_json(e: Evidence, rank: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "index": e.index, "pmid": e.pmid, "text": e.text, "section": e.section, "start": e.start,
        "end": e.end, "score": round(float(e.score), 6), "kind": e.kind, "branches": sorted(e.branches),
    }
    if rank is not None:
        d["rank"] = rank
    return d


def answer_json(a: Answer) -> dict[str, Any]:
    words = sum(len(s.text.split()) for s in a.sentences)
    return {
        "topic_id": a.topic_id,
        "generator": a.generator,
        "text": a.text,
        "words": words,
        "sentences": [
            {"text": s.text, "pmids": list(s.pmids), "evidence": list(s.evidence),
             "stances": {p: st.value for p, st in s.stances}}
            for s in a.sentences
        ],
        "dropped": [asdict(d) for d in a.dropped],
    }


def article_json(a: Article) -> dict[str, Any]:
    return {
        "pmid": a.pmid, "title": a.title, "abstract": a.abstract, "journal": a.journal, "year": a.year,
        "sections": [[s.label, s.start, s.end] for s in a.sections],
        "retracted": a.retracted, "doi": a.doi, "publication_types": list(a.publication_types),
    }


class RunWriter:
    """Writes one run directory. Re-opening an existing one resumes it (see :meth:`done_topics`)."""

    def __init__(self, path: str | Path, settings: Settings, *, command: str = "", extra: dict[str, Any] | None = None,
                 resume: bool = True) -> None:
        self.path = Path(path)
        if not RUN_ID_RE.match(self.path.name):
            raise InputError(
                f"run directory name {self.path.name!r} is not allowed",
                hint="use letters, digits, '.', '_' and '-' only (at most 128 characters)",
            )
        config_path = self.path / "config.json"
        if config_path.exists() and resume:
            old = json.loads(config_path.read_text(encoding="utf-8"))
            if old.get("settings_hash") != settings.hash():
                raise InputError(
                    f"{self.path} already holds a run with other settings (hash {old.get('settings_hash')})",
                    hint="choose a new --out folder, or rerun with the same preset and --set values to resume",
                )
        self.path.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        if not config_path.exists() or not resume:
            write_json(config_path, {
                "medcite_version": __version__,
                "settings_hash": settings.hash(),
                "preset": settings.preset,
                "settings": settings.model_dump(mode="json"),
                "command": command,
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                **(extra or {}),
            })
        for name in PER_TOPIC_FILES:
            _drop_torn_tail(self.path / name)

    def done_topics(self) -> set[str]:
        """Topic ids that already have an answer line (a resumed run skips them)."""
        path = self.path / "answers.jsonl"
        if not path.exists():
            return set()
        with open(path, encoding="utf-8") as fh:
            return {json.loads(line)["topic_id"] for line in fh if line.strip()}

    def append(self, name: str, row: dict[str, Any]) -> None:
        with open(self.path / name, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def append_trec(self, name: str, topic_id: str, hits: Sequence[Hit], tag: str) -> None:
        with open(self.path / name, "a", encoding="utf-8") as fh:
            for i, h in enumerate(hits, start=1):
                fh.write(f"{topic_id} Q0 {h.pmid} {i} {h.score:.6f} {tag}\n")
            fh.flush()
            os.fsync(fh.fileno())

    def write_topic(
        self,
        topic: Topic,
        *,
        queries: Iterable[dict[str, Any]],
        rankings: dict[str, Sequence[Hit]],
        evidence: Sequence[Evidence],
        answer: Answer,
        articles: Iterable[Article],
        timings: dict[str, float],
    ) -> None:
        """Record everything about one finished topic; answers.jsonl is written last (it marks done)."""
        self.append("topics.jsonl", topic_json(topic))
        self.append("queries.jsonl", {"topic_id": topic.id, "queries": list(queries)})
        for name, hits in rankings.items():
            self.append_trec(f"{name}.trec", topic.id, hits, f"medcite-{self.settings.preset}-{name}")
        self.append("evidence.jsonl", {"topic_id": topic.id,
                                       "evidence": [evidence_json(e) for e in evidence]})
        for a in articles:
            self.append("articles.jsonl", {"topic_id": topic.id, **article_json(a)})
        self.append("timings.jsonl", {"topic_id": topic.id, **{k: round(v, 6) for k, v in timings.items()}})
        self.append("answers.jsonl", answer_json(answer))

    def write_metrics(self, metrics: dict[str, Any]) -> None:
        write_json(self.path / "metrics.json", metrics)


def _drop_torn_tail(path: Path) -> None:
    """Remove a last line that is not complete JSON (the process died while writing it)."""
    if not path.exists() or path.suffix != ".jsonl":
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    log.warning("%s: dropping an incomplete last line left by an interrupted run", path)
    with open(path, "r+b") as fh:
        fh.truncate(cut)


def read_answers(run_dir: str | Path) -> list[Answer]:
    """The answers of a run directory as :class:`Answer` objects (file order)."""
    out = []
    path = Path(run_dir) / "answers.jsonl"
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            sentences = [
                AnswerSentence(s["text"], tuple(s["pmids"]), tuple(s.get("evidence", ())),
                               tuple((p, Stance(v)) for p, v in s.get("stances", {}).items()))
                for s in row["sentences"]
            ]
            dropped = [Dropped(d["what"], d["text"], d["reason"]) for d in row.get("dropped", [])]
            out.append(Answer(str(row["topic_id"]), sentences, dropped, row.get("generator", "")))
    return out
