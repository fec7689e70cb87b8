"""TREC run and qrels files (FORMATS.md §6), read with line-exact validation.

- Run: ``qid Q0 docid rank score run_tag`` per line, whitespace-separated, ranks from 1, descending
  score within a query. Pyserini and trec_eval read and write this.
- Qrels: ``qid 0 docid rel`` per line (``rel`` an integer, 0 = judged not relevant).

Errors name the file and line (``InputError(path=..., position="line N")``) and say what was expected.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from .errors import InputError
from .io import atomic_write, open_maybe_gz
from .types import Hit

Run = dict[str, list[Hit]]
Qrels = dict[str, dict[str, int]]

_TAG = re.compile(r"^\S+$")


def check_id(value: str, what: str = "query id") -> None:
    """A TREC id is one non-empty word: whitespace would shift the columns of every line it is on.

    Every writer of run and qrels files (and the topic readers, before any work) checks ids with this.
    """
    if not isinstance(value, str) or not value or any(c.isspace() for c in value) or not value.isprintable():
        raise InputError(
            f"{what} {value!r} is empty or has spaces or control characters; TREC run files cannot hold it",
            hint="ids are one word, e.g. 'q12' or '0001'; rename the topic",
        )


def format_run(run: Mapping[str, Sequence[Hit]], tag: str) -> Iterator[str]:
    """Lines of a run file (with newline). Hits are written in the given order, ranks renumbered from 1."""
    if not _TAG.match(tag):
        raise InputError(f"run tag {tag!r} must be one word without spaces", hint="e.g. --run-tag bm25")
    for qid, hits in run.items():
        check_id(qid)
        for rank, hit in enumerate(hits, start=1):
            check_id(hit.pmid, f"document id of query {qid}")
            yield f"{qid} Q0 {hit.pmid} {rank} {hit.score:.6f} {tag}\n"


def write_run(path: str | Path | IO[str], run: Mapping[str, Sequence[Hit]], tag: str) -> None:
    """Write a TREC run file (atomically when given a path; ``path`` may also be an open text stream)."""
    if hasattr(path, "write"):
        for line in format_run(run, tag):
            path.write(line)  # type: ignore[union-attr]
        return
    lines = list(format_run(run, tag))  # validate everything before the file is touched
    with atomic_write(path) as fh:  # type: ignore[arg-type]
        fh.writelines(lines)


def _float(value: str, path: Path, n: int, what: str) -> float:
    try:
        out = float(value)
    except ValueError:
        raise InputError(f"{what} {value!r} is not a number", path=str(path), position=f"line {n}") from None
    if math.isnan(out):
        raise InputError(f"{what} is NaN", path=str(path), position=f"line {n}")
    return out


def _int(value: str, path: Path, n: int, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{what} {value!r} is not an integer", path=str(path), position=f"line {n}") from None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of a plain or gzip text file; bytes that are not UTF-8 name their line."""
    n = 0
    try:
        with open_maybe_gz(path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):  # noqa: B007 - n is read after the loop on errors
                yield n, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path),
                         position=f"line {n}") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=str(path)) from None


def read_run(path: str | Path) -> Run:
    """Read a run file into ``{qid: [Hit, ...]}`` sorted by descending score (ties: ascending rank).

    Hits keep the file's scores; ranks are renumbered from 1 in that order. A document listed twice for
    one query is an error (trec_eval would silently count it twice).
    """
    path = Path(path)
    rows: dict[str, list[tuple[float, int, str]]] = {}
    seen: set[tuple[str, str]] = set()
    for n, line in _lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise InputError(
                f"expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}: {line.strip()[:80]!r}",
                hint="is this a qrels file? give it as --gold, and the run as --run",
                path=str(path),
                position=f"line {n}",
            )
        qid, _, docid, rank_s, score_s, _tag = parts
        rank = _int(rank_s, path, n, "rank")
        score = _float(score_s, path, n, "score")
        if (qid, docid) in seen:
            raise InputError(
                f"document {docid} appears twice for query {qid}", path=str(path), position=f"line {n}"
            )
        seen.add((qid, docid))
        rows.setdefault(qid, []).append((score, rank, docid))
    out: Run = {}
    for qid, items in rows.items():
        items.sort(key=lambda r: (-r[0], r[1]))
        out[qid] = [Hit(docid, score, i) for i, (score, _, docid) in enumerate(items, start=1)]
    return out


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    for qid, docs in qrels.items():  # every id checked before the file is touched
        check_id(qid)
        for docid in docs:
            check_id(docid, f"document id of query {qid}")
    with atomic_write(path) as fh:
        for qid, docs in qrels.items():
            for docid, rel in docs.items():
                fh.write(f"{qid} 0 {docid} {int(rel)}\n")


def read_qrels(path: str | Path) -> Qrels:
    """Read a qrels file into ``{qid: {docid: rel}}``. Conflicting judgements of one pair are an error."""
    path = Path(path)
    out: Qrels = {}
    for n, line in _lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(
                f"expected 4 columns 'qid 0 docid rel', found {len(parts)}: {line.strip()[:80]!r}",
                hint="is this a run file? give it as --run",
                path=str(path),
                position=f"line {n}",
            )
        qid, _, docid, rel_s = parts
        rel = _int(rel_s, path, n, "relevance")
        docs = out.setdefault(qid, {})
        if docid in docs and docs[docid] != rel:
            raise InputError(
                f"document {docid} of query {qid} is judged both {docs[docid]} and {rel}",
                path=str(path),
                position=f"line {n}",
            )
        docs[docid] = rel
    return out
