"""TREC BioGen Task B as task objects: 2025 (JSONL, ``biogen25``) and 2024 (JSON, ``biogen24``).

Both are registered tasks (``biogen25``, ``biogen24``; settings :class:`TaskBConfig`), read every topics variant
(:func:`medcite.tasks.topics.read_topics`), answer through the pipeline into a run directory, write the
official submission there (:mod:`.biogen_b_format`) and validate it like the official validators plus medcite's checks
(:mod:`.biogen_b_validate`): ``validation.json`` and, on failure, a ``.errlog`` beside the file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Self

from pydantic import Field

from ..io import write_json
from ..rundir import read_answers
from .base import Family, RunContext, TaskConfig, TaskResult
from .biogen_b_format import write_biogen24, write_biogen25
from .biogen_b_validate import Report, evidence_by_topic, validate_biogen24, validate_biogen25, write_errlog
from .topics import read_topics

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..types import Answer, Topic
    from .biogen_b_validate import InCorpus


class TaskBConfig(TaskConfig):
    """What a BioGen Task B submission says about its run."""

    team_id: str = Field("medcite", description="Team id written into the submission.")
    run_id: str | None = Field(None, description="Run id in the submission (None: the run directory's name).")
    contact_email: str = Field("medcite@example.org", description="Contact e-mail (the 2024 format only).")


class TaskB2025Config(TaskBConfig):
    backend: Literal["biogen25"] = "biogen25"


class TaskB2024Config(TaskBConfig):
    backend: Literal["biogen24"] = "biogen24"


class _TaskB(ABC):
    name: ClassVar[str]
    validate_kind: ClassVar[str]
    submission_name: ClassVar[str]
    family: ClassVar[Family] = "biogen"
    corpus: ClassVar[bool] = True
    grounding: ClassVar[bool] = False

    def __init__(self, *, team_id: str = "medcite", run_id: str | None = None,
                 contact_email: str = "medcite@example.org") -> None:
        self.team_id = team_id
        self.run_id = run_id
        self.contact_email = contact_email

    @classmethod
    def from_config(cls, cfg: TaskBConfig, ctx: BuildContext | None = None) -> Self:
        return cls(team_id=cfg.team_id, run_id=cfg.run_id, contact_email=cfg.contact_email)

    @classmethod
    def read(cls, path: str | Path) -> list[Topic]:
        return read_topics(path)

    @abstractmethod
    def write(self, path: Path, answers: Sequence[Answer], run_id: str) -> None:
        """Write the official submission file of ``answers``."""

    @classmethod
    @abstractmethod
    def validate(cls, path: str | Path, *, in_corpus: InCorpus | None = None,
                 expected_topics: Sequence[str] | None = None, evidence: dict[str, set[str]] | None = None) -> Report:
        """The official checks plus medcite's."""

    def run(self, inputs: Sequence[Topic], ctx: RunContext) -> TaskResult:
        """Answer the topics through the pipeline into ``ctx.out``, then write and validate the submission."""
        pipeline, topics, out = ctx.corpus(self.name), inputs, ctx.out
        pipeline.run(topics, out, command=ctx.command)
        order = {t.id: i for i, t in enumerate(topics)}
        answers = sorted(read_answers(out), key=lambda a: order.get(a.topic_id, len(order)))
        submission = out / self.submission_name
        self.write(submission, answers, self.run_id or out.name)
        report = self.validate(submission, in_corpus=pipeline.store.existing, expected_topics=list(order),
                               evidence=evidence_by_topic(out))
        write_errlog(report)
        write_json(out / "validation.json", report.as_dict())
        return TaskResult(submission, report, len(answers))


class TaskB2025(_TaskB):
    """TREC BioGen 2025 Task B: one JSONL line per topic, ``responses`` of ``{text, citations}``."""

    name = "biogen25"
    Config = TaskB2025Config
    validate_kind = "biogen-b"
    submission_name = "submission.jsonl"

    def write(self, path: Path, answers: Sequence[Answer], run_id: str) -> None:
        write_biogen25(path, answers, self.team_id, run_id)

    @classmethod
    def validate(cls, path: str | Path, *, in_corpus: InCorpus | None = None,
                 expected_topics: Sequence[str] | None = None, evidence: dict[str, set[str]] | None = None) -> Report:
        return validate_biogen25(path, in_corpus=in_corpus, expected_topics=expected_topics, evidence=evidence)


class TaskB2024(_TaskB):
    """TREC BioGen 2024: one JSON document, answers with ``[pmid,...]`` brackets and ``references``."""

    name = "biogen24"
    Config = TaskB2024Config
    validate_kind = "biogen24"
    submission_name = "submission.json"

    def write(self, path: Path, answers: Sequence[Answer], run_id: str) -> None:
        write_biogen24(path, answers, team_id=self.team_id, run_name=run_id, contact_email=self.contact_email)

    @classmethod
    def validate(cls, path: str | Path, *, in_corpus: InCorpus | None = None,
                 expected_topics: Sequence[str] | None = None, evidence: dict[str, set[str]] | None = None) -> Report:
        return validate_biogen24(path, in_corpus=in_corpus, expected_topics=expected_topics, evidence=evidence)
