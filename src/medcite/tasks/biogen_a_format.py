"""TREC BioGen 2025 Task A (grounding an answer's sentences): read the input, write and validate the submission.

Formats: FORMATS.md §2; docs/TASK_A.md says which rules are the track's (and where they were read) and which
are medcite's.

- :func:`read_task_a` reads the official input (a JSON list or JSONL; ``metadata`` or the kit's ``meta_data``).
- :func:`write_task_a` writes the official submission: UTF-8 JSONL, one object per question-answer pair,
  sentence order and text exactly the input's, one PMID type throughout, written atomically after every rule
  is checked.
- :func:`validate_task_a` checks a submission like the official ``task_a_validation.py`` plus medcite's checks,
  collecting every error into a :class:`~medcite.tasks.biogen_b_validate.Report` (``write_errlog`` writes the
  ``.errlog``).
- :func:`read_task_a_run` reads any submission leniently, as the official scorer does, for ``medcite eval``.

PMIDs are bare digit strings inside medcite. Positions in messages are JSON paths: ``line N`` (JSONL, from 1)
or ``item [i]`` (JSON list, from 0), then ``answer[j]`` (from 0, the sentence's index in the input).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError, InputError
from ..io import JSONObject, atomic_write, open_maybe_gz
from .biogen_b_validate import PMID_RE, Report

MAX_NEW_PMIDS = 3  # "no more than three PMIDs per answer sentence for both supporting and contradicting" (guidelines)
#: the qa_ids the official 2025 validator requires (``REQUIRED_QA_IDS``, 116 to 155)
OFFICIAL_QA_IDS_2025: frozenset[str] = frozenset(str(i) for i in range(116, 156))
PmidType = Literal["str", "int"]
InCorpus = Callable[[Collection[str]], set[str]]  # returns the subset present in the corpus

_PMID_HINT = "a PMID is a positive integer or a string of digits, e.g. 31234567 or \"31234567\""


@dataclass(frozen=True, slots=True)
class GroundingSentence:
    """One answer sentence of the input: its exact text and the PMIDs already given as its support."""

    text: str
    existing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GroundingItem:
    """One question-answer pair of the input; ``metadata`` is the input's metadata object as read."""

    qa_id: str
    question: str
    sentences: tuple[GroundingSentence, ...]
    metadata: JSONObject = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class GroundedSentence:
    """A sentence with the new PMIDs found for it: at most 3 supporting (none already in ``existing``) and at
    most 3 contradicting."""

    text: str
    existing: tuple[str, ...] = ()
    supported: tuple[str, ...] = ()
    contradicted: tuple[str, ...] = ()

    @classmethod
    def of(cls, sentence: GroundingSentence, supported: Iterable[str] = (),
           contradicted: Iterable[str] = ()) -> GroundedSentence:
        """The result for an input sentence: its text and existing PMIDs carried over unchanged."""
        return cls(sentence.text, sentence.existing, tuple(supported), tuple(contradicted))


