"""BioASQ Task b (Phase A, A+, B): read questions and system files, write and validate submissions.

Formats: FORMATS.md §5; docs/BIOASQ.md says how every variant is read, which rules are BioASQ's and which are
medcite's.

- :func:`read_questions` reads inputs and gold files (``.json`` or ``.json.gz``) into :class:`~medcite.types.Question`
  objects, accepting every variant BioASQ has shipped; bad input raises :class:`~medcite.errors.InputError`
  naming the file and the question.
- :func:`read_phase_a_run` / :func:`read_phase_b_run` read system files (a submission, or a gold file used as
  one) leniently, as the official evaluator does, for ``medcite eval bioasq``.
- :func:`write_phase_a` / :func:`write_phase_b` write submissions atomically, after every rule is checked.
- :func:`validate_phase_a` / :func:`validate_phase_b` collect every violation into a :class:`BioASQReport`.

PMIDs are bare digit strings inside medcite; files carry ``http://www.ncbi.nlm.nih.gov/pubmed/<PMID>``.
Positions in messages are JSON paths: ``questions[i]`` (from 0), then ``(id ...)`` once the id is known.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..evaluate.bioasq import MAX_FACTOID, yesno_label
from ..io import JSONObject, open_maybe_gz, write_json
from ..types import QUESTION_TYPES, QAAnswer, Question, Snippet
from .biogen_b_validate import Report

log = logging.getLogger(__name__)
Fail = Callable[..., InputError]  # (message, hint=None) -> the error to raise, naming the file and the question

DOC_URL = "http://www.ncbi.nlm.nih.gov/pubmed/"
MAX_DOCUMENTS = 10
MAX_SNIPPETS = 10
IDEAL_WORDS = 200  # BioASQ's guidance for an ideal answer ("up to about 200 words"): a warning, not an error
SECTIONS = ("title", "abstract")

_PMID = re.compile(r"(?:https?://(?:www\.)?ncbi\.nlm\.nih\.gov/pubmed/|https?://pubmed\.ncbi\.nlm\.nih\.gov/)?"
                   r"(\d{1,12})/?")
_DOC_URL = re.compile(re.escape(DOC_URL) + r"[1-9]\d{0,11}")
_DOC_HINT = f"give each document as {DOC_URL}<PMID> (or, in an input file, a bare PMID)"
_SNIPPET_HINT = ('a snippet is {"document": URL, "text": ..., "beginSection": "abstract", "offsetInBeginSection": 0, '
                 '"endSection": "abstract", "offsetInEndSection": 12}')


def pmid_of(value: object) -> str | None:
    """A PubMed URL or a bare PMID (string or integer) as the bare PMID ``str(int(...))``; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    m = _PMID.fullmatch(value.strip())
    if m is None or int(m.group(1)) == 0:
        return None
    return str(int(m.group(1)))


def doc_url(pmid: str) -> str:
    return DOC_URL + pmid


# ---- reading ----------------------------------------------------------------------------------------------


