"""Wires the stages from settings: query set -> retrieve/fuse/rerank -> evidence -> generate -> outputs.

Only this module knows every stage; stages never import each other's backends (STYLE.md). The Python API
mirrors the CLI::

    from medcite import Pipeline
    result = Pipeline.from_preset("offline", corpus="data/demo/store").answer("Is X effective for Y?")
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .config import Settings, load_settings
from .corpus.store import DocumentStore
from .errors import ConfigError, LLMError
from .progress import progress
from .rundir import RunWriter
from .types import Answer, Article, Evidence, Hit, Query, Topic

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

    def check_traceable(self) -> None:
        """Every cited PMID must be in the evidence shown to the generator and in the corpus we read."""
        shown = {e.pmid for e in self.evidence}
        for s in self.answer.sentences:
            for p in s.pmids:
                if p not in shown or p not in self.articles:
                    raise AssertionError(f"topic {self.topic.id}: PMID {p} cited but not in the evidence block")


class Pipeline:
    """One configured medcite system over one document store."""

    def __init__(self, settings: Settings, corpus: str | Path, *, llm: Any = None) -> None:
        """``llm`` (any :class:`~medcite.llm.base.LLM`) replaces the one ``settings.llm`` would make."""
        self.settings = settings
        self.corpus_path = Path(corpus)
        self.store = DocumentStore.open(self.corpus_path)
        if len(self.store) == 0:
            raise ConfigError(
                f"the document store at {corpus} is empty", hint="ingest PubMed files first: medcite ingest"
            )
        from .retrieve.pipeline import RetrievalPipeline

        self.llm = llm if llm is not None else _make_llm(settings)
        try:
            self.retrieval = RetrievalPipeline.from_settings(settings, self.corpus_path, store=self.store,
                                                             llm=self.llm)
        except (ConfigError, LLMError) as exc:
            if not offline_overrides(settings, "local"):
                raise
            raise type(exc)(exc.message, hint=f"{exc.hint + '; or ' if exc.hint else ''}run this preset "
                              f"offline: {' '.join(offline_overrides(settings, 'local'))}") from exc
        self.selector = _make_selector(settings, self.llm)
        self.generator = _make_generator(settings, self.llm)

    @classmethod
    def from_preset(cls, preset: str = "offline", corpus: str | Path = "data/demo/store",
                    overrides: Sequence[str] = ()) -> Pipeline:
        return cls(load_settings(preset, list(overrides)), corpus)

    def answer(self, topic: Topic | str) -> TopicResult:
        """Answer one question (a plain string becomes a topic with id ``q1``)."""
        if isinstance(topic, str):
            topic = Topic("q1", topic)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        retrieved = self.retrieval.retrieve(topic)
        timings["retrieval_s"] = time.perf_counter() - t0
        hits = retrieved.final
        t1 = time.perf_counter()
        articles = self.store.get_many([h.pmid for h in hits])
        evidence = self.selector.select(retrieved.queries, hits, articles)
        timings["evidence_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        answer = self.generator.generate(topic, retrieved.queries, evidence)
        timings["generation_s"] = time.perf_counter() - t2
        timings.update({f"{k}_s": v for k, v in retrieved.timings.items()})
        timings["total_s"] = time.perf_counter() - t0
        cited = {e.pmid for e in evidence}
        result = TopicResult(topic, retrieved.queries, retrieved.rankings, evidence, answer,
                             {p: a for p, a in articles.items() if p in cited}, timings)
        result.check_traceable()
        return result

    def run(self, topics: Iterable[Topic], out: str | Path, *, command: str = "") -> list[TopicResult]:
        """Answer every topic into the run directory ``out``; returns the results of this call.

        A run directory with the same settings is resumed: topics already answered there are skipped.
        """
        topics = list(topics)
        writer = RunWriter(out, self.settings, command=command,
                           extra={"corpus": {"path": str(self.corpus_path), **self.store.fingerprint()}})
        done = writer.done_topics()
        todo = [t for t in topics if t.id not in done]
        if done:
            log.info("resuming %s: %d of %d topics already answered", out, len(done), len(topics))
        results = []
        from .llm.trace import trace_context, trace_to

        for topic in progress(todo, desc="topics", unit="topic"):
            with trace_to(writer.path / "trace.jsonl"), trace_context(topic_id=topic.id):
                result = self.answer(topic)
            results.append(result)
            rankings: dict[str, Sequence[Hit]] = dict(result.rankings)
            writer.write_topic(
                topic,
                queries=[asdict(q) for q in result.queries],
                rankings=rankings,
                evidence=result.evidence,
                answer=result.answer,
                articles=result.articles.values(),
                timings=result.timings,
            )
        return results

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()
        self.store.close()


LLM_QUERYGENS = ("llm_reformulate", "llm_decompose")


def needs_llm(settings: Settings) -> bool:
    """Whether any stage of these settings calls a language model."""
    return (any(q in LLM_QUERYGENS for q in settings.retrieve.queries)
            or settings.evidence.selector == "summaries" or settings.generate.backend == "llm"
            or settings.rerank.backend == "llm-listwise")


def offline_overrides(settings: Settings, llm: str = "local") -> list[str]:
    """The ``--set`` options that run these settings on this machine's local stack.

    ``llm="local"`` swaps a server LLM for the packaged SmolLM2 (in-process) and a hub reranker that is not
    available offline for none; ``llm="none"`` also replaces every LLM stage by its no-LLM counterpart
    (LLM query generators by keyword queries, summaries by sentence snippets, LLM answers by extractive
    ones).
    """
    out: list[str] = []
    uses_llm = needs_llm(settings)
    if llm == "local" and uses_llm and settings.llm.backend not in ("local", "llamacpp"):
        out += ["--set", "llm.backend=local", "--set", "llm.model=null"]
    if settings.rerank.backend not in ("none", "embedding", "llm-listwise") and not _local_model(settings):
        out += ["--set", "rerank.backend=none"]
    dense = settings.index.dense
    if any(b.name == "dense" for b in settings.retrieve.branches) and not _local_encoder(dense.encoder):
        out += ["--set", "index.dense.encoder=minilm"]
        if dense.query_encoder:
            out += ["--set", "index.dense.query_encoder=null"]
    if llm == "none":
        if settings.llm.backend != "none":
            out += ["--set", "llm.backend=none"]
        queries = [q for q in settings.retrieve.queries if q not in LLM_QUERYGENS]
        if len(queries) != len(settings.retrieve.queries):
            if "keywords" not in queries:
                queries.append("keywords")
            out += ["--set", "retrieve.queries=" + json.dumps(queries, separators=(",", ":"))]
        if settings.evidence.selector == "summaries":
            out += ["--set", "evidence.selector=snippets"]
        if settings.generate.backend == "llm":
            out += ["--set", "generate.backend=extractive"]
        if settings.rerank.backend == "llm-listwise":
            out += ["--set", "rerank.backend=none"]
    return out


def _local_model(settings: Settings) -> bool:
    """True when the reranker's model is a folder on this machine (e.g. one trained by ``medcite train``)."""
    model = settings.rerank.model
    return bool(model) and Path(str(model)).expanduser().is_dir()