def pmid_str(value: object) -> str | None:
    """A PMID as a bare digit string (``31234567`` or ``"31234567"``); None when ``value`` is not a PMID."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if value > 0 else None
    if isinstance(value, str) and PMID_RE.fullmatch(value):
        return value
    return None


# ---- loading a JSON list or JSONL file --------------------------------------------------------------------


class _BadFile(Exception):
    def __init__(self, message: str, hint: str | None = None, position: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint, self.position = message, hint, position

    def as_input_error(self, path: Path) -> InputError:
        return InputError(self.message, self.hint, path=str(path), position=self.position)

    def line(self) -> str:
        return f"{self.position}: {self.message}" if self.position else self.message


def _load(path: Path) -> list[tuple[str, object]]:
    """Every top-level item of a JSON list or a JSONL file, with its position."""
    try:
        with open_maybe_gz(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        raise _BadFile("no such file") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise _BadFile(f"cannot read the file as UTF-8 text: {exc}") from None
    head = text.lstrip()
    if not head:
        raise _BadFile("the file is empty", hint="give a JSON list of items or JSONL, one item per line")
    if head[0] == "[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _BadFile(f"not valid JSON ({exc.msg})", position=f"line {exc.lineno}, column {exc.colno}") from None
        except RecursionError:
            raise _BadFile("JSON nested too deeply to be a list of items") from None
        return [(f"item [{i}]", obj) for i, obj in enumerate(data)]
    rows = []
    # split on "\n" only: str.splitlines() also cuts at U+2028/U+0085, which JSON strings may hold unescaped
    for n, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((f"line {n}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise _BadFile(f"not valid JSON ({exc.msg}, column {exc.colno})", position=f"line {n}",
                               hint="JSONL holds one complete JSON object per line; or give one JSON list") from None
            except RecursionError:
                raise _BadFile("JSON nested too deeply to be an item", position=f"line {n}") from None
    return rows


def _metadata(obj: object) -> tuple[JSONObject | None, str | None]:
    """The item's metadata (``metadata``, else the kit's ``meta_data``) and its qa_id as a string."""
    if not isinstance(obj, dict):
        return None, None
    meta = obj.get("metadata", obj.get("meta_data"))
    if not isinstance(meta, dict):
        return None, None
    qa_id = meta.get("qa_id")
    if isinstance(qa_id, int) and not isinstance(qa_id, bool):
        return meta, str(qa_id)
    return meta, qa_id if isinstance(qa_id, str) and qa_id.strip() else None


def _pmid_tuple(value: object, key: str, position: str, *, nullable: bool) -> tuple[str, ...]:
    if value is None and nullable:
        return ()
    if not isinstance(value, list):
        raise _BadFile(f"'{key}' must be a list of PMIDs{' or null' if nullable else ''}, "
                       f"got {type(value).__name__}", position=position)
    out = []
    for p in value:
        s = pmid_str(p)
        if s is None:
            raise _BadFile(f"'{key}' holds {p!r}, which is not a PMID", hint=_PMID_HINT, position=position)
        out.append(s)
    return tuple(out)


def _items(path: Path, *, submission: bool) -> list[tuple[str, str, JSONObject, list[Any]]]:
    """``(position, qa_id, metadata, answer)`` of every item, each qa_id once; raises :class:`_BadFile`."""
    rows = _load(path)
    if not rows:
        raise _BadFile("no items: the file holds an empty list", hint="give at least one question-answer pair")
    out = []
    seen: dict[str, str] = {}
    for where, obj in rows:
        if not isinstance(obj, dict):
            raise _BadFile(f"an item must be a JSON object, got {type(obj).__name__}", position=where)
        meta, qa_id = _metadata(obj)
        if meta is None:
            raise _BadFile("no 'metadata' object (the kit's 'meta_data' is accepted too)", position=where)
        if qa_id is None:
            raise _BadFile("the metadata has no 'qa_id' (a non-empty string or an integer)", position=where)
        pos = f"{where} (qa_id {qa_id})"
        if qa_id in seen:
            raise _BadFile(f"qa_id {qa_id} appears twice (first at {seen[qa_id]})", position=pos,
                           hint="list each question-answer pair once")
        seen[qa_id] = where
        answer = obj.get("answer")
        if not submission and not isinstance(meta.get("question"), str):
            raise _BadFile("the metadata has no 'question' string", position=pos,
                           hint="the submission must repeat it (the official scorer reads metadata.question)")
        if not isinstance(answer, list) or not answer:
            raise _BadFile("'answer' must be a non-empty list of sentences", position=pos)
        out.append((pos, qa_id, meta, answer))
    return out


def _text(sentence: object, position: str) -> str:
    if not isinstance(sentence, dict):
        raise _BadFile(f"a sentence must be a JSON object, got {type(sentence).__name__}", position=position)
    text = sentence.get("text")
    if not isinstance(text, str):
        raise _BadFile("the sentence has no 'text' string", position=position)
    if not text.strip():
        raise _BadFile("the sentence's text is empty", position=position, hint="every answer sentence needs text")
    return text


def read_task_a(path: str | Path) -> list[GroundingItem]:
    """Read the official Task A input (JSON list or JSONL): every sentence's text exactly as given.

    Raises :class:`~medcite.errors.InputError` naming the file, the item (qa_id, or position when there is none)
    and the sentence: malformed JSON, an item without metadata/qa_id/question/answer, a sentence without text
    or with blank text, a PMID that is neither a positive integer nor a digit string, a repeated qa_id, no items.
    """
    path = Path(path)
    try:
        items = []
        for pos, qa_id, meta, answer in _items(path, submission=False):
            sentences = []
            for j, s in enumerate(answer):
                where = f"{pos}, answer[{j}]"
                text = _text(s, where)
                existing = _pmid_tuple(s.get("existing_supported_citations"), "existing_supported_citations",
                                       where, nullable=True)
                sentences.append(GroundingSentence(text, existing))
            items.append(GroundingItem(qa_id, meta["question"], tuple(sentences), dict(meta)))
        return items
    except _BadFile as exc:
        raise exc.as_input_error(path) from None


def read_task_a_run(path: str | Path) -> dict[str, tuple[GroundedSentence, ...]]:
    """Read a Task A submission (qa_id -> its sentences) as leniently as the official scorer: ``metadata`` or
    ``meta_data``, ``contradicted_citations`` or ``contradicting_citations``, ``existing_supported_citations``
    missing or null. Caps are not enforced here (the scorer keeps the first 3); :func:`validate_task_a` checks
    them."""
    path = Path(path)
    try:
        run = {}
        for pos, qa_id, _meta, answer in _items(path, submission=True):
            sentences = []
            for j, s in enumerate(answer):
                where = f"{pos}, answer[{j}]"
                text = _text(s, where)
                contradicted_key = "contradicted_citations" if "contradicted_citations" in s else \
                    "contradicting_citations"
                sentences.append(GroundedSentence(
                    text,
                    _pmid_tuple(s.get("existing_supported_citations"), "existing_supported_citations", where,
                                nullable=True),
                    _pmid_tuple(s.get("supported_citations"), "supported_citations", where, nullable=False),
                    _pmid_tuple(s.get(contradicted_key), "contradicted_citations", where, nullable=False),
                ))
            run[qa_id] = tuple(sentences)
        return run
    except _BadFile as exc:
        raise exc.as_input_error(path) from None


# ---- writing ------------------------------------------------------------------------------------------------


def _bad(where: str, message: str, hint: str | None = None) -> InputError:
    return InputError(f"{where}: {message}", hint)


def _new_pmids(values: Sequence[object], key: str, existing: set[str], where: str) -> list[str]:
    out = []
    for p in values:
        s = pmid_str(p)
        if s is None:
            raise _bad(where, f"{key} holds {p!r}, which is not a PMID", _PMID_HINT)
        out.append(s)
    if len(set(out)) != len(out):
        raise _bad(where, f"{key} lists a PMID twice: {list(values)!r}")
    if len(out) > MAX_NEW_PMIDS:
        raise _bad(where, f"{key} lists {len(out)} PMIDs (at most {MAX_NEW_PMIDS})",
                   "keep the 3 best; the official scorer reads only the first 3")
    overlap = sorted(set(out) & existing)
    if overlap:
        raise _bad(where, f"{key} repeats existing_supported_citations: {', '.join(overlap)}",
                   "new PMIDs must be additional to the existing ones")
    return out


def task_a_line(item: GroundingItem, sentences: Sequence[GroundedSentence], *, team_id: str, run_id: str,
                pmid_type: PmidType = "str") -> JSONObject:
    """One submission object: ``{"metadata": {team_id, run_id, qa_id, question}, "answer": [{text,
    existing_supported_citations, supported_citations, contradicted_citations}]}``.

    Text and existing PMIDs are the input's (a result whose text or existing PMIDs differ is an error), PMIDs
    are all ``str`` or all ``int`` (``pmid_type``). Raises :class:`~medcite.errors.InputError` when a result
    breaks a rule: sentence count, > 3 new PMIDs in a list, a PMID twice, a supporting or contradicting PMID
    already in ``existing_supported_citations``, one PMID both supporting and contradicting.
    """
    if len(sentences) != len(item.sentences):
        raise _bad(f"qa_id {item.qa_id}", f"{len(sentences)} results for {len(item.sentences)} sentences",
                   "give one GroundedSentence per input sentence, in the input's order")
    conv: Callable[[str], str | int] = int if pmid_type == "int" else str
    answer = []
    for j, (given, result) in enumerate(zip(item.sentences, sentences, strict=True)):
        where = f"qa_id {item.qa_id}, answer[{j}]"
        if result.text != given.text:
            raise _bad(where, f"the result's text {result.text!r} is not the input's {given.text!r}",
                       "submit every sentence exactly as given (GroundedSentence.of keeps it)")
        existing = set(given.existing)
        if {pmid_str(p) for p in result.existing} != existing:
            raise _bad(where, f"the result's existing PMIDs {list(result.existing)!r} are not the input's "
                       f"{list(given.existing)!r}")
        supported = _new_pmids(result.supported, "supported_citations", existing, where)
        contradicted = _new_pmids(result.contradicted, "contradicted_citations", existing, where)
        both = sorted(set(supported) & set(contradicted))
        if both:
            raise _bad(where, f"PMIDs both supporting and contradicting: {', '.join(both)}",
                       "a stance is one or the other; keep the stronger one")
        answer.append({"text": given.text,
                       "existing_supported_citations": [conv(p) for p in given.existing],
                       "supported_citations": [conv(p) for p in supported],
                       "contradicted_citations": [conv(p) for p in contradicted]})
    return {"metadata": {"team_id": team_id, "run_id": run_id, "qa_id": item.qa_id, "question": item.question},
            "answer": answer}


def write_task_a(path: str | Path, items: Sequence[GroundingItem], results: Mapping[str, Sequence[GroundedSentence]],
                 *, team_id: str, run_id: str, pmid_type: PmidType = "str") -> None:
    """Write the official submission (UTF-8 JSONL, one line per item, in ``items``' order).

    ``results`` maps every item's qa_id to its sentences' results (:meth:`GroundedSentence.of`). Every rule is
    checked before anything is written (see :func:`task_a_line`), and the file is replaced atomically, so an
    error leaves no partial file and an older file untouched.
    """
    if pmid_type not in ("str", "int"):
        raise ConfigError(f"unknown PMID type {pmid_type!r}",
                          hint="'str' (the guidelines' examples) or 'int' (what the starter kit writes)")
    for name, value in (("team_id", team_id), ("run_id", run_id)):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    ids = [it.qa_id for it in items]
    missing = [q for q in ids if q not in results]
    extra = sorted(set(results) - set(ids))
    if missing or extra:
        raise InputError(f"results do not match the input: without a result {missing}, not in the input {extra}",
                         path=str(path), hint="give a result for every input item and only for those")
    try:
        lines = [task_a_line(it, results[it.qa_id], team_id=team_id, run_id=run_id, pmid_type=pmid_type)
                 for it in items]
    except InputError as exc:
        raise InputError(exc.message, exc.hint, path=str(path)) from None
    with atomic_write(path) as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")


# ---- validating ---------------------------------------------------------------------------------------------


@dataclass
class _Answered:
    where: str
    question: object
    sentences: list[tuple[str, object, set[str]]]  # (position, text, existing PMIDs as strings)


@dataclass
class _State:
    rep: Report
    types: dict[str, str] = field(default_factory=dict)  # "str"/"int" -> first place a PMID of that type is
    new: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (position, qa_id, new PMIDs)


def _pmid_list(value: object, key: str, where: str, st: _State) -> tuple[list[str], list[object]]:
    """Valid PMIDs as strings, and the raw values as written (for the official raw-type overlap check)."""
    if value is None and key == "existing_supported_citations":
        return [], []
    if not isinstance(value, list):
        st.rep.errors.append(f"{where}: '{key}' must be a list, got {type(value).__name__}")
        return [], []
    good = []
    for p in value:
        s = pmid_str(p)
        if s is None:
            st.rep.errors.append(f"{where}: '{key}' holds {p!r}, which is not a PMID ({_PMID_HINT})")
            continue
        st.types.setdefault("int" if isinstance(p, int) else "str", f"{where} {key}")
        good.append(s)
    if len(set(good)) != len(good):
        st.rep.errors.append(f"{where}: '{key}' lists a PMID twice")
    return good, [p for p in value if isinstance(p, (int, str))]


def _overlap(a: tuple[list[str], list[object]], b: tuple[list[str], list[object]], what: str, where: str,
             st: _State) -> None:
    both = sorted(set(a[0]) & set(b[0]))
    if both:
        note = "" if set(a[1]) & set(b[1]) else (" (as int vs string: the official validator's set intersection "
                                                 "misses this; the official scorer compares strings)")
        st.rep.errors.append(f"{where}: {what}: {', '.join(both)}{note}")


def _check_sentence(s: object, where: str, qa_id: str, st: _State) -> tuple[str, object, set[str]]:
    if not isinstance(s, dict):
        st.rep.errors.append(f"{where}: a sentence must be a JSON object")
        return where, None, set()
    for key in ("text", "supported_citations", "contradicted_citations"):
        if key not in s:
            st.rep.errors.append(f"{where}: missing field '{key}'")
    if "existing_supported_citations" not in s:
        st.rep.errors.append(f"{where}: missing field 'existing_supported_citations' (list or null; the official "
                             "scorer reads it)")
    text = s.get("text")
    if "text" in s and (not isinstance(text, str) or not text.strip()):
        st.rep.errors.append(f"{where}: 'text' must be a non-empty string")
    existing = _pmid_list(s.get("existing_supported_citations"), "existing_supported_citations", where, st)
    supported = _pmid_list(s.get("supported_citations", []), "supported_citations", where, st)
    contradicted = _pmid_list(s.get("contradicted_citations", []), "contradicted_citations", where, st)
    for key, (good, _) in (("supported_citations", supported), ("contradicted_citations", contradicted)):
        if len(good) > MAX_NEW_PMIDS:
            st.rep.errors.append(f"{where}: {len(good)} {key} (at most {MAX_NEW_PMIDS})")
    _overlap(supported, existing, "supported_citations overlap existing_supported_citations", where, st)
    _overlap(contradicted, existing, "contradicted_citations overlap existing_supported_citations", where, st)
    _overlap(supported, contradicted, "PMIDs both supporting and contradicting", where, st)
    st.new.append((where, qa_id, list(dict.fromkeys(supported[0] + contradicted[0]))))
    return where, text, set(existing[0])


def _check_item(where: str, obj: object, st: _State, runs: set[tuple[str, str]]) -> tuple[str, _Answered] | None:
    rep = st.rep
    if not isinstance(obj, dict):
        rep.errors.append(f"{where}: an item must be a JSON object")
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        kit = " (the starter kit writes 'meta_data', which the official validator does not read)" \
            if isinstance(obj.get("meta_data"), dict) else ""
        rep.errors.append(f"{where}: missing 'metadata' object{kit}")
        return None
    qa_id = meta.get("qa_id")
    if not isinstance(qa_id, str) or not qa_id:
        rep.errors.append(f"{where}: 'metadata.qa_id' must be a non-empty string, got {qa_id!r} (the official "
                          "validator compares qa_ids as strings)")
        return None
    where = f"{where} (qa_id {qa_id})"
    for key in ("team_id", "run_id", "question"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            rep.errors.append(f"{where}: 'metadata.{key}' must be a non-empty string")
    runs.add((str(meta.get("team_id")), str(meta.get("run_id"))))  # str(): a list there must not crash the check
    answer = obj.get("answer")
    if not isinstance(answer, list) or not answer:
        rep.errors.append(f"{where}: 'answer' must be a non-empty list of sentences")
        return qa_id, _Answered(where, meta.get("question"), [])
    sentences = [_check_sentence(s, f"{where}, answer[{j}]", qa_id, st) for j, s in enumerate(answer)]
    return qa_id, _Answered(where, meta.get("question"), sentences)


def _check_inputs(answered: dict[str, _Answered], inputs: Sequence[GroundingItem], rep: Report) -> None:
    for item in inputs:
        got = answered.get(item.qa_id)
        if got is None:
            continue
        if got.question != item.question:
            rep.errors.append(f"{got.where}: metadata.question is not the input's {item.question!r}")
        if got.sentences and len(got.sentences) != len(item.sentences):
            rep.errors.append(f"{got.where}: {len(got.sentences)} sentences, the input has {len(item.sentences)}")
            continue
        for (where, text, existing), given in zip(got.sentences, item.sentences, strict=False):
            if text != given.text:
                rep.errors.append(f"{where}: text is not the input's sentence {given.text!r} (order and text must "
                                  "be kept exactly)")
            if existing != set(given.existing):
                rep.errors.append(f"{where}: existing_supported_citations are not the input's "
                                  f"{list(given.existing)!r}")


def _sorted_ids(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda q: (len(q), q))


def _check_ids(answered: set[str], expected: set[str], what: str, rep: Report) -> None:
    unexpected = _sorted_ids(answered - expected)
    if unexpected:
        rep.errors.append(f"qa_ids not {what}: {', '.join(unexpected)}")
    missing = _sorted_ids(expected - answered)
    if missing:
        rep.errors.append(f"qa_ids without an answer: {', '.join(missing)}")


def validate_task_a(path: str | Path, *, inputs: Sequence[GroundingItem] | None = None,
                    in_corpus: InCorpus | None = None, evidence: Mapping[str, Collection[str]] | None = None,
                    expected_qa_ids: Collection[str] | None = None) -> Report:
    """Check a Task A submission: the official ``task_a_validation.py`` rules plus medcite's (docs/TASK_A.md).

    Official: a JSON list or JSONL; ``metadata.qa_id`` on every item; ``text``, ``supported_citations`` and
    ``contradicted_citations`` on every sentence; supported ∩ existing empty. The guidelines: ≤ 3 PMIDs each,
    PMIDs from the corpus (``in_corpus`` returns the subset present). medcite: compares PMIDs as strings and
    reports a file mixing int and string PMIDs; ``existing_supported_citations`` and ``metadata.question``
    present (the official scorer reads both); non-empty text and answers; no repeated qa_id or PMID; no PMID
    both supporting and contradicting or contradicting and existing; one team_id/run_id. With ``inputs``:
    every qa_id answered once, sentence count, order, text and existing PMIDs as in the input. With
    ``evidence`` (qa_id -> PMIDs the system read): every new PMID was read. With ``expected_qa_ids``
    (:data:`OFFICIAL_QA_IDS_2025` for the official set): no other qa_id, none missing.
    """
    rep = Report(str(path))
    try:
        rows = _load(Path(path))
    except _BadFile as exc:
        rep.errors.append(exc.line())
        return rep
    if not rows:
        rep.errors.append("no items: the file holds an empty list")
    st = _State(rep)
    answered: dict[str, _Answered] = {}
    runs: set[tuple[str, str]] = set()
    for where, obj in rows:
        checked = _check_item(where, obj, st, runs)
        if checked is None:
            continue
        qa_id, got = checked
        if qa_id in answered:
            rep.errors.append(f"{got.where}: qa_id {qa_id} appears twice (first at {answered[qa_id].where})")
            continue
        answered[qa_id] = got
    if len(st.types) > 1:
        rep.errors.append(f"PMIDs of mixed types: strings (first at {st.types['str']}) and integers (first at "
                          f"{st.types['int']}); write one type throughout (string PMIDs compare unequal to int ones)")
    if len(runs) > 1:
        rep.errors.append(f"more than one (team_id, run_id) in one run file: {sorted(map(str, runs))}")
    if in_corpus is not None:
        wanted = sorted({p for _, _, pmids in st.new for p in pmids})
        present = in_corpus(wanted) if wanted else set()
        for where, _, pmids in st.new:
            absent = [p for p in pmids if p not in present]
            if absent:
                rep.errors.append(f"{where}: PMIDs not in the corpus: {', '.join(absent)}")
    if evidence is not None:
        for where, qa_id, pmids in st.new:
            unread = [p for p in pmids if p not in evidence.get(qa_id, ())]
            if unread:
                rep.errors.append(f"{where}: PMIDs not in the evidence read for qa_id {qa_id}: {', '.join(unread)}")
    if inputs is not None:
        _check_inputs(answered, inputs, rep)
        _check_ids(set(answered), {it.qa_id for it in inputs}, "in the input", rep)
    if expected_qa_ids is not None and (inputs is None or set(expected_qa_ids) != {it.qa_id for it in inputs}):
        _check_ids(set(answered), set(map(str, expected_qa_ids)), "expected", rep)
    rep.topics = len(answered)
    return rep
