"""A task is an official input/output format: its input reader, the stages it runs, and its writer +
validator. ``medcite run --format NAME`` picks one by name (registry stage ``task``); ``cli/`` only parses
options and calls it, and :meth:`medcite.pipeline.Pipeline.answer` stays the simple API underneath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..pipeline import Pipeline
    from ..types import Topic
    from .validate import Report


@dataclass
class TaskResult:
    """What a task run produced: the submission file, its validation, and the topics answered."""

    submission: Path
    report: Report
    topics: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.report.ok


@runtime_checkable
class Task(Protocol):
    """Reader, stages and writer + validator of one official format."""

    name: ClassVar[str]
    #: the KIND that `medcite validate KIND FILE` calls this task's validator by
    validate_kind: ClassVar[str]

    def read(self, path: str | Path) -> list[Topic]:
        """The task's inputs as topics (every variant of the official files)."""
        ...

    def run(self, pipeline: Pipeline, topics: Sequence[Topic], out: Path, *, command: str = "") -> TaskResult:
        """Answer ``topics`` into the run directory ``out``, write the official file there, validate it."""
        ...

    def validate(self, path: str | Path, *, in_corpus: Any = None, expected_topics: Sequence[str] | None = None,
                 evidence: dict[str, set[str]] | None = None) -> Report:
        """The official checks (and medcite's) on a submission file."""
        ...
