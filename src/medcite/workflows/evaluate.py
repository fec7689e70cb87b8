"""Evaluation assembly: the judges, LLM and encoder an evaluation needs, built through one build context.

``medcite eval biogen-b`` scores a Task B run the way the track does (BioACE): every citation judged by a stance
backend or an LLM, nugget precision and recall against reference answers (a sentence encoder aligns them) and
answer completeness (an LLM labels each sentence). :func:`evaluate_biogen_b` builds them and returns the report;
the CLI prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import Settings
    from ..evaluate.citations import CitationReport
    from ..evaluate.completeness import CompletenessReport
    from ..evaluate.nuggets import NuggetReport


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


def evaluate_biogen_b(settings: Settings, run_dir: Path, *, judge: str, reference: Path | None = None,
                      threshold: float | None = None, encoder: str | dict[str, object] = "minilm",
                      encoder_name: str = "minilm", completeness: bool = True,
                      completeness_llm: str | None = None) -> TaskBEvaluation:
    """Score the Task B run in ``run_dir``: citations judged by ``judge`` (see
    :func:`medcite.tasks.biogen_b_measures.judge_config`), nuggets against ``reference`` (when given) aligned by
    ``encoder`` (a shorthand or a config; ``encoder_name`` is how the report names it) at ``threshold`` (None: the
    default), and completeness labelled by the LLM ``completeness_llm`` (None: ``settings.llm``; a ``none`` LLM:
    the report says it was not measured)."""
    from ..evaluate.nuggets import DEFAULT_THRESHOLD
    from ..pipeline import Context
    from ..rundir import read_answers, read_articles
    from ..tasks.biogen_b_measures import (
        completeness_scores,
        judge_citations,
        judge_config,
        nugget_scores,
        read_references,
        read_run_topics,
    )

    cfg = judge_config(judge, settings)
    answers, articles = read_answers(run_dir), read_articles(run_dir)
    report: dict[str, object] = {"run": str(run_dir), "judge": cfg.model_dump(mode="json")}
    done: CompletenessReport | str | None = None
    nuggets = None
    with Context(settings) as ctx:
        if completeness:
            llm_cfg = settings.llm if completeness_llm is None else settings.llms.get(completeness_llm)
            no_llm = llm_cfg is not None and llm_cfg.backend == "none"
            llm = None if no_llm else ctx.llm(completeness_llm, purpose="the completeness judge")
            done = completeness_scores(answers, read_run_topics(run_dir), llm)
            report["completeness"] = {"status": done} if isinstance(done, str) else done.as_dict()
        stance = ctx.build("stance", cfg)
        if stance is None:
            raise NoJudgeError("--judge none judges nothing: name an LLM, a stance backend or a model")
        cites = judge_citations(answers, articles, stance)
        report["citations"] = cites.as_dict()
        if reference is not None:
            sentence_encoder = ctx.encoder(encoder)
            nuggets = nugget_scores(answers, read_references(reference), sentence_encoder,
                                    DEFAULT_THRESHOLD if threshold is None else threshold)
            report["nuggets"] = {"reference": str(reference), "encoder": encoder_name, **nuggets.as_dict()}
    return TaskBEvaluation(len(answers), cites, report, nuggets, done)
