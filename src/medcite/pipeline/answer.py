"""The answering pipeline: query set -> retrieve/fuse/rerank -> evidence -> generate -> outputs.

Every stage is built from settings through one path (:class:`.context.Context`, registry by name); stages
never import each other's backends (STYLE.md). The Python API mirrors the CLI::

    from medcite import Pipeline
    result = Pipeline.from_preset("offline", corpus="data/demo/store").answer("Is X effective for Y?")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings, load_settings
from ..context import ModelCache
from ..corpus.store import DocumentStore
from ..errors import ConfigError, LLMError
from ..presets.offline import grounds, offline_lines, uses_stance
from ..progress import progress
from ..rundir import RunWriter, query_json
from ..set_option import set_line
from ..types import Answer, Article, Evidence, Hit, Query, StudyDesign, Topic
from . import loops, multihop
from .context import Context
from .designs import DesignStep
from .gate import build_gate
from .grounding import Grounder
from .retrieval import RetrievalPipeline

if TYPE_CHECKING:
    from ..llm.base import LLM

log = logging.getLogger(__name__)


@dataclass
class TopicResult:
    """Everything the pipeline produced for one topic (what the run directory records)."""

    topic: Topic
    queries: list[Query]
    rankings: dict[str, list[Hit]]
    evidence: list[Evidence]
    answer: Answer
    articles: dict[str, Article]
    timings: dict[str, float] = field(default_factory=dict)
    verification: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what did not go as configured for its queries (run directory)
    designs: dict[str, StudyDesign] = field(default_factory=dict)  # PMID -> study design, for every article
    read: list[dict[str, Any]] = field(default_factory=list)  # the top articles the selector read, used or why not

    def check_traceable(self) -> None:
        """Every cited PMID must be in the evidence shown to the generator and in the corpus we read."""
        shown = {e.pmid for e in self.evidence}
        for s in self.answer.sentences:
            for p in s.pmids:
                if p not in shown or p not in self.articles:
                    raise AssertionError(f"topic {self.topic.id}: PMID {p} cited but not in the evidence block")


class Pipeline:
    """One configured medcite system over one document store."""

    def __init__(self, settings: Settings, corpus: str | Path, *, llm: LLM | None = None,
                 models: ModelCache | None = None, grounding: bool = False) -> None:
        """``llm`` (any :class:`~medcite.llm.base.LLM`) is used instead of the one ``settings.llm`` would make;
        ``models`` shares loaded models with other pipelines; ``grounding``: for Task A (the stance stage is
        built whatever the verification settings)."""
        self.settings = settings
        self.grounding = grounding
        self.corpus_path = Path(corpus)
        self.store = DocumentStore.open(self.corpus_path)
        if len(self.store) == 0:
            self.store.close()
            raise ConfigError(
                f"the document store at {corpus} is empty", hint="ingest PubMed files first: medcite ingest"
            )
        self.context = Context(settings, self.store, models=models, llm=llm, grounding=grounding)
        try:
            # the stance model first: a missing one must stop the run before an index is built (an hour on CPU)
            self.stance = self._stance()
            self.retrieval = RetrievalPipeline.from_settings(settings, store=self.store, context=self.context)
            self.selector = self.context.build("evidence", settings.evidence)
            self.generator = self.context.build("generate", settings.generate)
            self.gate = build_gate(settings, self.context, self.stance)
            self.designs = DesignStep(settings, self.context)
            # only where sentences are grounded (Task A, the answer-first flow): the ground settings may name an
            # LLM judge, a query set and a filter model, which a Task B run must not load or call
            self.grounder = Grounder.from_context(self.retrieval, self.stance, self.store, settings.ground,
                                                  self.context) if self.stance and grounds(settings, grounding) \
                else None
            if settings.flow == "multi-hop":
                multihop.hop_llm(self)  # the flow has no no-LLM stand-in: fail before any work
            # the LLM that answers first, or judges the evidence: without one (or with its server down) the step
            # cannot run, so say so now, not at the first topic with a run directory already made
            if settings.flow == "generate-then-ground":
                self.context.llm(settings.verify.llm, purpose="the generate-then-ground flow")
            if settings.verify.sufficiency_rounds:
                self.context.llm(settings.verify.llm,
                                 purpose="the evidence-sufficiency loop (verify.sufficiency_rounds)")
        except (ConfigError, LLMError) as exc:
            self.close()
            swap = offline_lines(settings, "local", grounding)
            if not swap or (exc.hint and "run offline" in exc.hint):
                raise
            raise type(exc)(exc.message, hint=f"{exc.hint + '; or ' if exc.hint else ''}run this preset "
                              f"offline: {' '.join(swap)}") from exc
        except BaseException:
            self.close()
            raise

    def _stance(self) -> Any:
        """The stance stage, built when Task A, a verification step or the answer-first flow needs it."""
        if not uses_stance(self.settings, self.grounding):
            return None
        stance = self.context.build("stance", self.settings.stance)
        if stance is None:
            raise ConfigError(
                "Task A, citation checks and the generate-then-ground flow need a stance backend, but "
                "stance.backend is 'none'",
                hint=f"{set_line('stance.backend', 'classifier')} (a model trained by `medcite train stance`), "
                f"{set_line('stance.backend', 'nli')} {set_line('stance.model', 'NAME')}, or "
                f"{set_line('stance.backend', 'llm')}",
            )
        return stance

    @classmethod
    def from_preset(cls, preset: str = "offline", corpus: str | Path = "data/demo/store",
                    overrides: Sequence[str] = ()) -> Pipeline:
        return cls(load_settings(preset, list(overrides)), corpus)

    def answer(self, topic: Topic | str) -> TopicResult:
        """Answer one question (a plain string becomes a topic with id ``q1``)."""
        if isinstance(topic, str):
            topic = Topic("q1", topic)
        if self.settings.flow == "generate-then-ground":
            return self._answer_first(topic)
        timings: dict[str, float] = {}
        record: dict[str, Any] = {}
        notes: list[str] = []
        t0 = time.perf_counter()
        if self.settings.flow == "multi-hop":
            hopped = multihop.retrieve(self, topic)
            hits, queries, stage_timings, notes = hopped.hits, hopped.queries, hopped.timings, hopped.notes
            rankings: dict[str, list[Hit]] = {"retrieval": hits}
            record["multihop"] = hopped.record
        else:
            retrieved = self.retrieval.retrieve(topic)
            hits, queries, stage_timings = retrieved.final, retrieved.queries, retrieved.timings
            rankings, notes = retrieved.rankings, retrieved.notes
        timings["retrieval_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        articles = self.store.get_many([h.pmid for h in hits])
        if self.settings.design.prefer_levels:
            hits = rankings["levels"] = self.designs.order(hits, articles)
        evidence = self.selector.select(queries, hits, articles)
        read = list(getattr(self.selector, "last", {}).get("read", []))
        if self.settings.verify.sufficiency_rounds:
            queries, hits, articles, evidence, record["sufficiency"] = loops.sufficient_evidence(
                self, topic, queries, hits, articles, evidence)
        timings["evidence_s"] = time.perf_counter() - t1
        if "multihop" in record and self.settings.hops.short_answer:
            t2 = time.perf_counter()
            record["multihop"]["short_answer"] = multihop.short_answer(self, topic, evidence)
            timings["short_answer_s"] = time.perf_counter() - t2
        t2 = time.perf_counter()
        answer = self.generator.generate(topic, queries, evidence)
        timings["generation_s"] = time.perf_counter() - t2
        if self.gate is not None:
            answer, record["gate"] = loops.gate_citations(self, topic, queries, evidence, answer, articles)
        if self.stance is not None:
            t3 = time.perf_counter()
            answer, record["citations"] = loops.verify_citations(self, topic, queries, evidence, articles, answer)
            timings["verification_s"] = time.perf_counter() - t3
        timings.update({f"{k}_s": v for k, v in stage_timings.items()})
        cited = {e.pmid for e in evidence}
        shown = {p: a for p, a in articles.items() if p in cited}
        answer, designs = self.designs.finish(answer, shown)
        timings["design_s"] = self.designs.take_seconds()
        timings["total_s"] = time.perf_counter() - t0
        result = TopicResult(topic, queries, rankings, evidence, answer, shown, timings, record, notes, designs, read)
        result.check_traceable()
        return result

    def _answer_first(self, topic: Topic) -> TopicResult:
        t0 = time.perf_counter()
        queries, hits, evidence, answer, articles, record = loops.answer_first(self, topic)
        answer, designs = self.designs.finish(answer, articles)
        result = TopicResult(topic, queries, {"retrieval": hits}, evidence, answer, articles,
                             {"design_s": self.designs.take_seconds(), "total_s": time.perf_counter() - t0}, record,
                             designs=designs)
        result.check_traceable()
        return result

    def run(self, topics: Iterable[Topic], out: str | Path, *, command: str = "") -> list[TopicResult]:
        """Answer every topic into the run directory ``out``; returns the results of this call.

        A run directory with the same settings is resumed: topics already answered there are skipped.
        """
        topics = list(topics)
        from ..llm.trace import trace_context, trace_to

        results = []
        with RunWriter(out, self.settings, command=command,
                       extra={"corpus": {"path": str(self.corpus_path), **self.store.fingerprint()}}) as writer:
            done = writer.done_topics()
            todo = [t for t in topics if t.id not in done]
            if done:
                log.info("resuming %s: %d of %d topics already answered", out, len(done), len(topics))
            for topic in progress(todo, desc="topics", unit="topic"):
                with trace_to(writer.path / "trace.jsonl"), trace_context(topic_id=topic.id):
                    result = self.answer(topic)
                results.append(result)
                writer.write_topic(
                    topic,
                    queries=[query_json(q) for q in result.queries],
                    rankings=dict(result.rankings),
                    evidence=result.evidence,
                    answer=result.answer,
                    articles=result.articles.values(),
                    timings=result.timings,
                    verification=result.verification or None,
                    notes=result.notes,
                    designs=result.designs,
                    read=result.read,
                )
            writer.write_summary()
        return results

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every stage, index, LLM and model the pipeline made, then its document store."""
        context = getattr(self, "context", None)
        if context is not None:
            context.close()
        self.store.close()
