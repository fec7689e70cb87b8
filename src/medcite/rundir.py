"""The run directory: the unit every command writes and the viewer reads (docs/RUNDIR.md).

Per-topic files get one line (or, for ``<stage>.trec``, one ranking) per finished topic. A topic is written
file by file, each file flushed and fsynced once, and ``answers.jsonl`` last: a topic is finished exactly
when its answer line is complete. Re-opening a run directory resumes it: every row of a topic without an
answer (the one a crash interrupted), every torn or unreadable line, in every per-topic file, is dropped,
so the resumed run ends with the same files as one that was never interrupted.
Whole-run files (config.json, summary.json, metrics.json, submissions) are written atomically.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType

from . import __version__, locking
from .config import Settings
from .errors import InputError, MedciteError
from .io import atomic_write, fsync_dir, remove_stale_temp_files, write_json
from .rundir_read import llm_call_counts, read_answers, read_articles, read_designs, read_notes, read_queries
from .trec import format_run
from .types import Answer, Article, DesignLabel, Evidence, Hit, Query, StudyDesign, Topic
from .write_failures import RUN_KEPT, write_failure

__all__ = ["ANSWERS", "PER_TOPIC_FILES", "RUN_LOCK", "RunWriter", "answer_json", "article_json", "check_run_target",
           "claim_run_dir", "design_json",
           "drop_unfinished_topics", "evidence_json", "is_run_dir", "llm_call_counts", "new_run_dir", "new_run_id",
           "query_json", "read_answers", "read_articles", "read_designs", "read_notes", "read_queries", "topic_json"]

log = logging.getLogger(__name__)

RUN_LOCK = "run.lock"
NOTHING_YET = "nothing already written was lost (nothing was written yet)"
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ANSWERS = "answers.jsonl"
DEVICES = "devices.json"
PER_TOPIC_FILES = ("topics.jsonl", "queries.jsonl", "evidence.jsonl", ANSWERS, "articles.jsonl",
                   "timings.jsonl", "verification.jsonl", "trace.jsonl")


def new_run_id(prefix: str = "run") -> str:
    """``PREFIX-YYYYmmdd-HHMMSS-ffffff`` (UTC, to the microsecond); :func:`new_run_dir` makes it unique."""
    return f"{prefix}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S-%f')}"


def new_run_dir(root: str | Path, prefix: str = "run") -> Path:
    """Create and return a new, empty run directory ``root/<new_run_id(prefix)>``.

    The folder is claimed with an exclusive ``mkdir``: two commands started in the same instant (even in
    the same microsecond, on a coarse clock) get different folders (``-2``, ``-3``... appended), never one
    shared run directory."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    base = new_run_id(prefix)
    for n in range(1, 1000):
        path = root / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise InputError(f"cannot create a new run directory under {root}: 999 folders named {base}-N exist",
                     hint="give the run directory explicitly (--out / --run-dir)")


def is_run_dir(path: str | Path) -> bool:
    """A folder medcite wrote a run into: its ``config.json`` (written first, atomically) holds a settings hash."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "settings_hash" in config


def check_run_target(path: str | Path) -> None:
    """Refuse to write a run into a folder of the user's: one that exists, holds files and is not a run directory.

    A missing or empty folder is claimed; an earlier run's folder is resumed (or refused by the caller).
    """
    path = Path(path)
    if not path.is_dir() or is_run_dir(path):
        return
    theirs = sorted(n for n in os.listdir(path) if not (n.startswith(".") and n.endswith(".tmp")) and n != RUN_LOCK)
    if theirs:
        shown = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more" if len(theirs) > 3 else "")
        raise InputError(f"{path} is not empty and is not a medcite run directory (it holds {shown})",
                         hint="give a new or empty folder for --out (it is created), or an earlier run's folder")


class _Claims:
    """The run folders this process holds the lock of (``run.lock``, an exclusive ``flock`` holding the pid:
    :mod:`medcite.locking`), counted: a task holds its folder while the :class:`RunWriter` inside it opens and
    closes it, and ``flock`` locks of one process on two descriptors would shut each other out."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[Path, list[int]] = {}  # folder -> [descriptor, holders]

    def take(self, path: Path) -> Path:
        key = path.resolve()
        with self._guard:
            if key in self._held:
                self._held[key][1] += 1
                return key
            lock = path / RUN_LOCK

            def busy() -> InputError:
                pid = locking.holder_pid(lock)
                return InputError(
                    f"run folder {path} is in use by another medcite (pid {pid if pid is not None else 'unknown'}), "
                    "which writes into it", hint="wait for that command to end and run this one again (it goes on "
                    "where that one stopped, or finds every topic done), or give another --out folder")

            try:
                fd = locking.acquire(lock, 0.0, on_wait=lambda: None, on_timeout=busy)
            except OSError as exc:
                raise write_failure(exc, lock, kept=NOTHING_YET) or exc from exc
            self._held[key] = [-1 if fd is None else fd, 1]
            return key

    def drop(self, key: Path, *, tidy: bool) -> None:
        """One holder less; the last one lets go of the lock (``tidy``: after removing the folder, still locked,
        when it holds nothing but the lock file: a claim that wrote nothing leaves no folder behind)."""
        with self._guard:
            held = self._held.get(key)
            if held is None:
                return
            held[1] -= 1
            if held[1] > 0:
                return
            del self._held[key]
            if tidy:
                with suppress(OSError):
                    if os.listdir(key) == [RUN_LOCK]:
                        os.unlink(key / RUN_LOCK)
                        os.rmdir(key)
            locking.release(None if held[0] < 0 else held[0])


