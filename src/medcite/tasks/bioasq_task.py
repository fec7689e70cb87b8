"""BioASQ Task b as task objects: Phase A (documents and snippets), Phase A+ (answers from the system's own
snippets) and Phase B (answers from the gold snippets of the input). FORMATS.md §5, docs/BIOASQ.md.

Each phase is a registered task (``bioasq-a``, ``bioasq-aplus``, ``bioasq-b``; no settings beyond ``backend``),
reads the questions with :func:`medcite.tasks.bioasq_format.read_questions` (bad input stops there, before
any model loads), answers them into a run directory and writes the submission with the atomic, validating
writers of :mod:`medcite.tasks.bioasq_format`: an error anywhere leaves no submission file behind.

- Phase A: the preset's retrieval (``pipeline.retrieval``), the first ``bioasq.documents`` hits as documents,
  and :class:`medcite.evidence.bioasq_snippets.BioASQSnippets` (``settings.bioasq``) as snippets.
- Phase A+: Phase A, then the answerer (registry stage ``qa``, built from ``settings.qa``) on those snippets.
- Phase B: the answerer on the input's gold snippets; no corpus.

The run directory (docs/RUNDIR.md) holds ``config.json`` (the resolved settings and their hash), one topic per
question (``topics.jsonl``, ``documents.trec``, ``evidence.jsonl``: the snippets, ``answers.jsonl``: the ideal
answer) so ``medcite view`` opens it, ``bioasq.jsonl``: each question's documents, snippets and answer as
submitted (``examples``: the ids of the training questions an LLM answerer was shown first), and
``submission.json`` (also written to ``output`` when one is given). Re-running into the same directory with the
same settings resumes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Self

from ..errors import ConfigError
from ..io import JSONObject, write_json
from ..rundir import RunWriter
from ..set_option import set_line
from ..types import (
    Answer,
    AnswerSentence,
    Article,
    Dropped,
    Evidence,
    Hit,
    QAAnswer,
    Question,
    Snippet,
    Topic,
)
from .base import Family, RunContext, TaskConfig
from .bioasq_format import read_questions, validate_phase_a, validate_phase_b, write_phase_a, write_phase_b

if TYPE_CHECKING:
    from ..config import Settings
    from ..context import BuildContext
    from ..evidence.bioasq_snippets import BioASQSnippets
    from ..pipeline import Pipeline
    from ..qa.base import Answerer
    from ..types import StudyDesign
    from .bioasq_format import BioASQReport

log = logging.getLogger(__name__)
RECORDS = "bioasq.jsonl"


@dataclass
class BioASQResult:
    """What a phase produced: the submission, its validation, and one record per question."""

    submission: Path
    run_dir: Path
    report: BioASQReport
    questions: int
    records: dict[str, JSONObject] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.report.ok

    @property
    def topics(self) -> int:
        """The questions answered (:class:`~medcite.tasks.base.Result`'s name for them)."""
        return self.questions


def build_answerer(settings: Settings, ctx: BuildContext, *, phase: Literal["aplus", "b"] = "b") -> Answerer:
    """The answerer ``settings.qa`` names, built through the one construction path (registry stage ``qa``); in
    Phase A+ with ``qa.aplus_ensemble`` (where the backend has it) in place of ``qa.ensemble``."""
    qa = settings.qa
    aplus = getattr(qa, "aplus_ensemble", None)  # only the llm backend answers with an ensemble
    if phase == "aplus" and aplus is not None:
        qa = qa.model_copy(update={"ensemble": list(aplus)})
    answerer: Answerer | None = ctx.build("qa", qa)
    if answerer is None:
        raise ConfigError("Phase A+ and B need an answerer, but qa.backend is 'none'",
                          hint=f"{set_line('qa.backend', 'extractive')} (offline) or {set_line('qa.backend', 'llm')}")
    return answerer


# -- records: the submission's content per question, kept in the run directory ------------------------------
def _snippet_row(s: Snippet) -> JSONObject:
    return {"pmid": s.pmid, "text": s.text, "begin_section": s.begin_section, "begin_offset": s.begin_offset,
            "end_section": s.end_section, "end_offset": s.end_offset, "score": round(float(s.score), 6)}


def _snippet_of(row: JSONObject) -> Snippet:
    return Snippet(row["pmid"], row["text"], row["begin_section"], row["begin_offset"], row["end_section"],
                   row["end_offset"], row.get("score", 0.0))


def _answer_row(a: QAAnswer) -> JSONObject:
    """A question's answer in ``bioasq.jsonl``, with the ids of its few-shot examples when it was shown any."""
    exact = list(a.exact) if isinstance(a.exact, tuple) else a.exact
    return {"exact": exact, "ideal": a.ideal, "notes": list(a.notes),
            **({"examples": list(a.examples)} if a.examples else {})}


def _answer_of(qid: str, row: JSONObject) -> QAAnswer:
    exact = row.get("exact")
    return QAAnswer(qid, tuple(exact) if isinstance(exact, list) else exact, row.get("ideal", ""),
                    notes=tuple(row.get("notes", ())), examples=tuple(row.get("examples", ())))


def _evidence(snippets: Sequence[Snippet]) -> list[Evidence]:
    return [Evidence(i, s.pmid, s.text, s.begin_section, s.begin_offset,
                     s.end_offset if s.end_section == s.begin_section else None, s.score, "bioasq-snippet")
            for i, s in enumerate(snippets, 1)]


def _answer(qid: str, a: QAAnswer | None, generator: str) -> Answer:
    """The run directory's answer line: the ideal answer (the exact one is in ``bioasq.jsonl``)."""
    if a is None:
        return Answer(qid, [], [], generator)
    return Answer(qid, [AnswerSentence(a.ideal)] if a.ideal else [],
                  [Dropped("answer", note, "qa note") for note in a.notes], generator)


class PhaseAConfig(TaskConfig):
    """BioASQ Phase A (its options are the preset's ``bioasq`` section)."""

    backend: Literal["bioasq-a"] = "bioasq-a"


class PhaseAPlusConfig(TaskConfig):
    """BioASQ Phase A+ (its options are the preset's ``bioasq`` and ``qa`` sections)."""

    backend: Literal["bioasq-aplus"] = "bioasq-aplus"


class PhaseBConfig(TaskConfig):
    """BioASQ Phase B (its options are the preset's ``qa`` section)."""

    backend: Literal["bioasq-b"] = "bioasq-b"


class _Phase:
    """Shared run-directory bookkeeping of the three phases."""

    name: ClassVar[str]
    family: ClassVar[Family] = "bioasq"
    corpus: ClassVar[bool] = True
    grounding: ClassVar[bool] = False
    submission_name: ClassVar[str] = "submission.json"

    def __init__(self, answerer: Answerer | None = None) -> None:
        """``answerer``: answer with this object instead of building ``settings.qa`` (Phase A+ and B)."""
        self.answerer = answerer

    @classmethod
    def from_config(cls, cfg: TaskConfig, ctx: BuildContext | None = None) -> Self:
        # the answerer is built when the run starts, after the run directory is claimed (as it always was)
        return cls()

    @classmethod
    def read(cls, path: str | Path) -> list[Question]:
        return read_questions(path)

    def _writer(self, out: Path, settings: Settings, command: str, extra: dict[str, object]) -> RunWriter:
        return RunWriter(out, settings, command=command, extra={"task": self.name, **extra}, per_topic=(RECORDS,))

    def _submit(self, out: Path, output: Path | None, write: Callable[[Path], None]) -> Path:
        """Write the submission into the run directory and, when asked, to ``output`` (each atomically)."""
        write(out / self.submission_name)
        if output is not None:
            write(output)
        log.info("%s: submission written to %s (run directory %s)", self.name, output or out / self.submission_name,
                 out)
        return output or out / self.submission_name

    @staticmethod
    def records(out: Path) -> dict[str, JSONObject]:
        """Question id -> its record, for the questions the run directory has finished."""
        path = out / RECORDS
        if not path.exists():
            return {}
        answers = out / "answers.jsonl"
        done = {str(json.loads(line)["topic_id"]) for line in answers.read_text(encoding="utf-8").splitlines()
                if line.strip()} if answers.exists() else set()
        rows: dict[str, JSONObject] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a torn last line of an interrupted run
                continue
            if str(row.get("id")) in done:
                rows[str(row["id"])] = row
        return rows

    def _record(self, writer: RunWriter, q: Question, row: JSONObject, hits: Sequence[Hit],
                snippets: Sequence[Snippet], answer: QAAnswer | None, generator: str,
                articles: Iterable[Article] = (),
                timings: dict[str, float] | None = None, designs: Mapping[str, StudyDesign] | None = None) -> None:
        writer.append(RECORDS, {"id": q.id, **row})
        writer.write_topic(Topic(q.id, q.body, type=q.type),
                           queries=[{"id": q.id, "text": q.body, "stage": "original"}],
                           rankings={"documents": list(hits)} if hits else {}, evidence=_evidence(snippets),
                           answer=_answer(q.id, answer, generator), articles=articles, timings=timings or {},
                           designs=designs)


class _Retrieving(_Phase):
    """Phase A's retrieval and snippet selection, shared by Phase A and A+."""

    def _retrieve(self, pipeline: Pipeline, selector: BioASQSnippets, q: Question
                  ) -> tuple[list[Hit], list[Snippet], dict[str, Article]]:
        cfg = pipeline.settings.bioasq
        final = pipeline.retrieval.retrieve(Topic(q.id, q.body, type=q.type)).final
        hits, top = final[: cfg.documents], final[: cfg.snippet_documents]  # snippets may come from more documents
        articles = pipeline.store.get_many([h.pmid for h in top])
        snippets = selector.select(q.body, top, articles)
        return hits, snippets, articles

    @staticmethod
    def _selector(pipeline: Pipeline) -> BioASQSnippets:
        from ..evidence.bioasq_snippets import BioASQSnippets

        return BioASQSnippets.from_settings(pipeline.settings.bioasq, pipeline.context)

    @staticmethod
    def _retrieval_row(hits: Sequence[Hit], snippets: Sequence[Snippet]) -> JSONObject:
        return {"documents": [h.pmid for h in hits], "snippets": [_snippet_row(s) for s in snippets]}

    @staticmethod
    def _retrieved(q: Question, row: JSONObject) -> Question:
        return Question(q.id, q.type, q.body, tuple(row["documents"]),
                        tuple(_snippet_of(s) for s in row["snippets"]))

    def _extra(self, pipeline: Pipeline) -> dict[str, object]:
        return {"corpus": {"path": str(pipeline.corpus_path), **pipeline.store.fingerprint()}}


class PhaseA(_Retrieving):
    """BioASQ Phase A: at most 10 ranked documents and 10 ranked snippets per question."""

    name = "bioasq-a"
    Config = PhaseAConfig

    def run(self, inputs: Sequence[Question], ctx: RunContext) -> BioASQResult:
        """Documents and snippets of every question into ``ctx.out``; the submission also to ``ctx.output``."""
        from ..progress import progress

        pipeline, questions, out, command, output = ctx.corpus(self.name), inputs, ctx.out, ctx.command, ctx.output
        selector = self._selector(pipeline)
        with self._writer(out, pipeline.settings, command, self._extra(pipeline)) as writer:
            done = writer.done_topics()
            for q in progress([q for q in questions if q.id not in done], desc="phase A", unit="question"):
                hits, snippets, articles = self._retrieve(pipeline, selector, q)
                self._record(writer, q, self._retrieval_row(hits, snippets), hits, snippets, None, "bioasq-a",
                             articles.values(), designs=pipeline.designs.label(articles.values()))
        records = self.records(out)
        results = [self._retrieved(q, records[q.id]) for q in questions]
        submission = self._submit(out, output, lambda path: write_phase_a(path, results))
        report = validate_phase_a(submission, inputs=questions)
        write_json(out / "validation.json", report.as_dict())
        return BioASQResult(submission, out, report, len(results), records)


class PhaseAPlus(_Retrieving):
    """BioASQ Phase A+: Phase A's documents and snippets, and exact and ideal answers from those snippets."""

    name = "bioasq-aplus"
    Config = PhaseAPlusConfig

    def run(self, inputs: Sequence[Question], ctx: RunContext) -> BioASQResult:
        """Phase A, then the answerer on the retrieved snippets; the submission also to ``ctx.output``."""
        from ..progress import progress

        pipeline, questions, out, command, output = ctx.corpus(self.name), inputs, ctx.out, ctx.command, ctx.output
        answerer = self.answerer or build_answerer(pipeline.settings, pipeline.context, phase="aplus")
        selector = self._selector(pipeline)
        with self._writer(out, pipeline.settings, command, self._extra(pipeline)) as writer:
            done = writer.done_topics()
            for q in progress([q for q in questions if q.id not in done], desc="phase A+", unit="question"):
                hits, snippets, articles = self._retrieve(pipeline, selector, q)
                answer = answerer.answer(q, snippets)
                self._record(writer, q, {**self._retrieval_row(hits, snippets), **_answer_row(answer)}, hits,
                             snippets, answer, getattr(answerer, "name", "qa"), articles.values(),
                             designs=pipeline.designs.label(articles.values()))
        records = self.records(out)
        retrieved = [self._retrieved(q, records[q.id]) for q in questions]
        answers = [_answer_of(q.id, records[q.id]) for q in questions]
        submission = self._submit(out, output,
                                  lambda path: write_phase_b(path, answers, questions=questions, retrieved=retrieved))
        report = validate_phase_b(submission, inputs=questions)
        write_json(out / "validation.json", report.as_dict())
        return BioASQResult(submission, out, report, len(answers), records)


class PhaseB(_Phase):
    """BioASQ Phase B: exact and ideal answers from the gold snippets given with each question."""

    name = "bioasq-b"
    Config = PhaseBConfig
    corpus = False

    def run(self, inputs: Sequence[Question], ctx: RunContext) -> BioASQResult:
        """The answerer on each question's gold snippets (no corpus); the submission also to ``ctx.output``."""
        from ..progress import progress

        settings, questions, out, command, output = ctx.settings, inputs, ctx.out, ctx.command, ctx.output

        without = [q.id for q in questions if not q.snippets]
        if without:
            log.warning("%d Phase B question(s) come without snippets and are answered from none: %s",
                        len(without), ", ".join(without[:5]) + (" ..." if len(without) > 5 else ""))
        answerer = self.answerer or build_answerer(settings, ctx.build)
        with self._writer(out, settings, command, {}) as writer:
            done = writer.done_topics()
            for q in progress([q for q in questions if q.id not in done], desc="phase B", unit="question"):
                answer = answerer.answer(q, q.snippets)
                self._record(writer, q, _answer_row(answer), [], q.snippets, answer, getattr(answerer, "name", "qa"))
        records = self.records(out)
        answers = [_answer_of(q.id, records[q.id]) for q in questions]
        submission = self._submit(out, output, lambda path: write_phase_b(path, answers, questions=questions))
        report = validate_phase_b(submission, inputs=questions)
        write_json(out / "validation.json", report.as_dict())
        return BioASQResult(submission, out, report, len(answers), records)
