"""Evaluation assembly: the judges, LLM and encoder an evaluation needs, built through one build context.

``medcite eval biogen-b`` scores a Task B run the way the track does (BioACE): every citation judged by a stance
backend or an LLM, nugget precision and recall against reference answers (a sentence encoder aligns them) and
answer completeness (an LLM labels each sentence). :func:`evaluate_biogen_b` builds them and returns the report;
the CLI prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry
from ..errors import ConfigError
from ..evaluate.grounding import KINDS as KINDS  # re-exported: the rows of the CLI's Task A table
from ..evaluate.grounding import MODES as MODES

if TYPE_CHECKING:
    from ..config import Settings
    from ..evaluate.bioasq import BioASQEval
    from ..evaluate.citations import CitationReport
    from ..evaluate.completeness import CompletenessReport
    from ..evaluate.coverage import GoldCoverage
    from ..evaluate.grounding import GroundingReport
    from ..evaluate.nuggets import NuggetReport
    from ..evaluate.retrieval import RetrievalReport
    from ..pipeline import Context
    from ..settings_base import BackendConfig
    from ..trec import Qrels
    from ..types import Answer


class NoJudgeError(ConfigError):
    """The judge named builds to nothing (``--judge none``)."""


@dataclass
class TaskBEvaluation:
    """What :func:`evaluate_biogen_b` measured, and the report written to JSON."""

    topics: int
    citations: CitationReport
    report: dict[str, object] = field(default_factory=dict)
    nuggets: NuggetReport | None = None
    #: the completeness report, or why it was not measured (a sentence); None when not asked
    completeness: CompletenessReport | str | None = None


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


def _completeness(ctx: Context, settings: Settings, run_dir: Path, answers: list[Answer],
                  completeness_llm: str | None) -> CompletenessReport | str:
    """Completeness labelled by the LLM ``completeness_llm`` (None: ``settings.llm``), or why it was not
    measured (an LLM that calls nothing)."""
    from ..evaluate.biogen_b import completeness_scores, read_run_topics
    from ..llm.base import llm_enabled
    from ..llm.completeness_judge import LLMCompletenessJudge

    llm_cfg = settings.llm if completeness_llm is None else settings.llms.get(completeness_llm)
    no_llm = llm_cfg is not None and llm_cfg.calls_nothing
    llm = None if no_llm else ctx.llm(completeness_llm, purpose="the completeness judge")
    topics = read_run_topics(run_dir)  # read (and checked) with an LLM or without
    if not llm_enabled(llm):
        return completeness_needs_llm()
    assert llm is not None
    return completeness_scores(answers, topics, LLMCompletenessJudge(llm))


def evaluate_biogen_b(settings: Settings, run_dir: Path, *, judge: str, reference: Path | None = None,
                      threshold: float | None = None, encoder: str | dict[str, object] = "minilm",
                      encoder_name: str = "minilm", completeness: bool = True,
                      completeness_llm: str | None = None) -> TaskBEvaluation:
    """Score the Task B run in ``run_dir``: citations judged by ``judge`` (see :func:`judge_config`), nuggets
    against ``reference`` (when given) aligned by ``encoder`` (a shorthand or a config; ``encoder_name`` is how
    the report names it) at ``threshold`` (None: the default), and completeness labelled by the LLM
    ``completeness_llm`` (None: ``settings.llm``; a ``none`` LLM: the report says it was not measured)."""
    from ..evaluate.biogen_b import judge_citations, nugget_scores, read_references
    from ..evaluate.nuggets import DEFAULT_THRESHOLD
    from ..evidence.sentences import sentence_texts
    from ..index.dense.encoders import unit_embedder
    from ..pipeline import Context
    from ..rundir import read_answers, read_articles

    cfg = judge_config(judge, settings)
    answers, articles = read_answers(run_dir), read_articles(run_dir)
    report: dict[str, object] = {"run": str(run_dir), "judge": cfg.model_dump(mode="json")}
    done: CompletenessReport | str | None = None
    nuggets = None
    with Context(settings) as ctx:
        if completeness:
            done = _completeness(ctx, settings, run_dir, answers, completeness_llm)
            report["completeness"] = {"status": done} if isinstance(done, str) else done.as_dict()
        stance = ctx.build("stance", cfg)
        if stance is None:
            raise NoJudgeError("--judge none judges nothing: name an LLM, a stance backend or a model")
        cites = judge_citations(answers, articles, stance)
        report["citations"] = cites.as_dict()
        if reference is not None:
            embed = unit_embedder(ctx.encoder(encoder))
            nuggets = nugget_scores(answers, read_references(reference), embed, sentence_texts,
                                    DEFAULT_THRESHOLD if threshold is None else threshold)
            report["nuggets"] = {"reference": str(reference), "encoder": encoder_name, **nuggets.as_dict()}
    return TaskBEvaluation(len(answers), cites, report, nuggets, done)


@dataclass
class RetrievalEvaluation:
    """A retrieval run's report, the judgements it was scored against, and whether any query id is in both."""

    report: RetrievalReport
    qrels: Qrels
    shared: bool