_CLAIMS = _Claims()


@contextmanager
def claim_run_dir(path: str | Path) -> Iterator[Path]:
    """Hold the run folder ``path`` for the block: one medcite writes into a run folder at a time.

    The folder is checked (a name :data:`RUN_ID_RE` allows; new, empty or an earlier run's: :func:`check_run_target`)
    and created, then its lock ``run.lock`` is taken: a second command on the same folder is refused at once,
    naming the pid of the first. A :class:`RunWriter` claims its folder itself; a task claims it around the whole
    run (answers, then the submission). A folder this claim created and left holding nothing is removed again.
    """
    path = Path(path)
    if not RUN_ID_RE.match(path.name):
        raise InputError(
            f"run directory name {path.name!r} is not allowed",
            hint="use letters, digits, '.', '_' and '-' only (at most 128 characters)",
        )
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} exists and is not a folder",
                         hint="give a new folder for --out (it is created), or an earlier run's folder to resume")
    check_run_target(path)
    new = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failure(exc, path, kept=NOTHING_YET) or exc from exc
    key = _CLAIMS.take(path)
    try:
        yield path
    finally:
        _CLAIMS.drop(key, tidy=new)


def topic_json(t: Topic) -> dict[str, object]:
    return {k: v for k, v in asdict(t).items() if v is not None}


def query_json(q: Query) -> dict[str, object]:
    """A query as ``queries.jsonl`` records it: ``stage`` the stage that first produced its text, ``stages`` every
    stage it belongs to (a later stage that gave the same text shares the query)."""
    return {"id": q.id, "text": q.text, "stage": q.stage, "stages": list(q.stages)}


def evidence_json(e: Evidence, rank: int | None = None) -> dict[str, object]:
    d: dict[str, object] = {
        "index": e.index, "pmid": e.pmid, "text": e.text, "section": e.section, "start": e.start,
        "end": e.end, "score": round(float(e.score), 6), "kind": e.kind, "branches": sorted(e.branches),
    }
    if rank is not None:
        d["rank"] = rank
    return d


def answer_json(a: Answer, designs: Mapping[str, StudyDesign] | None = None) -> dict[str, object]:
    """An ``answers.jsonl`` row; with ``designs``, the study design of every cited PMID (``designs``)."""
    words = sum(len(s.text.split()) for s in a.sentences)
    cited = {p: design_json(designs[p]) for p in a.pmids if p in designs} if designs else {}
    return {
        "topic_id": a.topic_id,
        "generator": a.generator,
        "text": a.text,
        "words": words,
        "sentences": [
            {"text": s.text, "pmids": list(s.pmids), "evidence": list(s.evidence),
             "stances": {p: st.value for p, st in s.stances}, **({"kind": s.kind} if s.kind else {})}
            for s in a.sentences
        ],
        "dropped": [asdict(d) for d in a.dropped],
        **({"question_type": a.question_type} if a.question_type else {}),
        **({"verdict": a.verdict} if a.verdict else {}),
        **({"abstained": True} if a.abstained else {}),
        **({"designs": cited} if cited else {}),
    }


