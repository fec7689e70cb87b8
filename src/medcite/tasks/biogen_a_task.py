"""TREC BioGen 2025 Task A as a task object (``biogen-a``): ground every answer sentence with new supporting
and contradicting PMIDs.

Reads the official input (:func:`medcite.tasks.biogen_a_format.read_task_a`), grounds each question-answer pair with
the pipeline's :class:`medcite.pipeline.grounding.Grounder` (the preset's retrieval, then the stance stage on the
best candidates; a pipeline made with ``grounding=True`` always has one), writes a run directory like Task B's
— one topic per qa_id, so ``medcite view`` opens it, and a resumed run skips the pairs already done — and from it
the official submission, validated like the official validator plus medcite's checks (sentences unchanged, every
new PMID read by the system). Registered as task ``biogen-a``, settings :class:`TaskAConfig`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Self

from pydantic import Field

from ..errors import ConfigError
from ..io import JSONObject, write_json
from ..retrieve.fusion import rrf
from ..rundir import RunWriter, query_json
from ..set_option import set_line
from ..types import Answer, AnswerSentence, Article, Evidence, Stance, Topic
from .base import Family, RunContext, TaskConfig, TaskResult
from .biogen_a_format import GroundedSentence, GroundingItem, PmidType, read_task_a, validate_task_a, write_task_a
from .biogen_b_validate import Report, write_errlog

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..pipeline.grounding import SentenceGrounding
    from ..types import StudyDesign
    from .biogen_b_validate import InCorpus

VERIFICATION = "verification.jsonl"


class TaskAConfig(TaskConfig):
    """What a BioGen Task A submission says about its run."""

    backend: Literal["biogen-a"] = "biogen-a"
    team_id: str = Field("medcite", description="Team id written into the submission.")
    run_id: str | None = Field(None, description="Run id in the submission (None: the run directory's name).")
    pmid_type: PmidType = Field("str", description="Write every PMID as a string or as an integer (one type "
                                "throughout).")


class TaskA:
    """Reader, grounding loop, writer and validator of TREC BioGen 2025 Task A."""

    name: ClassVar[str] = "biogen-a"
    Config = TaskAConfig
    family: ClassVar[Family] = "biogen"
    corpus: ClassVar[bool] = True
    grounding: ClassVar[bool] = True
    validate_kind: ClassVar[str] = "biogen-a"
    submission_name: ClassVar[str] = "submission.jsonl"

    def __init__(self, *, team_id: str = "medcite", run_id: str | None = None, pmid_type: PmidType = "str") -> None:
        self.team_id, self.run_id, self.pmid_type = team_id, run_id, pmid_type

    @classmethod
    def from_config(cls, cfg: TaskAConfig, ctx: BuildContext | None = None) -> Self:
        return cls(team_id=cfg.team_id, run_id=cfg.run_id, pmid_type=cfg.pmid_type)

    @classmethod
    def read(cls, path: str | Path) -> list[GroundingItem]:
        return read_task_a(path)

    @classmethod
    def validate(cls, path: str | Path, *, in_corpus: InCorpus | None = None,
                 expected_topics: Sequence[str] | None = None, evidence: dict[str, set[str]] | None = None,
                 inputs: Sequence[GroundingItem] | None = None) -> Report:
        return validate_task_a(path, inputs=inputs, in_corpus=in_corpus, evidence=evidence,
                               expected_qa_ids=expected_topics)

    def run(self, inputs: Sequence[GroundingItem], ctx: RunContext) -> TaskResult:
        """Ground every pair with the pipeline's grounder into ``ctx.out``, then write and validate the
        submission."""
        pipeline, items, out = ctx.corpus(self.name), inputs, ctx.out
        grounder = pipeline.grounder
        if grounder is None:  # the pipeline was not made for Task A, or its stance stage is 'none'
            raise ConfigError("Task A judges each candidate's stance, but this pipeline has no grounder "
                              "(stance.backend is 'none', or it was not made with grounding=True)",
                              hint="use a grounding preset (--preset offline-grounding) or "
                              + set_line("stance.backend", "..."))
        with RunWriter(out, pipeline.settings, command=ctx.command,
                       extra={"task": self.name, "corpus": {"path": str(pipeline.corpus_path),
                                                            **pipeline.store.fingerprint()}}) as writer:
            done = writer.done_topics()
            from ..llm.trace import trace_context, trace_to
            from ..progress import progress

            for item in progress([i for i in items if i.qa_id not in done], desc="qa pairs", unit="qa"):
                with trace_to(writer.path / "trace.jsonl"), trace_context(topic_id=item.qa_id):
                    found = grounder.ground([s.text for s in item.sentences], question=item.question,
                                            exclude=[s.existing for s in item.sentences], topic_id=item.qa_id)
                self._write_item(writer, item, found, pipeline.designs.label)
            writer.write_summary()
        results = self.results(out)
        submission = out / self.submission_name
        write_task_a(submission, items, results, team_id=self.team_id, run_id=self.run_id or out.name,
                     pmid_type=self.pmid_type)
        report = self.validate(submission, in_corpus=pipeline.store.existing, inputs=items,
                               evidence=self.judged(out))
        write_errlog(report)
        write_json(out / "validation.json", report.as_dict())
        return TaskResult(submission, report, len(results))

    # -- the run directory -------------------------------------------------------------------------------
    def _write_item(self, writer: RunWriter, item: GroundingItem, found: list[SentenceGrounding],
                    designs_of: Callable[[Iterable[Article]], Mapping[str, StudyDesign]]) -> None:
        evidence: list[Evidence] = []
        sentences: list[AnswerSentence] = []
        articles: dict[str, Article] = {}
        for g, source in zip(found, item.sentences, strict=True):
            cites, indices, stances = [], [], []
            for pmids, label in ((g.supported, Stance.SUPPORTS), (g.contradicted, Stance.CONTRADICTS)):
                for pmid in pmids:
                    v, article = g.verdicts[pmid], g.articles[pmid]
                    text = article.title if v.section == "title" else article.abstract
                    span = text[v.start: v.end] if v.start is not None and v.end is not None else article.text
                    evidence.append(Evidence(len(evidence) + 1, pmid, span, v.section, v.start, v.end,
                                             v.score(label), "stance-span", frozenset()))
                    articles[pmid] = article
                    cites.append(pmid)
                    indices.append(len(evidence))
                    stances.append((pmid, label))
            sentences.append(AnswerSentence(source.text, tuple(cites), tuple(indices), tuple(stances)))
        queries = [{**query_json(q), "id": f"s{i}-{q.id}"} for i, g in enumerate(found) for q in g.queries]
        rankings = {"retrieval": rrf([g.candidates for g in found])} if found else {}
        record = {"grounding": [
            {"sentence": i, "text": g.text, "existing": list(s.existing), "supported": g.supported,
             "contradicted": g.contradicted, "anchored": g.anchored,
             "contradiction_queries": [q.text for q in g.contradiction_queries],
             "contradiction_candidates": g.contradiction_candidates, "filtered": g.filtered,
             "verdicts": {p: {"stance": v.label.value, "scores": dict(v.scores), "span": [v.section, v.start, v.end]}
                          for p, v in g.verdicts.items()}}
            for i, (g, s) in enumerate(zip(found, item.sentences, strict=True))]}
        writer.write_topic(Topic(item.qa_id, item.question), queries=queries, rankings=rankings, evidence=evidence,
                           answer=Answer(item.qa_id, sentences, [], "grounding"), articles=articles.values(),
                           timings={}, verification=record, designs=designs_of(articles.values()))

    @staticmethod
    def _records(out: Path) -> dict[str, JSONObject]:
        path = out / VERIFICATION
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()] \
            if path.exists() else []
        return {str(r["topic_id"]): r for r in rows if "grounding" in r}

    def results(self, out: Path) -> dict[str, list[GroundedSentence]]:
        """qa_id -> the grounded sentences recorded in the run directory."""
        return {qa: [GroundedSentence(g["text"], tuple(g["existing"]), tuple(g["supported"]),
                                      tuple(g["contradicted"])) for g in r["grounding"]]
                for qa, r in self._records(out).items()}

    def judged(self, out: Path) -> dict[str, set[str]]:
        """qa_id -> every PMID the system read (judged) for that pair: the evidence a new PMID must come from."""
        return {qa: {p for g in r["grounding"] for p in g["verdicts"]} for qa, r in self._records(out).items()}
