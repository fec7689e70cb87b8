"""Run a registered task (registry stage ``task``): read its inputs, build it through the build context, and
answer the inputs into a run directory.

``medcite run``, ``medcite ground`` and ``medcite bioasq phase-a|phase-aplus|phase-b`` call these; a task that
retrieves gets a :class:`~medcite.pipeline.Pipeline` over the document store (made with ``grounding=True`` for
Task A, whose grounder it reuses), one that does not (BioASQ Phase B) gets a bare build context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .. import registry
from ..errors import ConfigError
from ..paths import runs_dir
from ..rundir import claim_run_dir, new_run_dir
from ..tasks.base import Family, Result, RunContext, Task

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import BuildContext
    from ..types import Article, StudyDesign


def task_class(name: str) -> type[Task[object]]:
    """The class registered as task ``name`` (raises ConfigError naming the known tasks)."""
    return cast("type[Task[object]]", registry.load("task", name))


def task_names(family: Family) -> list[str]:
    """The registered tasks of one family, sorted (``medcite run --format`` offers the BioGen ones)."""
    return [name for name in registry.names("task") if task_class(name).family == family]


def read_inputs(name: str, path: Path) -> list[object]:
    """The inputs of task ``name`` read from ``path``: bad input stops here, before any model loads."""
    return task_class(name).read(path)


def build_task(name: str, ctx: BuildContext, options: Mapping[str, object] | None = None) -> Task[object]:
    """Task ``name`` built through ``ctx`` from ``options`` (its settings; the ones its settings model does not
    have are left out: ``medcite run`` passes ``--contact-email`` to every format)."""
    fields = registry.config_class("task", name).model_fields
    cfg = registry.validate_config("task", {"backend": name,
                                            **{k: v for k, v in (options or {}).items() if k in fields}})
    task = ctx.build("task", cfg)
    if not isinstance(task, Task):
        raise ConfigError(f"the task backend {name!r} builds {type(task).__name__}, which is not a Task",
                          hint="a task class needs read(path) and run(inputs, ctx) (medcite.tasks.base.Task)")
    return task


def run_task(name: str, settings: Settings, inputs: Sequence[object], *, corpus: Path | None, out: Path | None,
             command: str, output: Path | None = None, options: Mapping[str, object] | None = None) -> Result:
    """Answer ``inputs`` (from :func:`read_inputs`) with task ``name`` under ``settings``.

    ``out``: the run directory (None: a new ``NAME-<time>`` folder in medcite's runs folder, claimed once the
    pipeline has started); ``output``: also write the submission there; ``options``: the task's settings.
    """
    from ..pipeline import Context, Pipeline

    cls = task_class(name)
    if not cls.corpus:
        run_dir = out or new_run_dir(runs_dir(), name)
        with Context(settings) as ctx, claim_run_dir(run_dir):
            return build_task(name, ctx, options).run(inputs, RunContext(ctx, run_dir, None, command, output))
    if corpus is None:
        raise ConfigError(f"the task {name!r} retrieves from a document store", hint="give --corpus DIR")
    with Pipeline(settings, corpus, grounding=cls.grounding) as pipeline:
        task = build_task(name, pipeline.context, options)
        run_dir = out or new_run_dir(runs_dir(), name)
        with claim_run_dir(run_dir):  # one command at a time writes a run folder, its submission included
            return task.run(inputs, RunContext(pipeline.context, run_dir, pipeline, command, output))


def settings_for(preset: str, overrides: Sequence[str], offline: bool, no_llm: bool, grounding: bool = False
                 ) -> Settings:
    """The preset with the offline swaps (when asked: ``no_llm`` swaps the LLM for none, ``offline`` for the
    packaged local model) applied first and the user's ``--set`` values last."""
    from ..config import load_settings, with_overrides
    from ..presets.offline import offline_settings

    settings = load_settings(preset, list(overrides))
    if offline or no_llm:
        settings = with_overrides(offline_settings(settings, "none" if no_llm else "local", grounding), overrides)
    return settings


def cited_sources(out: Path) -> list[tuple[str, list[tuple[str, Article | None, StudyDesign | None]]]]:
    """Per answered topic of the run directory ``out`` (file order): its cited PMIDs with the article and the study
    design the run recorded (``answers.jsonl``, ``articles.jsonl``), for printing."""
    from ..rundir import read_answers, read_articles, read_designs

    articles, designs = read_articles(out), read_designs(out)
    return [(a.topic_id, [(p, articles.get(a.topic_id, {}).get(p), designs.get(a.topic_id, {}).get(p))
                          for p in a.pmids]) for a in read_answers(out)]
