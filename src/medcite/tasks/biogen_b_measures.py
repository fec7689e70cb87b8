"""TREC BioGen Task B automatic measures of a run directory, as BioACE defines them (``medcite eval biogen-b``).

- **citations**: every (answer sentence, cited PMID) judged against the cited abstract by a judge: an LLM
  with BioACE's four labels (``--judge llm``: supports, contradicts, neutral, not relevant), or medcite's
  trained stance model offline (``--judge models:medcite-reader``; three labels). Counted by
  :mod:`medcite.evaluate.citations`.
- **nuggets** (with reference answers): answer and reference split into sentences by medcite's sentence
  splitter (syntok), embedded by a sentence encoder (default: the packaged all-MiniLM-L6-v2), every
  cross pair's cosine compared with a threshold; counted by :mod:`medcite.evaluate.nuggets`.
- **completeness**: an LLM labels each answer sentence Required / Unnecessary / Borderline / Inappropriate
  (``llm/prompts/bioace_completeness.txt``, one call per topic); counted by :mod:`medcite.evaluate.completeness`.
  Without an LLM (``llm.backend=none``) it is not measured, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import registry
from ..errors import InputError
from ..evaluate.citations import CitationReport, citation_metrics
from ..evaluate.completeness import LABELS, CompletenessReport, completeness_report
from ..evaluate.nuggets import NuggetCounts, NuggetReport, match, nugget_report
from ..evidence.sentences import split_spans
from ..index.dense.encoders import l2_normalize
from ..io import open_maybe_gz, read_jsonl
from ..llm.base import llm_enabled, reject
from ..llm.prompts import render
from ..llm.reply_parsers import parse_sentence_labels
from ..llm.trace import trace_context
from ..types import Answer, Article, Topic

if TYPE_CHECKING:
    from ..attribute.base import StanceClassifier
    from ..config import Settings
    from ..index.dense.encoders import Encoder
    from ..llm.base import LLM
    from ..settings_base import BackendConfig

_ID_KEYS = ("topic_id", "id", "qa_id", "question_id")
_TEXT_KEYS = ("reference", "ideal_answer", "answer", "text")


@cache
def completeness_needs_llm() -> str:
    """Why completeness is not measured without an LLM, with the ``--set`` options that give it one (printed by
    :func:`medcite.config.set_lines` from the settings they make)."""
    from ..config import Settings, apply_swaps, set_lines

    base = Settings()
    served = apply_swaps(base, [("llm", {"backend": "openai", "model": "NAME", "base_url": "http://HOST:PORT/v1"})])
    local = apply_swaps(base, [("llm", {"backend": "local"})])
    return (f"not measured: answer completeness needs an LLM judge (llm.backend is 'none'); run with e.g. "
            f"{' '.join(set_lines(base, served))}, or {' '.join(set_lines(base, local))} for the packaged SmolLM2 "
            "(too small to judge well)")


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
def judge_config(name: str, settings: Settings) -> BackendConfig:
    """The stance config ``--judge`` names: ``llm`` or ``llm:NAME`` (BioACE's four labels on the default LLM
    or the entry NAME of ``llms``), a stance backend name, ``backend:MODEL``, or a classifier model
    (a folder, ``models:NAME`` or a Hugging Face name)."""
    backend, sep, value = name.partition(":")
    if backend in registry.names("stance"):
        cls = registry.config_class("stance", backend)  # a StanceConfig: its judge_spec and judge_field
        spec = {getattr(cls, "judge_field", "model"): value} if sep else {}
        judge_spec = getattr(cls, "judge_spec", None)
        if judge_spec is not None:
            return registry.validate_config("stance", {**judge_spec, **spec})
        # a judge named here keeps where the settings run the stance stage (--set stance.device=..., dtype, batch size)
        if not sep and settings.stance.backend == name:
            return settings.stance
        return registry.validate_config("stance", registry.runtime_kept(
            "stance", {"backend": backend, **spec} if sep else name, settings.stance))
    return registry.validate_config("stance", registry.runtime_kept(
        "stance", {"backend": "classifier", "model": name}, settings.stance))


def judge_citations(answers: Sequence[Answer], articles: Mapping[str, Mapping[str, Article]],
                    judge: StanceClassifier) -> CitationReport:
    """Coverage and the four label rates of every citation whose abstract the run recorded."""
    keys = [(a.topic_id, i, p) for a in answers for i, s in enumerate(a.sentences) for p in s.pmids
            if p in articles.get(a.topic_id, {})]
    by_topic = {a.topic_id: a for a in answers}
    verdicts = judge.classify_articles([(by_topic[t].sentences[i].text, articles[t][p]) for t, i, p in keys])
    return citation_metrics(answers, {k: v.label for k, v in zip(keys, verdicts, strict=True)})


# -- nuggets ------------------------------------------------------------------------------------------
def atomic_sentences(text: str) -> list[str]:
    """``text`` split into sentences by medcite's splitter (the nuggets of an answer or a reference)."""
    return [text[s:e] for s, e in split_spans(text)]


def nugget_scores(answers: Sequence[Answer], references: Mapping[str, str], encoder: Encoder,
                  threshold: float) -> NuggetReport:
    """Nugget precision/recall of each answer with a reference (sentences aligned by cosine >= ``threshold``)."""
    counts: dict[str, NuggetCounts] = {}
    for a in answers:
        if a.topic_id not in references:
            continue
        system = [s.text for s in a.sentences if s.text.strip()]
        reference = atomic_sentences(references[a.topic_id])
        if system and reference:
            vectors = l2_normalize(np.asarray(encoder.encode_queries([*system, *reference]), dtype=np.float32))
            sim = vectors[: len(system)] @ vectors[len(system):].T
        else:
            sim = np.zeros((len(system), len(reference)))
        counts[a.topic_id] = match(sim, threshold)
    unreferenced = [a.topic_id for a in answers if a.topic_id not in references]
    return nugget_report(counts, threshold, unreferenced)


# -- completeness -------------------------------------------------------------------------------------
def completeness_scores(answers: Sequence[Answer], topics: Mapping[str, Topic], llm: LLM | None,
                        max_tokens: int = 256) -> CompletenessReport | str:
    """The LLM's label of every answer sentence, counted; the reason it was not measured when there is no LLM."""
    if not llm_enabled(llm):
        return completeness_needs_llm()
    assert llm is not None
    judged = [a for a in answers if a.sentences]
    chats = []
    for a in judged:
        topic = topics.get(a.topic_id)
        question = topic.question if topic else ""
        if topic and topic.narrative:
            question += f" ({topic.narrative})"
        numbered = "\n".join(f"{i}. {s.text}" for i, s in enumerate(a.sentences, 1))
        chats.append(render("bioace_completeness", question=question or "(unknown)", sentences=numbered))
    with trace_context(stage="completeness"):
        replies = llm.complete_many(chats, max_tokens=max_tokens) if chats else []
    labels: dict[str, list[str | None]] = {a.topic_id: [] for a in answers}
    for a, reply in zip(judged, replies, strict=True):
        labels[a.topic_id] = parse_sentence_labels(reply.text, len(a.sentences), LABELS)
        if None in labels[a.topic_id]:  # a sentence left unjudged: no line, or a label outside LABELS
            reject(llm, reply, f"{labels[a.topic_id].count(None)} of {len(a.sentences)} sentences got no label "
                               f"among {', '.join(LABELS)}")
    return completeness_report(labels)
