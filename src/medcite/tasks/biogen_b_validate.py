"""Validators for BioGen submissions: the official checks plus medcite's own.

Official (2025 Task B, starter kit; 2024, submission page and the official 2024 validator): shape of every line,
≤ 250 words per answer, ≤ 3 PMIDs per sentence (2024: only the first 3 of a bracket count), every PMID in the
corpus; 2024: words counted outside citation brackets, every cited PMID in ``references``, every reference
cited, listed once, no citation bracket where the official parser discards it (FORMATS.md §1). medcite adds:
no empty answers, no empty submission, no duplicate topics, every expected topic present, and (given a run
directory) every cited PMID in that topic's evidence.
Like the official validators, failure means exit code 255 and a ``<file>.errlog`` beside the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..io import JSONObject
from .biogen_b_format import MAX_BRACKET_PMIDS, parse_biogen24_answer

MAX_WORDS = 250
MAX_CITES = MAX_BRACKET_PMIDS
PMID_RE = re.compile(r"^[1-9]\d{0,9}$")
#: an empty submission answers nothing: never valid, whatever else the format allows
NO_ITEMS = "no items: "


@dataclass
class Report:
    path: str
    errors: list[str] = field(default_factory=list)
    topics: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> JSONObject:
        return {"file": self.path, "ok": self.ok, "topics": self.topics, "errors": self.errors}


InCorpus = Callable[[Collection[str]], set[str]]  # returns the subset present in the corpus


def _check_pmids(pmids: Sequence[object], where: str, rep: Report, in_corpus: InCorpus | None,
                 evidence: set[str] | None) -> list[str]:
    good = []
    for p in pmids:
        if not isinstance(p, str) or not PMID_RE.match(p):
            rep.errors.append(f"{where}: citation {p!r} is not a PMID string")
        else:
            good.append(p)
    if in_corpus is not None and good:
        missing = sorted(set(good) - in_corpus(good))
        if missing:
            rep.errors.append(f"{where}: PMIDs not in the corpus: {', '.join(missing)}")
    if evidence is not None:
        unseen = sorted(set(good) - evidence)
        if unseen:
            rep.errors.append(f"{where}: PMIDs not in the evidence shown to the generator: {', '.join(unseen)}")
    return good


def validate_biogen25(path: str | Path, *, in_corpus: InCorpus | None = None,
                      expected_topics: Collection[str] | None = None,
                      evidence: dict[str, set[str]] | None = None) -> Report:
    rep = Report(str(path))
    seen: set[str] = set()
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")  # not splitlines(): a JSON string may hold U+2028
    except (OSError, UnicodeDecodeError) as exc:
        rep.errors.append(f"cannot read the file: {exc}")
        return rep
    if not any(line.strip() for line in lines):
        rep.errors.append(NO_ITEMS + "the file holds no answer lines")
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            rep.errors.append(f"{where}: not valid JSON ({exc.msg})")
            continue
        except RecursionError:
            rep.errors.append(f"{where}: JSON nested too deeply")
            continue
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) and meta.get(k)
                                                 for k in ("team_id", "run_id", "topic_id")):
            rep.errors.append(f"{where}: 'metadata' must hold non-empty strings team_id, run_id, topic_id")
            continue
        tid = meta["topic_id"]
        where = f"line {n} (topic {tid})"
        if tid in seen:
            rep.errors.append(f"{where}: topic appears twice")
        seen.add(tid)
        responses = obj.get("responses")
        if not isinstance(responses, list):
            rep.errors.append(f"{where}: 'responses' must be a list")
            continue
        if not responses:
            rep.errors.append(f"{where}: empty answer")
        words = 0
        for i, r in enumerate(responses, start=1):
            if not (isinstance(r, dict) and isinstance(r.get("text"), str) and isinstance(r.get("citations"), list)):
                rep.errors.append(f"{where} sentence {i}: needs 'text' (string) and 'citations' (list)")
                continue
            if not r["text"].strip():
                rep.errors.append(f"{where} sentence {i}: empty text")
            words += len(r["text"].split())
            if len(r["citations"]) > MAX_CITES:
                rep.errors.append(f"{where} sentence {i}: {len(r['citations'])} citations (at most {MAX_CITES})")
            if len(set(map(str, r["citations"]))) != len(r["citations"]):
                rep.errors.append(f"{where} sentence {i}: a PMID is cited twice")
            _check_pmids(r["citations"], f"{where} sentence {i}", rep, in_corpus,
                         evidence.get(tid) if evidence is not None else None)
        if words > MAX_WORDS:
            rep.errors.append(f"{where}: {words} words (at most {MAX_WORDS})")
    rep.topics = len(seen)
    if expected_topics is not None:
        missing = sorted(set(map(str, expected_topics)) - seen, key=lambda x: (len(x), x))
        if missing:
            rep.errors.append(f"topics without an answer: {', '.join(missing)}")
    return rep


def validate_biogen24(path: str | Path, *, in_corpus: InCorpus | None = None,
                      expected_topics: Collection[str] | None = None,
                      evidence: dict[str, set[str]] | None = None,
                      max_words: int = MAX_WORDS, max_sentences: int | None = None) -> Report:
    """Check a 2024 submission; the answer string is read by
    :func:`~medcite.tasks.biogen_b_format.parse_biogen24_answer`, the same grammar the writer follows, so whatever
    ``write_biogen24`` writes from a valid answer passes.

    The official 2024 validator's own caps are 150 words and 10 sentences (its defaults); medcite's answers
    are capped at ``max_words`` = 250 like 2025's, so pass ``max_words=150, max_sentences=10`` for those.
    """
    rep = Report(str(path))
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        rep.errors.append(f"cannot read the file as JSON: {type(exc).__name__}: {exc}")
        return rep
    if not isinstance(data, dict):
        rep.errors.append("the file must hold one JSON object")
        return rep
    for key in ("team_id", "run_name", "contact_email"):
        if not isinstance(data.get(key), str) or not data.get(key):
            rep.errors.append(f"'{key}' must be a non-empty string")
    results = data.get("results")
    if not isinstance(results, list):
        rep.errors.append("'results' must be a list")
        return rep
    if not results:
        rep.errors.append(NO_ITEMS + "'results' is an empty list")
    seen: set[str] = set()
    for n, res in enumerate(results, start=1):
        if not isinstance(res, dict):
            rep.errors.append(f"result {n}: must be an object")
            continue
        tid = str(res.get("topic_id", ""))
        where = f"result {n} (topic {tid})"
        if not tid or tid in seen:
            rep.errors.append(f"{where}: missing or repeated topic_id")
        seen.add(tid)
        answer, refs = res.get("answer"), res.get("references")
        if not isinstance(answer, str) or not isinstance(refs, list):
            rep.errors.append(f"{where}: needs 'answer' (string) and 'references' (list)")
            continue
        if not answer.strip():
            rep.errors.append(f"{where}: empty answer")
        parsed = parse_biogen24_answer(answer)
        if parsed.words > max_words:
            rep.errors.append(f"{where}: {parsed.words} words outside citation brackets (at most {max_words})")
        if max_sentences is not None and len(parsed.sentences) > max_sentences:
            rep.errors.append(f"{where}: {len(parsed.sentences)} sentences (at most {max_sentences})")
        for i, sentence in enumerate(parsed.sentences, start=1):
            for b in sentence.brackets:
                bracket = answer[b.start:b.end]
                if b.discarded:
                    rep.errors.append(f"{where} sentence {i}: citation {bracket} is discarded by the official "
                                      f"parser: {b.discarded}")
                elif len(b.pmids) > MAX_CITES:
                    rep.errors.append(f"{where} sentence {i}: {bracket} cites {len(b.pmids)} PMIDs "
                                      f"(only the first {MAX_CITES} count)")
        cited = parsed.cited
        refs_s = [str(r) for r in refs]
        if len(set(refs_s)) != len(refs_s):
            rep.errors.append(f"{where}: a reference is listed twice")
        for p in sorted(set(cited) - set(refs_s)):
            rep.errors.append(f"{where}: PMID {p} is cited but not in references")
        for p in sorted(set(refs_s) - set(cited)):
            rep.errors.append(f"{where}: reference {p} is never cited")
        _check_pmids(refs_s, where, rep, in_corpus, evidence.get(tid) if evidence is not None else None)
    rep.topics = len(seen)
    if expected_topics is not None:
        missing = sorted(set(map(str, expected_topics)) - seen)
        if missing:
            rep.errors.append(f"topics without an answer: {', '.join(missing)}")
    return rep


def write_errlog(report: Report) -> Path | None:
    """Write ``<file>.errlog`` (as the official validators do) when there are errors; remove a stale one."""
    errlog = Path(report.path + ".errlog")
    if report.ok:
        errlog.unlink(missing_ok=True)
        return None
    errlog.write_text("\n".join(report.errors) + "\n", encoding="utf-8")
    return errlog


def evidence_by_topic(run_dir: str | Path) -> dict[str, set[str]]:
    """PMIDs shown to the generator per topic, from a run directory's evidence.jsonl."""
    out: dict[str, set[str]] = {}
    path = Path(run_dir) / "evidence.jsonl"
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        row = json.loads(line)
                        out[str(row["topic_id"])] = {str(e["pmid"]) for e in row["evidence"]}
                    except (ValueError, RecursionError, KeyError, TypeError) as exc:
                        raise InputError(f"not an evidence row ({type(exc).__name__})", path=str(path),
                                         position=f"line {n}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it ({exc})", path=str(path)) from None
    return out
