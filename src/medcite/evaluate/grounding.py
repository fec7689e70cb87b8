"""TREC BioGen 2025 Task A measures: per-sentence precision, recall and F1 of the new supporting and contradicting
PMIDs, strict and relaxed, as the track's scorer defines them (starter kit ``src/task_a_eval.py``; docs/TASK_A.md).

For each answer sentence, kind (support, contradict) and mode:

- the prediction is what the official scorer reads: supporting PMIDs not already in
  ``existing_supported_citations``, then the first 3; the first 3 contradicting PMIDs; duplicates once;
- the positives are the PMIDs judged for that sentence with a positive label: strict ``supports`` /
  ``contradicts``; relaxed also ``partially supports`` / ``partially contradicts`` (the official judgements have
  a partial label for support only, so there relaxed contradiction equals strict, as in the scorer);
- a predicted PMID with no judgement for the sentence is left out, neither right nor wrong (as the scorer does);
- precision = TP / (TP + FP) over judged predictions; recall = TP / positives; F1 their harmonic mean;
  ``soft_recall`` = 1 when at least one positive is predicted (the scorer's "soft recall"). Each is 0 when its
  denominator is 0, as in the scorer: a sentence with nothing predicted, or nothing positive, scores 0.

Aggregation is macro (the track's): ``average="question"`` (default, the scorer's expert-judgement path) takes the
mean over each question's sentences, then the mean over questions; ``"sentence"`` (the scorer's automatic-label
path) the mean over all sentences. F1 is the mean of the sentences' F1, not the F1 of mean P and R. Only
questions with at least one judgement are scored (as in the scorer); the others are listed. Micro counts over
all scored sentences come with the report too.

Judgement files (:func:`read_judgements`, detected by content): the official CSV (``qid, answer_sentence,
citation, judgement``: sentences named by text, the PMID on a ``PMID:`` line of ``citation``), the official
automatic-label JSON (a submission with ``supported_citations_labels`` / ``contradicted_citations_labels`` per
sentence), or medcite's TSV / JSONL ``qa_id, sentence_index, pmid, label`` (``sentence_index`` from 0).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Literal, Protocol

from ..errors import ConfigError, InputError
from ..io import open_maybe_gz

logger = logging.getLogger(__name__)

MAX_SCORED = 3  # the scorer reads the first 3 PMIDs of each list
KINDS = ("support", "contradict")
MODES = ("strict", "relaxed")
MEASURES = ("precision", "recall", "f1", "soft_recall")
Average = Literal["question", "sentence"]


class Label(str, Enum):
    SUPPORTS = "supports"
    PARTIALLY_SUPPORTS = "partially supports"
    CONTRADICTS = "contradicts"
    PARTIALLY_CONTRADICTS = "partially contradicts"
    NEUTRAL = "neutral"
    NOT_RELEVANT = "not relevant"


POSITIVE: dict[tuple[str, str], frozenset[Label]] = {
    ("support", "strict"): frozenset({Label.SUPPORTS}),
    ("support", "relaxed"): frozenset({Label.SUPPORTS, Label.PARTIALLY_SUPPORTS}),
    ("contradict", "strict"): frozenset({Label.CONTRADICTS}),
    ("contradict", "relaxed"): frozenset({Label.CONTRADICTS, Label.PARTIALLY_CONTRADICTS}),
}

# every spelling seen in the official scorer (both paths), lower-cased with "_"/"-" read as spaces
_SPELLINGS: dict[str, Label] = {
    **dict.fromkeys(("supports", "supported", "support"), Label.SUPPORTS),
    **dict.fromkeys(("partially supports", "partially supported", "partially support", "partial support",
                     "partial supports", "partial supported"), Label.PARTIALLY_SUPPORTS),
    **dict.fromkeys(("contradicts", "contradicted", "contradict"), Label.CONTRADICTS),
    **dict.fromkeys(("partially contradicts", "partially contradicted", "partially contradict",
                     "partial contradiction", "partial contradicts"), Label.PARTIALLY_CONTRADICTS),
    "neutral": Label.NEUTRAL,
    **dict.fromkeys(("not relevant", "irrelevant", "notrelevant"), Label.NOT_RELEVANT),
}
_LABEL_HINT = "labels: supports, partially supports, contradicts, partially contradicts, neutral, not relevant"
_PMID = re.compile(r"[1-9]\d{0,9}")
_PMID_LINE = re.compile(r"^\s*pmid\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def parse_label(value: str) -> Label | None:
    """A judgement label in any official spelling (``Supports``, ``partial-supported``, ``Not relevant``...)."""
    return _SPELLINGS.get(" ".join(value.lower().replace("_", " ").replace("-", " ").split()))


@dataclass(frozen=True, slots=True)
class Judgement:
    """One label for one (question, sentence, PMID). ``sentence`` is the 0-based index, or the sentence's text
    where the judgement file names sentences by text (the official CSV)."""

    qa_id: str
    sentence: int | str
    pmid: str
    label: Label


class PredictedSentence(Protocol):
    """What is scored of a submitted sentence (``medcite.tasks.biogen_a_format.GroundedSentence`` is one)."""

    @property
    def text(self) -> str: ...
    @property
    def existing(self) -> Sequence[str]: ...
    @property
    def supported(self) -> Sequence[str]: ...
    @property
    def contradicted(self) -> Sequence[str]: ...


# ---- measures -----------------------------------------------------------------------------------------------


def scored_pmids(sentence: PredictedSentence, kind: str) -> list[str]:
    """The PMIDs the official scorer reads: new supporting ones (existing removed) or contradicting ones, first 3,
    each once."""
    if kind == "support":
        existing = {str(p) for p in sentence.existing}
        pmids = [str(p) for p in sentence.supported if str(p) not in existing]
    else:
        pmids = [str(p) for p in sentence.contradicted]
    return list(dict.fromkeys(pmids[:MAX_SCORED]))


@dataclass(frozen=True, slots=True)
class Counts:
    tp: int = 0
    fp: int = 0
    positives: int = 0
    unjudged: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.positives + other.positives,
                      self.unjudged + other.unjudged)

    def scores(self) -> dict[str, float]:
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        r = self.tp / self.positives if self.positives else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": p, "recall": r, "f1": f1, "soft_recall": 1.0 if self.tp else 0.0}


def sentence_counts(predicted: Iterable[str], labels: Mapping[str, Label], positive: frozenset[Label]) -> Counts:
    """TP, FP (judged, not positive), positives and unjudged predictions of one sentence."""
    pred = set(predicted)
    judged = pred & set(labels)
    tp = sum(1 for p in judged if labels[p] in positive)
    return Counts(tp, len(judged) - tp, sum(1 for lab in labels.values() if lab in positive), len(pred - judged))


def _text_key(text: str) -> str:
    """Sentence text compared without whitespace, with dashes unified and dot runs as "..." (the scorer also
    normalises spacing and punctuation before matching judgements to sentences)."""
    text = re.sub(r"\.{2,}", "...", text.replace("\u2013", "-").replace("\u2014", "-"))
    return re.sub(r"\s+", "", text)


Scores = dict[str, dict[str, dict[str, float]]]  # kind -> mode -> measure -> value


@dataclass
class GroundingReport:
    average: str
    aggregate: Scores
    micro: dict[str, dict[str, dict[str, float]]]  # kind -> mode -> tp, fp, positives, unjudged, P, R, F1
    per_question: dict[str, Scores]
    questions: int
    sentences: int
    unjudged_questions: list[str] = field(default_factory=list)  # in the run, no judgement: not scored
    missing_from_run: list[str] = field(default_factory=list)  # judged, not in the run: not scored
    unmatched_judgements: int = 0  # judgements whose sentence is not in the run

    def as_dict(self) -> dict[str, object]:
        return {"average": self.average, "aggregate": self.aggregate, "micro": self.micro,
                "questions": self.questions, "sentences": self.sentences,
                "unjudged_questions": self.unjudged_questions, "missing_from_run": self.missing_from_run,
                "unmatched_judgements": self.unmatched_judgements, "per_question": self.per_question}


def _mean(rows: Sequence[Scores]) -> Scores:
    return {k: {m: {x: (sum(r[k][m][x] for r in rows) / len(rows) if rows else 0.0) for x in MEASURES}
                for m in MODES} for k in KINDS}


def _sort_ids(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda q: (len(q), q))


def evaluate_grounding(run: Mapping[str, Sequence[PredictedSentence]], judgements: Iterable[Judgement], *,
                       average: Average = "question") -> GroundingReport:
    """Score a Task A run (qa_id -> its sentences in input order) against judgements (module docstring)."""
    if average not in ("question", "sentence"):
        raise ConfigError(f"unknown average {average!r}", hint="'question' (the official default) or 'sentence'")
    labels: dict[str, dict[int, dict[str, Label]]] = {}
    judged_ids: set[str] = set()
    unmatched = 0
    keys = {q: _index_by_text(sentences) for q, sentences in run.items()}
    for j in judgements:
        judged_ids.add(j.qa_id)
        if j.qa_id not in run:
            continue
        if isinstance(j.sentence, int):
            targets = [j.sentence] if 0 <= j.sentence < len(run[j.qa_id]) else []
        else:
            targets = keys[j.qa_id].get(_text_key(j.sentence), [])
        unmatched += not targets
        for i in targets:
            labels.setdefault(j.qa_id, {}).setdefault(i, {})[j.pmid] = j.label  # a later label wins, as in the scorer
    per_question: dict[str, Scores] = {}
    per_sentence: list[Scores] = []
    micro = {(k, m): Counts() for k in KINDS for m in MODES}
    for qa_id in _sort_ids(set(run) & judged_ids):
        rows = []
        for i, sentence in enumerate(run[qa_id]):
            got = labels.get(qa_id, {}).get(i, {})
            row: Scores = {k: {} for k in KINDS}
            for k in KINDS:
                pred = scored_pmids(sentence, k)
                for m in MODES:
                    c = sentence_counts(pred, got, POSITIVE[(k, m)])
                    micro[(k, m)] += c
                    row[k][m] = c.scores()
            rows.append(row)
        per_question[qa_id] = _mean(rows)
        per_sentence.extend(rows)
    aggregate = _mean(list(per_question.values())) if average == "question" else _mean(per_sentence)
    micro_out = {k: {m: {"tp": c.tp, "fp": c.fp, "positives": c.positives, "unjudged": c.unjudged,
                         **{x: v for x, v in c.scores().items() if x != "soft_recall"}}
                     for m in MODES for c in [micro[(k, m)]]} for k in KINDS}
    return GroundingReport(average, aggregate, micro_out, per_question, len(per_question), len(per_sentence),
                           _sort_ids(set(run) - judged_ids), _sort_ids(judged_ids - set(run)), unmatched)


def _index_by_text(sentences: Sequence[PredictedSentence]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, s in enumerate(sentences):
        out.setdefault(_text_key(s.text), []).append(i)
    return out


# ---- judgement files ----------------------------------------------------------------------------------------


def _label(value: object, path: Path, where: str) -> Label:
    label = parse_label(value) if isinstance(value, str) else None
    if label is None:
        raise InputError(f"unknown judgement label {value!r}", hint=_LABEL_HINT, path=str(path), position=where)
    return label


def _pmid(value: object, path: Path, where: str) -> str:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not _PMID.fullmatch(text):
        raise InputError(f"{value!r} is not a PMID", hint="a PMID is a positive integer, e.g. 31234567",
                         path=str(path), position=where)
    return text


def read_judgements(path: str | Path) -> list[Judgement]:
    """Read Task A judgements in any of the formats of the module docstring (detected by content)."""
    path = Path(path)
    try:
        with open_maybe_gz(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError("no such judgement file", path=str(path)) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # EOFError: a gzip stream cut short
        raise InputError(f"cannot read the judgement file as UTF-8 text: {exc}", path=str(path)) from None
    head = text.lstrip()
    first = head.split("\n", 1)[0].lower()
    if not head:
        raise InputError("the judgement file is empty", path=str(path))
    if head[0] == "[":
        out = _from_labels_json(text, path)
    elif head[0] == "{":
        out = _from_jsonl(text, path)
    elif "qid" in first and "judgement" in first and "," in first:
        out = _from_official_csv(text, path)
    else:
        out = _from_tsv(text, path)
    if not out:
        raise InputError("no judgements in the file", path=str(path))
    return out


def _row(qa_id: object, index: object, pmid: object, label: object, path: Path, where: str) -> Judgement:
    if isinstance(qa_id, int) and not isinstance(qa_id, bool):
        qa_id = str(qa_id)
    if not isinstance(qa_id, str) or not qa_id.strip():
        raise InputError(f"qa_id {qa_id!r} must be a non-empty string", path=str(path), position=where)
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise InputError(f"sentence_index {index!r} must be an integer from 0 (the sentence's position in the "
                         "answer)", path=str(path), position=where)
    return Judgement(qa_id.strip(), index, _pmid(pmid, path, where), _label(label, path, where))


def _from_tsv(text: str, path: Path) -> list[Judgement]:
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\r").split("\t")
        if [c.strip().lower() for c in cols] == ["qa_id", "sentence_index", "pmid", "label"]:
            continue
        if len(cols) != 4:
            raise InputError(f"expected 4 tab-separated columns (qa_id, sentence_index, pmid, label), got {len(cols)}",
                             hint="or give the official CSV, the official labels JSON, or JSONL",
                             path=str(path), position=f"line {n}")
        out.append(_row(cols[0], cols[1], cols[2], cols[3].strip(), path, f"line {n}"))
    return out


def _from_jsonl(text: str, path: Path) -> list[Judgement]:
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path=str(path), position=f"line {n}") from None
        if not isinstance(obj, dict) or not {"qa_id", "sentence_index", "pmid", "label"} <= set(obj):
            raise InputError("each line needs qa_id, sentence_index, pmid and label", path=str(path),
                             position=f"line {n}")
        out.append(_row(obj["qa_id"], obj["sentence_index"], obj["pmid"], obj["label"], path, f"line {n}"))
    return out


def _from_official_csv(text: str, path: Path) -> list[Judgement]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    missing = {"qid", "answer_sentence", "citation", "judgement"} - set(reader.fieldnames or [])
    if missing:
        raise InputError(f"the CSV lacks the columns {sorted(missing)}", path=str(path), position="line 1",
                         hint="the official judgement CSV has qid, answer_sentence, citation, judgement")
    out: list[Judgement] = []
    skipped = 0
    for row in reader:
        where = f"line {reader.line_num}"
        citation = (row.get("citation") or "").strip()
        m = _PMID_LINE.search(citation)
        pmid = m.group(1) if m else citation
        if not _PMID.fullmatch(pmid):
            skipped += 1  # the scorer skips a row whose citation names no PMID
            continue
        qid = (row.get("qid") or "").strip()
        if not qid:
            raise InputError("empty qid", path=str(path), position=where)
        out.append(Judgement(qid, (row.get("answer_sentence") or "").strip(), pmid,
                             _label(row.get("judgement"), path, where)))
    if skipped:
        logger.warning("%s: %d rows name no PMID in 'citation' and are skipped (as the official scorer does)",
                       path, skipped)
    return out


def _from_labels_json(text: str, path: Path) -> list[Judgement]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=str(path),
                         position=f"line {exc.lineno}, column {exc.colno}") from None
    out: list[Judgement] = []
    for i, item in enumerate(data):
        meta = item.get("metadata", item.get("meta_data")) if isinstance(item, dict) else None
        qa_id = meta.get("qa_id") if isinstance(meta, dict) else None
        answer = item.get("answer") if isinstance(item, dict) else None
        if qa_id is None or not isinstance(answer, list):
            raise InputError("each item needs metadata.qa_id and an 'answer' list", path=str(path),
                             position=f"item [{i}]",
                             hint="the official automatic-label file is a submission with *_citations_labels")
        for j, s in enumerate(answer):
            where = f"item [{i}] (qa_id {qa_id}), answer[{j}]"
            for key in ("supported_citations_labels", "contradicted_citations_labels"):
                labels = s.get(key, {}) if isinstance(s, dict) else None
                if not isinstance(labels, dict):
                    raise InputError(f"'{key}' must map PMIDs to labels", path=str(path), position=where)
                out.extend(_row(qa_id, j, pmid, label, path, where) for pmid, label in labels.items())
    return out