def evaluate_retrieval_run(run_path: Path, gold: Path, metrics: str | None, missing: str) -> RetrievalEvaluation:
    """Score the TREC run at ``run_path`` against ``gold`` (TREC qrels or BioASQ golden JSON) with ``metrics``
    (comma-separated; None: the defaults), gold queries absent from the run scored 0 (``zero``) or left out
    (``skip``)."""
    from ..evaluate.bioasq_map import check_missing_policy
    from ..evaluate.gold import read_gold
    from ..evaluate.retrieval import DEFAULT_METRICS, evaluate_retrieval, parse_metrics
    from ..trec import read_run

    names = parse_metrics(metrics) if metrics else list(DEFAULT_METRICS)
    run = read_run(run_path)
    qrels = read_gold(gold)
    report = evaluate_retrieval(run, qrels, names, missing=check_missing_policy(missing))
    return RetrievalEvaluation(report, qrels, bool(set(run) & set(qrels)))


def read_gold_qrels(gold: Path) -> Qrels:
    """Relevance judgements from TREC qrels or BioASQ golden JSON (documents become relevant PMIDs)."""
    from ..evaluate.gold import read_gold

    return read_gold(gold)


def store_coverage(qrels: Qrels, corpus: Path) -> GoldCoverage:
    """How many of the relevant gold documents the document store at ``corpus`` holds."""
    from ..corpus.store import DocumentStore
    from ..evaluate.coverage import gold_coverage

    with DocumentStore.open(corpus) as store:
        return gold_coverage(qrels, store.existing)


def evaluate_task_a(submission: Path, qrels: Path, average: str) -> GroundingReport:
    """Score the Task A grounding of ``submission`` against the judgements in ``qrels``, macro-averaged over each
    question's sentences then over questions (``question``) or over all sentences (``sentence``)."""
    from ..evaluate.grounding import Average, evaluate_grounding, read_judgements
    from ..tasks.biogen_a_format import read_task_a_run

    run = read_task_a_run(submission)
    mean: Average = "sentence" if average == "sentence" else "question"
    return evaluate_grounding(run, read_judgements(qrels), average=mean)


def evaluate_bioasq(phase: str, gold: Path, system_path: Path, *, missing: str, rouge: bool) -> BioASQEval:
    """Score a BioASQ Task b submission with the official measures: phase ``A`` (documents and snippets) or ``B``
    (exact and ideal answers; ``rouge``: ideal answers with ROUGE-2 and ROUGE-SU4)."""
    from ..evaluate.bioasq import evaluate_phase_a, evaluate_phase_b
    from ..tasks.bioasq_format import read_phase_a_run, read_phase_b_run, read_questions

    questions = read_questions(gold)
    if phase == "A":
        return evaluate_phase_a(questions, read_phase_a_run(system_path), missing=missing)
    return evaluate_phase_b(questions, read_phase_b_run(system_path), missing=missing, rouge=rouge)
