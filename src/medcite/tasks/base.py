"""A task is an official input/output format: its input reader, the stages it runs, and its writer +
validator. Every task is registered (registry stage ``task``) and built like any backend, through the build
context (``ctx.build("task", cfg)``, ``cfg`` its :class:`TaskConfig` subclass); it reads its inputs and answers
them with one shape, ``run(inputs, ctx)``, where ``ctx`` is the :class:`RunContext` of that run.
:mod:`medcite.workflows.tasks` runs a task, ``cli/`` only parses options and prints, and
:meth:`medcite.pipeline.Pipeline.answer` stays the simple API underneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from ..errors import ConfigError
from ..settings_base import BackendConfig

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import BuildContext
    from ..pipeline import Pipeline
    from .biogen_b_validate import InCorpus, Report

#: which family a task's files belong to: ``medcite run --format`` and ``medcite validate KIND`` list the BioGen
#: tasks; the BioASQ phases have commands of their own (``medcite bioasq``, ``medcite validate bioasq``)
Family = Literal["biogen", "bioasq"]
#: a JSON object as read from (or written to) a file: an official input or submission, or a run directory's
#: record; its values stay untyped until a reader or validator checks them

ItemT = TypeVar("ItemT")


class TaskConfig(BackendConfig):
    """Base of every task's settings (``backend`` names the task). These are options of the submission, not
    of the system, so they stay out of the run directory's settings and their hash."""


@dataclass
class TaskResult:
    """What a task run produced: the submission file, its validation, and the topics answered."""

    submission: Path
    report: Report
    topics: int
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.report.ok

    @property
    def run_dir(self) -> Path:
        """The run directory (a BioGen submission is written into it)."""
        return self.submission.parent


class Result(Protocol):
    """What every task's ``run`` returns: the submission file, its validation, how many inputs were answered
    and the run directory."""

    @property
    def submission(self) -> Path: ...

    @property
    def report(self) -> Report: ...

    @property
    def topics(self) -> int: ...

    @property
    def run_dir(self) -> Path: ...

    @property
    def ok(self) -> bool: ...


@dataclass
class RunContext:
    """What one task run works with: the build context of its stages, the pipeline over the document store
    (None for a task that reads no corpus), the run directory ``out``, the command recorded in it, and
    ``output``, a second place to write the submission to (BioASQ)."""

    build: BuildContext
    out: Path
    pipeline: Pipeline | None = None
    command: str = ""
    output: Path | None = None

    @property
    def settings(self) -> Settings:
        return self.build.settings

    def corpus(self, task: str) -> Pipeline:
        """The pipeline over the document store; a task that retrieves calls this (None is a caller's bug)."""
        if self.pipeline is None:
            raise ConfigError(f"the task {task!r} retrieves from a document store, but this run has none",
                              hint="give the task's command a --corpus folder")
        return self.pipeline


@runtime_checkable
class Task(Protocol[ItemT]):
    """Reader, stages and writer + validator of one official format."""

    name: ClassVar[str]
    family: ClassVar[Family]
    #: it retrieves from a document store (a :class:`~medcite.pipeline.Pipeline` is made for it)
    corpus: ClassVar[bool]
    #: it grounds answers (BioGen Task A: the pipeline builds the stance stage and the grounder)
    grounding: ClassVar[bool]

    @classmethod
    def from_config(cls, cfg: Any, ctx: BuildContext) -> Task[ItemT]:
        """The task its settings (a :class:`TaskConfig` subclass) describe."""
        ...

    @classmethod
    def read(cls, path: str | Path) -> list[ItemT]:
        """The task's inputs (every variant of the official files); needs no context, so bad input stops
        before anything is built."""
        ...

    def run(self, inputs: Sequence[ItemT], ctx: RunContext) -> Result:
        """Answer ``inputs`` (what :meth:`read` returned) into the run directory ``ctx.out``, write the official
        file there, validate it."""
        ...


@runtime_checkable
class Validating(Protocol):
    """A task whose submissions ``medcite validate KIND FILE`` checks (the BioGen tasks)."""

    #: the KIND that ``medcite validate KIND FILE`` calls this task's validator by
    validate_kind: ClassVar[str]

    @classmethod
    def validate(cls, path: str | Path, *, in_corpus: InCorpus | None = None,
                 expected_topics: Sequence[str] | None = None,
                 evidence: dict[str, set[str]] | None = None) -> Report:
        """The official checks (and medcite's) on a submission file."""
        ...


__all__ = ["Family", "ItemT", "Result", "RunContext", "Task", "TaskConfig", "TaskResult", "Validating"]
