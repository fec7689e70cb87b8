"""TREC BioGen Task B automatic measures of a run directory, as BioACE defines them (``medcite eval biogen-b``).

The judges are passed in: this module reads the run, asks them and counts. The caller
(:func:`medcite.workflows.evaluate.evaluate_biogen_b`) builds them from the settings.

- **citations**: every (answer sentence, cited PMID) judged against the cited abstract by a
  :class:`CitationJudge`: an LLM with BioACE's four labels (``--judge llm``: supports, contradicts, neutral, not
  relevant), or medcite's trained stance model offline (``--judge models:medcite-reader``; three labels).
  Counted by :mod:`medcite.evaluate.citations`.
- **nuggets** (with reference answers): answer and reference split into sentences by a ``split`` function
  (medcite's sentence splitter, syntok), embedded as unit vectors by an ``embed`` function (default: the
  packaged all-MiniLM-L6-v2), every cross pair's cosine compared with a threshold; counted by
  :mod:`medcite.evaluate.nuggets`.
- **completeness**: a :class:`CompletenessJudge` (an LLM with ``llm/prompts/bioace_completeness.txt``, one call
  per topic) labels each answer sentence Required / Unnecessary / Borderline / Inappropriate; counted by
  :mod:`medcite.evaluate.completeness`. Without an LLM it is not measured, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import InputError
from ..io import open_maybe_gz, read_jsonl
from ..types import Answer, Article, StanceVerdict, Topic
from .citations import CitationReport, citation_metrics
from .completeness import CompletenessReport, completeness_report
from .nuggets import NuggetCounts, NuggetReport, match, nugget_report

_ID_KEYS = ("topic_id", "id", "qa_id", "question_id")
_TEXT_KEYS = ("reference", "ideal_answer", "answer", "text")

#: a text's sentences (the nuggets of an answer or a reference)
Split = Callable[[str], list[str]]
#: one unit vector per text, as rows (their dot products are cosines)
Embed = Callable[[list[str]], np.ndarray]


class CitationJudge(Protocol):
    """Judges (answer sentence, cited article) pairs: a stance classifier (``--judge``)."""

    def classify_articles(self, pairs: Sequence[tuple[str, Article]]) -> Sequence[StanceVerdict]:
        """One verdict per (sentence, article) pair, in order."""
        ...


class CompletenessJudge(Protocol):
    """Labels the sentences of answers with :data:`medcite.evaluate.completeness.LABELS`."""

    def label(self, answers: Sequence[tuple[str, Sequence[str]]]) -> list[list[str | None]]:
        """For each (question, the answer's sentences): one label per sentence, None where it gave none."""
        ...


# -- inputs -------------------------------------------------------------------------------------------
def _reference_text(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value[0]  # BioASQ lists alternative ideal answers: the first is the reference
    if isinstance(value, list) and all(isinstance(v, dict) and "text" in v for v in value):
        return " ".join(str(v["text"]) for v in value)  # a BioGen answer: its sentences in order
    raise InputError(f"{where}: the reference answer is {type(value).__name__} {str(value)[:80]!r}",
                     hint="give a string, a list of alternative answers (the first is used) or a list of "
                     "{'text': ...} sentences")


def read_references(path: str | Path) -> dict[str, str]:
    """Reference answers by topic id from a BioASQ JSON(.gz) (``questions`` with ``ideal_answer``: the first of
    each), or JSON/JSONL rows with an id (``topic_id``/``id``/``qa_id``/``question_id``) and a text
    (``reference``/``ideal_answer``/``answer``/``text``)."""
    path = Path(path)
    with open_maybe_gz(path) as f:
        head = f.read(1)
    if head == "{" and not path.name.endswith((".jsonl", ".jsonl.gz")):
        with open_maybe_gz(path) as f:
            data: object = json.load(f)
        rows = data["questions"] if isinstance(data, dict) and "questions" in data else [data]
    elif head == "[":
        with open_maybe_gz(path) as f:
            rows = json.load(f)
    else:
        rows = list(read_jsonl(path))
    out: dict[str, str] = {}
    for n, row in enumerate(rows, 1):
        key = next((k for k in _ID_KEYS if k in row), None)
        text = next((k for k in _TEXT_KEYS if k in row), None)
        if key is None or text is None:
            raise InputError(f"{path}: record {n} has keys {sorted(row)[:8]}",
                             hint=f"each record needs an id ({', '.join(_ID_KEYS)}) and a reference text "
                             f"({', '.join(_TEXT_KEYS)})")
        out[str(row[key])] = _reference_text(row[text], f"{path} record {n}")
    if not out:
        raise InputError(f"{path} holds no reference answers", hint="give BioASQ JSON or JSONL {topic_id, reference}")
    return out


def read_run_topics(run_dir: str | Path) -> dict[str, Topic]:
    """The run's topics as it read them (``topics.jsonl``)."""
    path = Path(run_dir) / "topics.jsonl"
    if not path.exists():
        raise InputError(f"{run_dir} has no topics.jsonl", hint="give a run directory written by `medcite run`")
    fields = set(Topic.__dataclass_fields__)
    return {str(r["id"]): Topic(**{k: v for k, v in r.items() if k in fields}) for r in read_jsonl(path)}


# -- citations ----------------------------------------------------------------------------------------
def judge_citations(answers: Sequence[Answer], articles: Mapping[str, Mapping[str, Article]],
                    judge: CitationJudge) -> CitationReport:
    """Coverage and the four label rates of every citation whose abstract the run recorded."""
    keys = [(a.topic_id, i, p) for a in answers for i, s in enumerate(a.sentences) for p in s.pmids
            if p in articles.get(a.topic_id, {})]
    by_topic = {a.topic_id: a for a in answers}
    verdicts = judge.classify_articles([(by_topic[t].sentences[i].text, articles[t][p]) for t, i, p in keys])
    return citation_metrics(answers, {k: v.label for k, v in zip(keys, verdicts, strict=True)})


# -- nuggets ------------------------------------------------------------------------------------------
def nugget_scores(answers: Sequence[Answer], references: Mapping[str, str], embed: Embed, split: Split,
                  threshold: float) -> NuggetReport:
    """Nugget precision/recall of each answer with a reference: the reference split into sentences by
    ``split``, every sentence embedded by ``embed``, sentences aligned by cosine >= ``threshold``."""
    counts: dict[str, NuggetCounts] = {}
    for a in answers:
        if a.topic_id not in references:
            continue
        system = [s.text for s in a.sentences if s.text.strip()]
        reference = split(references[a.topic_id])
        if system and reference:
            vectors = embed([*system, *reference])
            sim = vectors[: len(system)] @ vectors[len(system):].T
        else:
            sim = np.zeros((len(system), len(reference)))
        counts[a.topic_id] = match(sim, threshold)
    unreferenced = [a.topic_id for a in answers if a.topic_id not in references]
    return nugget_report(counts, threshold, unreferenced)


# -- completeness -------------------------------------------------------------------------------------
def _question(topic: Topic | None) -> str:
    """What the completeness judge reads as the question: the topic's question and its narrative."""
    question = topic.question if topic else ""
    if topic and topic.narrative:
        question += f" ({topic.narrative})"
    return question or "(unknown)"


def completeness_scores(answers: Sequence[Answer], topics: Mapping[str, Topic],
                        judge: CompletenessJudge) -> CompletenessReport:
    """The judge's label of every answer sentence, counted (one request per answer with a sentence)."""
    judged = [a for a in answers if a.sentences]
    items = [(_question(topics.get(a.topic_id)), [s.text for s in a.sentences]) for a in judged]
    labels: dict[str, list[str | None]] = {a.topic_id: [] for a in answers}
    for a, found in zip(judged, judge.label(items) if items else [], strict=True):
        labels[a.topic_id] = found
    return completeness_report(labels)