def _local_encoder(name: str) -> bool:
    """True for the packaged MiniLM (torch or ONNX) or an encoder folder on this machine."""
    from .index.dense.encoders import MINILM_ALIASES, ONNX_ALIASES

    return name.lower() in (*MINILM_ALIASES, *ONNX_ALIASES) or Path(name).expanduser().is_dir()


def _make_llm(settings: Settings) -> Any:
    """One LLM shared by every stage that needs one (None when none does); a server is checked up front."""
    if not needs_llm(settings):
        return None
    from .llm.base import llm_enabled, make_llm

    swap = " ".join(offline_overrides(settings, "local")) or "--set llm.backend=local"
    if settings.llm.backend == "openai":
        _check_server(settings, swap)
    try:
        llm = make_llm(settings)
    except (ConfigError, LLMError) as exc:
        raise type(exc)(exc.message, hint=f"{exc.hint + '; or ' if exc.hint else ''}run offline: {swap}") from exc
    if not llm_enabled(llm):
        raise ConfigError(
            f"preset {settings.preset!r} needs a language model, but llm.backend is 'none'",
            hint=f"use the packaged local model: {swap}; or run without LLM stages: "
            + " ".join(offline_overrides(settings, "none")),
        )
    return llm


def _check_server(settings: Settings, swap: str) -> None:
    """Fail before any work when the OpenAI-compatible server of ``llm.base_url`` does not answer."""
    import httpx

    url = settings.llm.base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=min(5.0, settings.llm.timeout_s))
    except httpx.HTTPError as exc:
        raise LLMError(
            f"the LLM server for model {settings.llm.model!r} at {settings.llm.base_url} does not answer "
            f"({type(exc).__name__})",
            hint=f"start it (e.g. `vllm serve {settings.llm.model}`), or run with the packaged local model: {swap}",
        ) from exc


def _make_selector(settings: Settings, llm: Any = None) -> Any:
    from . import registry
    from .evidence.snippets import SnippetSelector

    ev = settings.evidence
    factory = registry.load("evidence", ev.selector)
    if factory is SnippetSelector:
        return SnippetSelector(docs=ev.docs, max_items=ev.max_items, per_doc=ev.per_doc, lam=ev.lam)
    return factory.from_settings(settings, llm)


def _make_generator(settings: Settings, llm: Any = None) -> Any:
    from . import registry
    from .generate.extractive import ExtractiveGenerator

    gen = settings.generate
    factory = registry.load("generate", gen.backend)
    if factory is ExtractiveGenerator:
        return ExtractiveGenerator(max_sentences=gen.max_sentences, max_words=gen.max_words,
                                   max_citations=gen.max_citations, min_relative=gen.min_relative_score)
    return factory.from_settings(settings, llm)