class _Reader:
    """Raises InputError naming the file and the question being read."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def fail(self, where: str | None, message: str, hint: str | None = None) -> InputError:
        return InputError(message, hint, path=self.path, position=where)

    def load(self) -> list[Any]:
        """The ``questions`` list of a BioASQ JSON(.gz) file."""
        try:
            with open_maybe_gz(self.path) as fh:
                data = json.load(fh)
        except FileNotFoundError:
            raise self.fail(None, "no such file", "check the path") from None
        except json.JSONDecodeError as exc:
            raise self.fail(f"line {exc.lineno}, column {exc.colno}", f"not valid JSON ({exc.msg})",
                            'a BioASQ file is one JSON object {"questions": [...]}') from None
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise self.fail(None, f"cannot read the file as UTF-8 JSON (or gzip of it): {exc}",
                            "give BioASQ JSON, plain or gzip-compressed") from None
        if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
            raise self.fail(None, 'the file is not BioASQ JSON: no "questions" list at the top level',
                            'a BioASQ file is one JSON object {"questions": [{"id": ..., "body": ...}, ...]}')
        if not data["questions"]:
            raise self.fail(None, "the questions list is empty", "give at least one question")
        return list(data["questions"])

    def question_id(self, raw: object, i: int) -> str:
        where = f"questions[{i}]"
        if not isinstance(raw, dict):
            raise self.fail(where, f"a question must be a JSON object, got {type(raw).__name__}",
                            'e.g. {"id": "...", "type": "yesno", "body": "..."}')
        qid = raw.get("id")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid.strip():
            raise self.fail(where, "the question has no 'id'", "give every question a unique string 'id'")
        return qid.strip()

    def questions(self) -> list[tuple[str, str, JSONObject]]:
        """(position, id, object) of every question, once every id is known to be present and unique."""
        items = self.load()
        ids = [self.question_id(raw, i) for i, raw in enumerate(items)]
        seen: dict[str, int] = {}
        for i, qid in enumerate(ids):
            if qid in seen:
                raise self.fail(f"questions[{i}] (id {qid})", f"id {qid} appears twice (also questions[{seen[qid]}])",
                                "each question id must be unique: remove or rename the repeat")
            seen[qid] = i
        return [(f"questions[{i}] (id {qid})", qid, raw) for i, (qid, raw) in enumerate(zip(ids, items, strict=True))]

    def documents(self, value: object, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(where, "'documents' must be a list", _DOC_HINT)
        out: dict[str, None] = {}  # a repeated document is read once, as the official reader does
        for k, doc in enumerate(value):
            pmid = pmid_of(doc)
            if pmid is None:
                raise self.fail(where, f"documents[{k}] {doc!r} is not a PubMed URL or PMID", _DOC_HINT)
            out.setdefault(pmid, None)
        return tuple(out)

    def snippets(self, value: object, where: str) -> tuple[Snippet, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(where, "'snippets' must be a list of snippet objects", _SNIPPET_HINT)
        return tuple(self.snippet(s, f"{where} snippets[{k}]") for k, s in enumerate(value))

    def snippet(self, raw: object, where: str) -> Snippet:
        if not isinstance(raw, dict):
            raise self.fail(where, "a snippet must be a JSON object", _SNIPPET_HINT)
        if "document" not in raw:
            raise self.fail(where, "the snippet has no 'document'", "name the snippet's article: " + _DOC_HINT)
        pmid = pmid_of(raw["document"])
        if pmid is None:
            raise self.fail(where, f"the snippet's document {raw['document']!r} is not a PubMed URL or PMID",
                            _DOC_HINT)
        text = raw.get("text", "")
        if not isinstance(text, str):
            raise self.fail(where, "the snippet's 'text' must be a string", _SNIPPET_HINT)
        begin_section = self.section(raw, "beginSection", where)
        end_section = self.section(raw, "endSection", where)
        begin = self.offset(raw, "offsetInBeginSection", where)
        end = self.offset(raw, "offsetInEndSection", where)
        if begin_section == end_section and end < begin:
            raise self.fail(where, f"offsetInEndSection {end} is before offsetInBeginSection {begin}",
                            "offsets are character offsets into the section; the end comes after the begin")
        return Snippet(pmid, text, begin_section, begin, end_section, end)

    def section(self, raw: JSONObject, key: str, where: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"the snippet has no '{key}'", f"'{key}' is 'title' or 'abstract'")
        return normalize_section(value)

    def offset(self, raw: JSONObject, key: str, where: str) -> int:
        """An integer offset. Negative ones are read as given: BioASQ's own gold files hold a few title snippets
        with ``offsetInBeginSection`` -1, which the official evaluator scores as they are."""
        value = raw.get(key)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(where, f"'{key}' must be an integer, got {value!r}",
                            "offsets are character offsets into the title or the abstract")
        return value


def normalize_section(name: str) -> str:
    """``title``/``abstract`` (any case), and ``sections.0`` of older files as ``abstract`` (the official
    ``Snippet.overlap`` matches "0" with "abstract"); any other name is kept as given (it overlaps nothing)."""
    low = name.strip().lower()
    if low in SECTIONS:
        return low
    if low in ("sections.0", "0"):
        return "abstract"
    return name.strip()


def _ideal(value: object, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise fail("'ideal_answer' must be a string or a list of strings", 'e.g. "ideal_answer": ["One paragraph."]')
    return tuple(s.strip() for s in items if s.strip())


def _names(value: list[object], fail: Fail) -> tuple[str, ...]:
    names = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise fail(f"an exact answer must hold strings, got {v!r}", 'e.g. [["BRCA1", "breast cancer 1"], ["TP53"]]')
        if str(v).strip():
            names.append(str(v).strip())
    return tuple(names)


def _exact(value: object, qtype: str, fail: Fail) -> str | tuple[tuple[str, ...], ...] | None:
    """A gold exact answer in one shape: "yes"/"no", or one tuple of synonyms per entity (module docs)."""
    if value is None or qtype == "summary":
        return None
    if qtype == "yesno":
        while isinstance(value, list) and len(value) == 1:  # ["yes"] or [["yes"]] in a few files
            value = value[0]
        label = yesno_label(value)
        if label is None:
            raise fail(f"the yes/no exact_answer {value!r} says neither yes nor no", 'write "yes" or "no"')
        return label
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        names = _names([value], fail)
        return (names,) if names else None
    if not isinstance(value, list):
        raise fail(f"'exact_answer' must be a list of synonym lists, got {type(value).__name__}",
                   'e.g. [["BRCA1", "breast cancer 1"], ["TP53"]]')
    if qtype == "factoid" and value and not any(isinstance(v, list) for v in value):
        names = _names(value, fail)  # a flat factoid list: the synonyms of one answer (BioASQ1-2)
        return (names,) if names else None
    entities = []
    for item in value:
        if isinstance(item, list):
            if any(isinstance(v, list) for v in item):
                raise fail("'exact_answer' nests lists more than two deep", 'e.g. [["BRCA1", "breast cancer 1"]]')
            names = _names(item, fail)
        else:
            names = _names([item], fail)  # a flat list item is one entity with one name
        if names:
            entities.append(names)
    return tuple(entities) or None


def read_questions(path: str | Path) -> list[Question]:
    """Every question of a BioASQ input or gold file (plain or gzip JSON), in file order.

    Required: ``id``, ``body``, ``type`` (one of yesno, factoid, list, summary; also in Phase A inputs, where a
    question without a type is an error: its exact answer in Phase A+ depends on it). Optional: ``documents``
    (URLs or PMIDs), ``snippets``, ``ideal_answer``, ``exact_answer`` in every shape docs/BIOASQ.md lists.
    """
    reader = _Reader(path)
    out = []
    for where, qid, raw in reader.questions():
        fail = partial(reader.fail, where)
        body = raw.get("body")
        if not isinstance(body, str) or not body.strip():
            raise fail("the question has no 'body'", "give the question's text in 'body'")
        qtype = raw.get("type")
        if not isinstance(qtype, str) or not qtype.strip():
            raise fail("the question has no 'type'", f"add 'type': one of {', '.join(QUESTION_TYPES)}")
        qtype = qtype.strip().lower()
        if qtype not in QUESTION_TYPES:
            raise fail(f"unknown type {raw['type']!r}", f"'type' is one of {', '.join(QUESTION_TYPES)}")
        out.append(Question(
            id=qid, type=qtype, body=body.strip(),
            documents=reader.documents(raw.get("documents"), where),
            snippets=reader.snippets(raw.get("snippets"), where),
            ideal_answers=_ideal(raw.get("ideal_answer"), fail),
            exact_answer=_exact(raw.get("exact_answer"), qtype, fail),
        ))
    return out


def read_phase_a_run(path: str | Path) -> list[Question]:
    """A system's Phase A (or A+) file: each question's ranked documents and snippets.

    Only ``id`` is required; ``type`` and ``body`` are kept when present (else empty strings), everything
    else is ignored. A gold file reads as a perfect run.
    """
    reader = _Reader(path)
    out = []
    for where, qid, raw in reader.questions():
        qtype, body = raw.get("type"), raw.get("body")
        out.append(Question(qid, qtype if isinstance(qtype, str) else "", body if isinstance(body, str) else "",
                            reader.documents(raw.get("documents"), where), reader.snippets(raw.get("snippets"), where)))
    return out


def read_phase_b_run(path: str | Path) -> list[QAAnswer]:
    """A system's Phase B (or A+) answers, read as the official evaluator reads them (since BioASQ5).

    ``exact_answer``: a string stays a string (yes/no); a list becomes the first string of each inner list
    (a bare string item counts as itself), as synonyms in submissions are ignored. ``ideal_answer``: a string,
    or the first string of a list. A gold file reads as a perfect run.
    """
    reader = _Reader(path)
    out = []
    for where, qid, raw in reader.questions():
        exact: str | tuple[str, ...] | None
        value = raw.get("exact_answer")
        if value is None or isinstance(value, str):
            exact = value
        elif isinstance(value, list):
            firsts = [v[0] if isinstance(v, list) and v else v for v in value]
            exact = tuple(str(v) for v in firsts if isinstance(v, str | int | float) and not isinstance(v, bool))
        else:
            raise reader.fail(where, f"'exact_answer' must be a string or a list, got {type(value).__name__}",
                              '"yes"/"no", or a list like [["a"], ["b"]]')
        ideal = raw.get("ideal_answer")
        if isinstance(ideal, list):
            ideal = next((s for s in ideal if isinstance(s, str)), "")
        out.append(QAAnswer(qid, exact, ideal if isinstance(ideal, str) else ""))
    return out


# ---- validating -------------------------------------------------------------------------------------------


@dataclass
class BioASQReport(Report):
    """A :class:`~medcite.tasks.biogen_b_validate.Report` (``topics`` counts questions) with warnings: things BioASQ
    accepts that probably are mistakes (an ideal answer over 200 words, a question left without an answer)."""

    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> JSONObject:
        return {**super().as_dict(), "questions": self.topics, "warnings": self.warnings}


def _expected(inputs: str | Path | Sequence[Question] | None) -> dict[str, str] | None:
    if inputs is None:
        return None
    questions = read_questions(inputs) if isinstance(inputs, str | Path) else inputs
    return {q.id: q.type for q in questions}


def validate_phase_a(path: str | Path, *, inputs: str | Path | Sequence[Question] | None = None) -> BioASQReport:
    """Check a Phase A submission; ``inputs`` (the input file or its questions): every one answered once, no
    other id."""
    rep = BioASQReport(str(path))
    data = _load_for_report(path, rep)
    if data is not None:
        _check(data, "A", _expected(inputs), rep)
    return rep


def validate_phase_b(path: str | Path, *, inputs: str | Path | Sequence[Question] | None = None) -> BioASQReport:
    """Check a Phase B or A+ submission (an A+ file's optional documents and snippets get Phase A's checks).

    Question types come from ``inputs``, else from each question's own ``type``, else from the answer's shape.
    """
    rep = BioASQReport(str(path))
    data = _load_for_report(path, rep)
    if data is not None:
        _check(data, "B", _expected(inputs), rep)
    return rep


def _load_for_report(path: str | Path, rep: Report) -> object:
    try:
        with open_maybe_gz(path) as fh:
            return json.load(fh)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        rep.errors.append(f"cannot read the file as JSON: {exc}")
        return None


def _check(data: object, phase: str, expected: Mapping[str, str] | None, rep: BioASQReport) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        rep.errors.append('the file must hold one JSON object {"questions": [...]}')
        return
    if not data["questions"]:
        rep.errors.append("the questions list is empty")
    seen: dict[str, int] = {}
    for i, q in enumerate(data["questions"]):
        where = f"questions[{i}]"
        qid = q.get("id") if isinstance(q, dict) else None
        if not isinstance(q, dict) or not isinstance(qid, str) or not qid.strip():
            rep.errors.append(f"{where}: each question must be an object with a string 'id'")
            continue
        where += f" (id {qid})"
        if qid in seen:
            rep.errors.append(f"{where}: answered twice (also questions[{seen[qid]}])")
            continue
        seen[qid] = i
        if expected is not None and qid not in expected:
            rep.errors.append(f"{where}: not a question of the input")
        if phase == "A":
            _check_retrieval(q, where, rep, required=True)
            continue
        qtype = expected.get(qid) if expected is not None else q.get("type")
        _check_answer(q, qtype if qtype in QUESTION_TYPES else None, where, rep)
        if "documents" in q or "snippets" in q:  # Phase A+
            _check_retrieval(q, where, rep, required=False)
    rep.topics = len(seen)
    if expected is not None:
        missing = [qid for qid in expected if qid not in seen]
        if missing:
            more = f", and {len(missing) - 10} more" if len(missing) > 10 else ""
            rep.errors.append(f"{len(missing)} input questions without an answer: {', '.join(missing[:10])}{more}")


def _check_retrieval(q: JSONObject, where: str, rep: BioASQReport, *, required: bool) -> None:
    docs = q.get("documents")
    if docs is None:
        if required:
            rep.warnings.append(f"{where}: no 'documents' (scored as an empty list)")
    elif not isinstance(docs, list):
        rep.errors.append(f"{where}: 'documents' must be a list")
    else:
        if len(docs) > MAX_DOCUMENTS:
            rep.errors.append(f"{where}: {len(docs)} documents (at most {MAX_DOCUMENTS})")
        for k, d in enumerate(docs):
            if not isinstance(d, str) or not _DOC_URL.fullmatch(d):
                rep.errors.append(f"{where} documents[{k}]: {d!r} is not {DOC_URL}<PMID>")
        if len({json.dumps(d) for d in docs}) != len(docs):
            rep.errors.append(f"{where}: a document is listed twice")
    snippets = q.get("snippets")
    if snippets is None:
        if required:
            rep.warnings.append(f"{where}: no 'snippets' (scored as an empty list)")
        return
    if not isinstance(snippets, list):
        rep.errors.append(f"{where}: 'snippets' must be a list")
        return
    if len(snippets) > MAX_SNIPPETS:
        rep.errors.append(f"{where}: {len(snippets)} snippets (at most {MAX_SNIPPETS})")
    for k, s in enumerate(snippets):
        _check_snippet(s, f"{where} snippets[{k}]", rep)


def _check_snippet(s: object, where: str, rep: BioASQReport) -> None:
    if not isinstance(s, dict):
        rep.errors.append(f"{where}: a snippet must be an object")
        return
    n = len(rep.errors)
    doc = s.get("document")
    if not isinstance(doc, str) or not _DOC_URL.fullmatch(doc):
        rep.errors.append(f"{where}: document {doc!r} is not {DOC_URL}<PMID>")
    text = s.get("text")
    if not isinstance(text, str):
        rep.errors.append(f"{where}: 'text' must be a string")
    elif not text.strip():
        rep.warnings.append(f"{where}: empty text")
    for key in ("beginSection", "endSection"):
        if s.get(key) not in SECTIONS:
            rep.errors.append(f"{where}: {key} {s.get(key)!r} is not 'title' or 'abstract'")
    offsets = []
    for key in ("offsetInBeginSection", "offsetInEndSection"):
        value = s.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            rep.errors.append(f"{where}: {key} {value!r} is not a non-negative integer")
        else:
            offsets.append(value)
    if len(rep.errors) > n:
        return
    if s["beginSection"] != s["endSection"]:
        rep.errors.append(f"{where}: begins in the {s['beginSection']} and ends in the {s['endSection']} "
                          "(a snippet lies within one section)")
    elif offsets[1] < offsets[0]:
        rep.errors.append(f"{where}: offsetInEndSection {offsets[1]} is before offsetInBeginSection {offsets[0]}")
    elif isinstance(text, str) and offsets[1] - offsets[0] != len(text):
        rep.warnings.append(f"{where}: the offsets span {offsets[1] - offsets[0]} characters but the text has "
                            f"{len(text)} (offsetInEndSection is exclusive in BioASQ's files)")


def _check_answer(q: JSONObject, qtype: str | None, where: str, rep: BioASQReport) -> None:
    ideal = q.get("ideal_answer")
    if ideal is None:
        rep.warnings.append(f"{where}: no ideal_answer (ROUGE scores it 0)")
    elif not isinstance(ideal, str):
        rep.errors.append(f"{where}: 'ideal_answer' must be one string (a paragraph), got {type(ideal).__name__}")
    else:
        words = len(ideal.split())
        if words == 0:
            rep.warnings.append(f"{where}: empty ideal_answer")
        elif words > IDEAL_WORDS:
            rep.warnings.append(f"{where}: ideal_answer has {words} words (BioASQ asks for at most about "
                                f"{IDEAL_WORDS})")
    exact = q.get("exact_answer")
    if qtype is None:  # no type known: judge by the shape
        qtype = "yesno" if isinstance(exact, str) else "list" if isinstance(exact, list) else "summary"
    if qtype == "summary":
        if exact not in (None, "", []):
            rep.warnings.append(f"{where}: a summary question takes no exact_answer (it is ignored)")
        return
    if exact is None:
        rep.warnings.append(f"{where}: no exact_answer for this {qtype} question (scored 0)")
        return
    if qtype == "yesno":
        if exact not in ("yes", "no"):
            rep.errors.append(f"{where}: exact_answer {exact!r} must be exactly \"yes\" or \"no\" (the evaluator "
                              "lowercases it and looks for 'yes', then 'no', anywhere in it)")
        return
    if not isinstance(exact, list):
        rep.errors.append(f"{where}: exact_answer must be a list of one-string lists, e.g. [[\"a\"], [\"b\"]]")
        return
    if qtype == "factoid" and len(exact) > MAX_FACTOID:
        rep.errors.append(f"{where}: {len(exact)} factoid candidates (at most {MAX_FACTOID})")
    if not exact:
        rep.warnings.append(f"{where}: empty exact_answer (scored 0)")
    for k, item in enumerate(exact):
        if not isinstance(item, list):
            rep.errors.append(f"{where} exact_answer[{k}]: {item!r} must be an inner list, e.g. [{json.dumps(item)}]")
        elif not item or not all(isinstance(v, str) for v in item) or not item[0].strip():
            rep.errors.append(f"{where} exact_answer[{k}]: an inner list holds one non-empty string")
        elif len(item) > 1:
            rep.warnings.append(f"{where} exact_answer[{k}]: only the first string is read (synonyms in "
                                "submissions are ignored since BioASQ5)")


# ---- writing ----------------------------------------------------------------------------------------------


def _snippet_json(s: Snippet) -> JSONObject:
    return {"document": doc_url(s.pmid), "text": s.text, "beginSection": s.begin_section,
            "offsetInBeginSection": s.begin_offset, "endSection": s.end_section, "offsetInEndSection": s.end_offset}


def _retrieval_json(q: Question) -> JSONObject:
    """The first 10 documents and the first 10 snippets of a ranked result."""
    return {"documents": [doc_url(p) for p in q.documents[:MAX_DOCUMENTS]],
            "snippets": [_snippet_json(s) for s in q.snippets[:MAX_SNIPPETS]]}


def _write(path: str | Path, data: JSONObject, rep: BioASQReport, what: str) -> None:
    """Write ``data`` atomically if ``rep`` found no error; otherwise raise, leaving no file behind."""
    if rep.errors:
        shown = "; ".join(rep.errors[:5]) + (f"; and {len(rep.errors) - 5} more" if len(rep.errors) > 5 else "")
        raise InputError(f"refusing to write an invalid {what}: {shown}",
                         "fix the results passed to the writer; nothing was written", path=str(path))
    for w in rep.warnings:
        log.warning("%s: %s", path, w)
    write_json(path, data)


def write_phase_a(path: str | Path, results: Sequence[Question]) -> None:
    """Write a Phase A submission: per question its first 10 ``documents`` (as PubMed URLs) and first 10
    ``snippets``, in the order given (the ranking). Checked first (sections, offsets, PMIDs, repeats, ids);
    written atomically."""
    data = {"questions": [{"id": q.id, **_retrieval_json(q)} for q in results]}
    rep = BioASQReport(str(path))
    _check(data, "A", None, rep)
    _write(path, data, rep, "Phase A submission")


def _exact_json(a: QAAnswer, qtype: str | None) -> tuple[bool, object]:
    """(whether to write exact_answer, its JSON) for an answer of type ``qtype`` (None: by its shape)."""
    if qtype == "summary" or a.exact is None:
        return False, None
    if isinstance(a.exact, str) and qtype in (None, "yesno"):
        return True, a.exact.strip().lower()
    items = [a.exact] if isinstance(a.exact, str) else list(a.exact)
    return True, [[item.strip() if isinstance(item, str) else item] for item in items]


def write_phase_b(path: str | Path, answers: Sequence[QAAnswer], *, questions: Sequence[Question] | None = None,
                  retrieved: Sequence[Question] | None = None) -> None:
    """Write a Phase B submission, or Phase A+ with ``retrieved`` (each question's own ranked documents and
    snippets, the first 10 of each written beside its answer).

    Per answer: ``id``, ``ideal_answer`` (the string), ``exact_answer`` by type: ``"yes"``/``"no"``; factoid
    ``[["a"], ["b"]]`` (at most 5); list ``[["a"], ...]``; none for summary. ``questions`` (the input) gives
    the types and requires every input question to be answered exactly once; without it the type is read from
    the answer's shape. Every rule is checked before anything is written; the write is atomic.
    """
    types = {q.id: q.type for q in questions} if questions is not None else None
    extra = {q.id: q for q in retrieved or ()}
    entries = []
    for a in answers:
        entry: JSONObject = {"id": a.question_id, "ideal_answer": a.ideal}
        write, exact = _exact_json(a, types.get(a.question_id) if types is not None else None)
        if write:
            entry["exact_answer"] = exact
        if a.question_id in extra:
            entry.update(_retrieval_json(extra[a.question_id]))
        entries.append(entry)
    data = {"questions": entries}
    rep = BioASQReport(str(path))
    _check(data, "B", types, rep)
    _write(path, data, rep, "Phase A+ submission" if retrieved is not None else "Phase B submission")