def article_json(a: Article, design: StudyDesign | None = None) -> dict[str, object]:
    """An ``articles.jsonl`` row (without its topic id); with ``design``, the article's study design."""
    return {
        "pmid": a.pmid, "title": a.title, "abstract": a.abstract, "journal": a.journal, "year": a.year,
        "sections": [[s.label, s.start, s.end] for s in a.sections],
        "retracted": a.retracted, "doi": a.doi, "publication_types": list(a.publication_types),
        **({"design": design_json(design)} if design is not None else {}),
    }


def _label_json(label: DesignLabel) -> dict[str, object]:
    return {"label": label.name, "source": label.source, "confidence": round(float(label.confidence), 3),
            **({"cue": label.cue} if label.cue else {})}


def design_json(d: StudyDesign) -> dict[str, object]:
    """A study design as the run directory records it: ``{"text", "design": {label, source, confidence, cue?},
    "subjects": [...], "humans"}`` (``text``: how a person reads it; ``medcite.rundir_read.design_from_json``
    reads it back)."""
    return {"text": d.text, "design": _label_json(d.design), "subjects": [_label_json(s) for s in d.subjects],
            "humans": d.humans}


def _jsonl(row: Mapping[str, object]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


class RunWriter:
    """Writes one run directory. Re-opening an existing one resumes it (see :meth:`done_topics`).

    Rows added with :meth:`append` / :meth:`append_trec` are flushed at once and fsynced with the next
    :meth:`write_topic` (before its answer line) or by :meth:`close`; use the writer as a context manager
    when rows may follow the last topic.
    """

    def __init__(self, path: str | Path, settings: Settings, *, command: str = "",
                 extra: dict[str, object] | None = None, resume: bool = True, per_topic: Sequence[str] = ()) -> None:
        """``per_topic``: the task's own per-topic files (beyond :data:`PER_TOPIC_FILES`), repaired alike on resume.
        Holds the folder (:func:`claim_run_dir`) until :meth:`close`: a second writer is refused, naming the pid."""
        self.path = Path(path)
        self._claim: AbstractContextManager[Path] | None = claim_run_dir(self.path)
        self._claim.__enter__()
        try:
            self._open(settings, command, extra, resume, tuple(per_topic))
        except BaseException:
            self._claim.__exit__(None, None, None)
            raise

    def _open(self, settings: Settings, command: str, extra: dict[str, object] | None, resume: bool,
              per_topic: tuple[str, ...]) -> None:
        config_path = self.path / "config.json"
        if config_path.exists() and resume:
            old = json.loads(config_path.read_text(encoding="utf-8"))
            if old.get("settings_hash") != settings.hash():
                raise InputError(
                    f"{self.path} already holds a run with other settings (hash {old.get('settings_hash')})",
                    hint="choose a new --out folder, or rerun with the same preset and --set values to resume",
                )
        if stale := remove_stale_temp_files(self.path):  # an atomic write that a crash interrupted
            log.warning("%s: removed %s left by an interrupted run", self.path, ", ".join(stale))
        self.settings = settings
        self.per_topic = per_topic
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
            fsync_dir(self.path)
        drop_unfinished_topics(self.path, per_topic)
        self._dirty: set[str] = set()  # files with rows flushed but not yet fsynced
        self._names = set(os.listdir(self.path))  # directory entries known to be durable

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def done_topics(self) -> set[str]:
        """Topic ids that already have an answer line (a resumed run skips them)."""
        path = self.path / ANSWERS
        if not path.exists():
            return set()
        with open(path, encoding="utf-8") as fh:
            return {str(json.loads(line)["topic_id"]) for line in fh if line.strip()}

    def append(self, name: str, row: Mapping[str, object]) -> None:
        """Add one JSON line to a per-topic file (fsynced with the next topic or on :meth:`close`)."""
        self._append(name, [_jsonl(row)])
        self._dirty.add(name)

    def append_trec(self, name: str, topic_id: str, hits: Sequence[Hit], tag: str) -> None:
        """Add one topic's ranking to a TREC run file (fsynced with the next topic or on :meth:`close`)."""
        self._append(name, list(format_run({topic_id: hits}, tag)))
        self._dirty.add(name)

    def write_topic(
        self,
        topic: Topic,
        *,
        queries: Iterable[Mapping[str, object]],
        rankings: Mapping[str, Sequence[Hit]],
        evidence: Sequence[Evidence],
        answer: Answer,
        articles: Iterable[Article],
        timings: dict[str, float],
        verification: Mapping[str, object] | None = None,
        notes: Sequence[str] = (),
        designs: Mapping[str, StudyDesign] | None = None,
        read: Sequence[Mapping[str, object]] = (),
    ) -> None:
        """Record everything about one finished topic; answers.jsonl is written last (it marks done).

        ``verification`` (stance checks of citations, loop rounds, grounding details) goes to
        ``verification.jsonl`` when given; ``notes`` (what did not go as configured for the topic's queries: a
        generator left out, a branch that searched the question instead) go with its ``queries.jsonl`` row;
        ``designs`` (PMID -> study design) go with each article's row and with the answer's cited PMIDs; ``read``
        (the top articles the evidence selector read: used, or rejected and why) with its ``evidence.jsonl`` row.

        Every line is made before any file is touched (a value a file cannot hold raises first). Each file
        is then appended to, flushed and fsynced once; the answer line follows only when all of them (and
        the directory entries of new files) are on disk, so a topic with an answer is complete after a crash.
        The trace of the topic's LLM calls must be fsynced before this is called: :func:`medcite.llm.trace.trace_to`
        does so when its block ends.
        """
        tag = f"medcite-{self.settings.preset}"
        batches: list[tuple[str, list[str]]] = [
            ("topics.jsonl", [_jsonl(topic_json(topic))]),
            ("queries.jsonl", [_jsonl({"topic_id": topic.id, "queries": list(queries),
                                       **({"notes": list(notes)} if notes else {})})]),
            *((f"{name}.trec", list(format_run({topic.id: hits}, f"{tag}-{name}"))) for name, hits in rankings.items()),
            ("evidence.jsonl", [_jsonl({"topic_id": topic.id, "evidence": [evidence_json(e) for e in evidence],
                                        **({"read": [dict(r) for r in read]} if read else {})})]),
            ("articles.jsonl", [_jsonl({"topic_id": topic.id, **article_json(a, (designs or {}).get(a.pmid))})
                                for a in articles]),
            ("timings.jsonl", [_jsonl({"topic_id": topic.id, **{k: round(v, 6) for k, v in timings.items()}})]),
            ("verification.jsonl", [_jsonl({"topic_id": topic.id, **verification})] if verification else []),
        ]
        last = _jsonl(answer_json(answer, designs))
        for name, lines in batches:
            if lines or name.endswith(".trec"):  # an empty ranking still names its stage
                self._append(name, lines, sync=True)
                self._dirty.discard(name)
        self.sync()
        self._append(ANSWERS, [last], sync=True)
        self._sync_names()

    def sync(self) -> None:
        """Fsync the files :meth:`append` added rows to, and the directory if it has new entries."""
        for name in sorted(self._dirty):
            with open(self.path / name, "ab") as fh:
                os.fsync(fh.fileno())
        self._dirty.clear()
        self._sync_names()

    def close(self) -> None:
        """Make every row durable, record the devices, and let go of the folder (a second close does nothing)."""
        if self._claim is None:
            return
        try:
            self.sync()
            self.write_devices()
        finally:
            claim, self._claim = self._claim, None
            claim.__exit__(None, None, None)

    def write_devices(self) -> None:
        """Record where the model stages of this process ran (``devices.json``: the machine, what ``auto``
        resolves to there, and per stage the device, dtype and batch size resolved from its settings;
        :mod:`medcite.devices`). Rewritten at each close: a resumed run records the machine it ran on last."""
        from .devices import auto_summary, machine, placements

        stages = placements()
        if not stages:  # no model stage was built (BM25 and LLM-over-HTTP runs): no torch to import
            return
        write_json(self.path / DEVICES, {"machine": machine().describe(), "auto": auto_summary(),
                                         "stages": stages})

    def write_metrics(self, metrics: Mapping[str, object]) -> None:
        write_json(self.path / "metrics.json", metrics)

    def write_summary(self) -> dict[str, object]:
        """Write ``summary.json`` when the run's topics are done: the topics answered and the LLM calls of the
        whole run, resumed sessions included (``llm_calls``: total, from_cache, failed, rejected; counted from
        ``trace.jsonl``). Returns what it wrote."""
        self.sync()
        calls = llm_call_counts(self.path)
        summary: dict[str, object] = {"topics": len(self.done_topics()), "llm_calls": calls}
        write_json(self.path / "summary.json", summary)
        if calls["total"]:
            log.info("%s: %d LLM call(s), %d from the cache, %d failed, %d repl%s rejected", self.path,
                     calls["total"], calls["from_cache"], calls["failed"], calls["rejected"],
                     "y" if calls["rejected"] == 1 else "ies")
        return summary

    def _append(self, name: str, lines: Sequence[str], *, sync: bool = False) -> None:
        try:
            _write_lines(self.path / name, lines, sync)
        except OSError as exc:
            failed = write_failure(exc, self.path / name, kept=RUN_KEPT)
            if failed is None:
                raise
            # back to the state before this topic: its rows (and any torn line) are cut off the files' ends
            try:
                drop_unfinished_topics(self.path, self.per_topic)
            except (OSError, MedciteError):
                log.warning("%s: could not drop the unfinished topic's rows; the next run drops them", self.path)
            raise failed from exc

    def _sync_names(self) -> None:
        names = set(os.listdir(self.path))
        if not names <= self._names:
            fsync_dir(self.path)
        self._names = names


def _write_lines(path: Path, lines: Sequence[str], sync: bool) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(lines)
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def _jsonl_topic(line: bytes) -> str | None:
    """The topic of a JSONL row (``topic_id``, or ``id`` in topics.jsonl); "" when it names none."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict):
        return None
    tid = row.get("topic_id", row.get("id"))
    return "" if tid is None else str(tid)


def _trec_topic(line: bytes) -> str | None:
    parts = line.split()
    return parts[0].decode("utf-8", "replace") if len(parts) == 6 else None


def drop_unfinished_topics(run_dir: str | Path, per_topic: Sequence[str] = ()) -> set[str]:
    """Make a run directory hold only finished topics, each once; returns their ids.

    A topic is finished when ``answers.jsonl`` has its complete answer line. From every per-topic file
    (``<stage>.trec`` and the task's ``per_topic`` files included) this drops the rows of other topics, lines cut
    short (no final newline) and lines that cannot be read; rows that name no topic (an LLM call outside any
    topic) stay. A topic answered more than once (two commands that wrote into one folder at once, before run
    folders were locked) is dropped everywhere too and answered again: which of its rows belong to which answer
    cannot be told. Dropped rows at the end of a file (the usual case: the topic a crash interrupted) are cut off
    in place; others are removed by rewriting the file atomically. Running it twice changes nothing the second time.
    """
    run_dir = Path(run_dir)
    answers = run_dir / ANSWERS
    seen: Counter[str] = Counter()
    if answers.exists():
        with open(answers, "rb") as fh:
            seen.update(t for line in fh if line.endswith(b"\n") and (t := _jsonl_topic(line)))
    twice = {t for t, n in seen.items() if n > 1}
    if twice:
        log.warning("%s: %d topic(s) were answered more than once (%s): their rows are dropped and they are answered "
                    "again", run_dir, len(twice), ", ".join(sorted(twice)[:5]) + (" ..." if len(twice) > 5 else ""))
    _repair(answers, _jsonl_topic, lambda tid: tid != "" and tid not in twice)
    done: set[str] = set()
    if answers.exists():
        with open(answers, "rb") as fh:
            done = {t for line in fh if (t := _jsonl_topic(line))}
    names = [n for n in (*PER_TOPIC_FILES, *per_topic) if n != ANSWERS]
    names += sorted(n for n in os.listdir(run_dir) if n.endswith(".trec"))
    for name in names:
        _repair(run_dir / name, _trec_topic if name.endswith(".trec") else _jsonl_topic,
                lambda tid: tid == "" or tid in done)
    return done


def _repair(path: Path, topic_of: Callable[[bytes], str | None], keep: Callable[[str], bool]) -> None:
    """Drop the lines of ``path`` whose topic (``topic_of``: None when unreadable) ``keep`` rejects."""
    if not path.exists():
        return

    def ok(line: bytes) -> bool:
        if not line.endswith(b"\n"):
            return False
        if not line.strip():
            return True
        tid = topic_of(line)
        return tid is not None and keep(tid)

    cut: int | None = None  # offset of the first dropped line
    dropped = kept_after_cut = 0
    pos = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not ok(line):
                dropped += 1
                cut = pos if cut is None else cut
            elif cut is not None:
                kept_after_cut += 1
            pos += len(line)
    if cut is None:
        return
    log.warning("%s: dropping %d line(s) of unfinished topics or cut short by an interrupted run", path, dropped)
    if not kept_after_cut:
        with open(path, "r+b") as out:
            out.truncate(cut)
            os.fsync(out.fileno())
        return
    with open(path, "rb") as src, atomic_write(path, "wb") as dst:
        dst.writelines(line for line in src if ok(line))
    fsync_dir(path.parent)
