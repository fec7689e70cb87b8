"""One run of a preset against the oracle, and what became of what the oracle wrote (shared by
tests/integration/test_llm_oracle.py and benchmarks/bench_llm_oracle.py)."""

from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path
from typing import Any

from .answers import sentences
from .faults import PLANTED_PMID
from .gold import BIOASQ, held_out_questions, key, load
from .server import OracleServer, llm_overrides
from .styles import STYLES

GENERATION = ("generate", "generate_topic", "generate_plain", "clac25_generate", "generate_plain_question",
              "clac24_generate")


def questions(n: int, skip: int = 0) -> list[Any]:
    """Held-back BioASQ questions whose first ideal answer has 2-5 sentences, in the split's order."""
    found = [q for q in held_out_questions() if q.ideal_answers and 2 <= len(sentences(q.ideal_answers[0])) <= 5]
    return found[skip: skip + n]


def snippet_store(folder: Path, qs: list[Any] | None = None) -> Path:
    """A store of the articles of the gold snippets of ``qs`` (default: every held-back question); built once."""
    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.train.bioasq_docs import snippet_articles

    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    ids = {q.id for q in (qs if qs is not None else held_out_questions())}
    with gzip.open(BIOASQ, "rt", encoding="utf-8") as fh:
        raw = [q for q in json.load(fh)["questions"] if q["id"] in ids]
    with DocumentStore.create(folder) as store, store.transaction() as tx:
        tx.upsert(snippet_articles(raw), FileStats("gold snippets of held-back BioASQ questions"))
    (folder / "done").write_text("ok")
    return folder


def run_preset(preset: str, qs: list[Any], store: Path, out: Path, *, sets: tuple[str, ...] = (),
               fault: str | None = None, rate: float = 0.0, styles: tuple[str, ...] = STYLES,
               seed: int = 0, degraded: str | None = None) -> dict[str, Any]:
    """Run Task B preset ``preset`` on ``qs`` against the oracle (offline swaps for the other models) and count:
    sentences the oracle wrote in each topic's first answer and those that reached the final answers, extractive
    fallbacks, planted sentences found in a final answer, cited PMIDs outside the evidence shown, sentences over
    3 PMIDs and answers over 250 words. ``degraded``: the server plays a weak model (:class:`OracleServer`)."""
    from medcite.config import load_settings, with_overrides
    from medcite.pipeline import Pipeline
    from medcite.presets.offline import offline_settings
    from medcite.rundir import read_answers
    from medcite.tasks.biogen_b_validate import evidence_by_topic
    from medcite.types import Topic

    server = OracleServer(load(qs), styles=styles, fault=fault, rate=rate, seed=seed, timeout_s=2.0,
                          degraded=degraded)
    base = load_settings(preset)
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    with server.running() as url:
        overrides = llm_overrides(url, list(base.llms), timeout_s=1.0 if fault == "timeout" else 60.0)
        with Pipeline(with_overrides(offline_settings(base, "local"), [*overrides, *sets]), store) as pipeline:
            pipeline.run([Topic(q.id, q.body) for q in qs], out)
    seconds = time.perf_counter() - started
    answers = read_answers(out)
    evidence = evidence_by_topic(out)
    written: dict[str, int] = {}
    for r in server.log:  # each topic's first generation request
        if r.prompt in GENERATION and not r.retry and r.topic and r.topic not in written:
            written[r.topic] = r.sentences
    kept = fallbacks = over_cap = outside = long_answers = uncited = pmid_prose = 0
    final: set[str] = set()
    for a in answers:
        is_fallback = "fallback" in a.generator
        fallbacks += is_fallback
        kept += 0 if is_fallback else len(a.sentences)
        allowed = evidence.get(a.topic_id, set())
        for s in a.sentences:
            final.add(key(s.text))
            over_cap += len(s.pmids) > 3
            uncited += not s.pmids and getattr(s, "kind", "") == ""
            pmid_prose += PLANTED_PMID in s.text or "PMID" in s.text
            outside += sum(p not in allowed for p in s.pmids)
        long_answers += sum(len(s.text.split()) for s in a.sentences) > 250
    planted = [p for p in server.planted if p.text]
    return {"preset": preset, "sets": list(sets), "fault": fault, "rate": rate, "topics": len(qs),
            "answered": sum(bool(a.sentences) for a in answers), "written": sum(written.values()), "kept": kept,
            "fallbacks": fallbacks, "unrecognised": server.counts().get("UNRECOGNISED", 0),
            "calls": dict(server.counts()), "planted": len(server.planted), "planted_sentences": len(planted),
            "planted_in_answers": sum(key(p.text) in final for p in planted),
            "pmids_outside_evidence": outside, "sentences_over_3_pmids": over_cap,
            "uncited_sentences": uncited, "pmids_in_prose": pmid_prose,
            "answers_over_250_words": long_answers, "seconds": round(seconds, 1)}


def listwise_map(qs: list[Any], store: Path, *, depth: int = 30, window: int = 20, step: int = 10
                 ) -> dict[str, Any]:
    """The listwise LLM reranker (RankGPT sliding window) over each question's BM25 top ``depth``: mean MAP@10
    of its order, of the oracle order of the same pool (gold passages first) and of BM25's own order."""
    from medcite.config import load_settings
    from medcite.corpus.store import DocumentStore
    from medcite.evaluate.bioasq_map import average_precision
    from medcite.pipeline.context import Context
    from medcite.rerank.llm_listwise import ListwiseConfig

    gold = load(qs)
    server = OracleServer(gold, styles=STYLES)
    got: list[float] = []
    ideal: list[float] = []
    first: list[float] = []
    with server.running() as url, DocumentStore.open(store) as docs:
        ctx = Context(load_settings("bm25", llm_overrides(url)), store=docs)
        try:
            bm25 = ctx.index("bm25")
            reranker = ctx.build("rerank", ListwiseConfig(top_n=depth, window=window, step=step))
            for q in qs:
                hits = bm25.search(q.body, depth)
                articles = docs.get_many([h.pmid for h in hits])
                relevant = set(q.documents)
                ranked = reranker.rerank(q.body, hits, articles, depth)
                order = {h.pmid: n for n, h in enumerate(hits)}
                best = sorted(hits, key=lambda h: (-gold.relevance(q, articles[h.pmid].text), order[h.pmid]))
                got.append(average_precision([h.pmid for h in ranked], relevant))
                ideal.append(average_precision([h.pmid for h in best], relevant))
                first.append(average_precision([h.pmid for h in hits], relevant))
        finally:
            ctx.close()

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else 0.0

    return {"questions": len(qs), "map10_listwise": mean(got), "map10_oracle_order": mean(ideal),
            "map10_bm25": mean(first), "ratio": round(mean(got) / mean(ideal), 4) if mean(ideal) else None,
            "calls": dict(server.counts()), "unrecognised": server.counts().get("UNRECOGNISED", 0)}


def gold_answers(qs: list[Any]) -> list[Any]:
    """The gold exact (first name of each entity) and ideal answers as a system's Phase B answers: the ceiling."""
    from medcite.types import QAAnswer

    def exact(q: Any) -> Any:
        if q.type == "yesno":
            return q.exact_answer
        return tuple(names[0] for names in q.exact_answer if names) if isinstance(q.exact_answer, tuple) else None

    return [QAAnswer(q.id, exact(q), q.ideal_answers[0] if q.ideal_answers else "") for q in qs]


def run_phase_b(preset: str, qs: list[Any], out: Path, *, degraded: str | None = None
                ) -> tuple[list[Any], OracleServer, float]:
    """BioASQ Phase B of ``preset`` from the gold snippets of ``qs`` against the oracle (offline swaps for the
    other models, zero-shot): (the answers read back from the submission, the server, seconds). ``degraded``: the
    server plays a weak model (:class:`OracleServer`)."""
    from medcite.config import load_settings, with_overrides
    from medcite.pipeline.context import Context
    from medcite.presets.offline import offline_settings
    from medcite.tasks.base import RunContext
    from medcite.tasks.bioasq_format import read_phase_b_run
    from medcite.tasks.bioasq_task import PhaseB

    server = OracleServer(load(qs), styles=STYLES, degraded=degraded)
    base = load_settings(preset)
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    with server.running() as url:
        settings = with_overrides(offline_settings(base, "local"), [*llm_overrides(url, list(base.llms)), "qa.shots=0"])
        ctx = Context(settings)
        try:
            result = PhaseB().run(qs, RunContext(ctx, out / "run", output=out / "answers.json"))
        finally:
            ctx.close()
    return read_phase_b_run(result.submission), server, time.perf_counter() - started


def run_phase_a_plus(preset: str, qs: list[Any], store: Path, out: Path, *, degraded: str | None = None
                     ) -> tuple[Any, OracleServer, float]:
    """BioASQ Phase A+ of ``preset`` on ``qs`` over ``store`` against the oracle (offline swaps for the other
    models): retrieval, snippets and answers. (the task's result, the server, seconds)."""
    from medcite.config import load_settings, with_overrides
    from medcite.pipeline import Pipeline
    from medcite.presets.offline import offline_settings
    from medcite.tasks.base import RunContext
    from medcite.tasks.bioasq_task import PhaseAPlus

    server = OracleServer(load(qs), styles=STYLES, degraded=degraded)
    base = load_settings(preset)
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    with server.running() as url:
        settings = with_overrides(offline_settings(base, "local"), llm_overrides(url, list(base.llms)))
        with Pipeline(settings, store) as pipeline:
            result = PhaseAPlus().run(qs, RunContext(pipeline.context, out, pipeline=pipeline))
    return result, server, time.perf_counter() - started


def run_grounding(preset: str, qs: list[Any], store: Path, out: Path, *, sets: tuple[str, ...] = (),
                  degraded: str | None = None) -> dict[str, Any]:
    """Task A of ``preset`` through ``medcite ground`` against the oracle (offline swaps for the other models):
    each question's ideal-answer sentences are the answer to ground. Counts the supported citations that are
    gold evidence of the sentence's question (the oracle's stance judge says SUPPORTS only for those, so the
    ceiling is 1.0), contradicted citations, and, as the trivial baseline, the same share for BM25's top 3 of
    each sentence cited blindly. ``degraded``: the server plays a weak model (:class:`OracleServer`)."""
    from click.testing import CliRunner

    from medcite.cli.main import cli
    from medcite.config import load_settings
    from medcite.corpus.store import DocumentStore
    from medcite.pipeline.context import Context

    gold = load(qs)
    server = OracleServer(gold, styles=STYLES, degraded=degraded)
    base = load_settings(preset)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    items = out / "input.jsonl"
    items.write_text("".join(json.dumps({"metadata": {"qa_id": q.id, "question": q.body},
                                         "answer": [{"text": s, "existing_supported_citations": []}
                                                    for s in sentences(q.ideal_answers[0])]}) + "\n" for q in qs))
    started = time.perf_counter()
    with server.running() as url:
        swaps = llm_overrides(url, list(base.llms))  # the LLMs stay the preset's, served by the oracle
        args = ["ground", "--input", str(items), "--corpus", str(store), "--out", str(out / "run"),
                "--preset", preset, "--offline"]
        for s in [*swaps, *sets]:
            args += ["--set", s]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    seconds = time.perf_counter() - started
    if result.exit_code != 0:
        raise AssertionError(f"medcite ground --preset {preset} exited {result.exit_code}: {result.output[-2000:]}")
    rows = [json.loads(x) for x in (out / "run" / "submission.jsonl").read_text().splitlines() if x.strip()]
    by_id = {q.id: q for q in qs}
    cited = correct = contradicted = baseline_cited = baseline_correct = n_sentences = grounded = 0
    with DocumentStore.open(store) as docs:
        ctx = Context(load_settings("bm25"), store=docs)
        try:
            bm25 = ctx.index("bm25")
            for row in rows:
                q = by_id[str(row["metadata"]["qa_id"])]
                for s in row["answer"]:
                    n_sentences += 1
                    pmids = [str(p) for p in s.get("supported_citations", [])]
                    grounded += bool(pmids)
                    contradicted += len(s.get("contradicted_citations", []))
                    articles = docs.get_many(pmids)
                    cited += len(pmids)
                    correct += sum(gold.is_gold(q, articles[p].text) for p in pmids if p in articles)
                    top = [h.pmid for h in bm25.search(s["text"], 3)]
                    blind = docs.get_many(top)
                    baseline_cited += len(top)
                    baseline_correct += sum(gold.is_gold(q, blind[p].text) for p in top if p in blind)
        finally:
            ctx.close()
    framings = sorted({r.framing for r in server.log if r.framing})
    return {"preset": preset, "sets": list(sets), "questions": len(qs), "sentences": n_sentences,
            "grounded_sentences": grounded, "supported_citations": cited,
            "precision": round(correct / cited, 4) if cited else None,
            "bm25_top3_precision": round(baseline_correct / baseline_cited, 4) if baseline_cited else None,
            "items": len(rows), "contradicted_citations": contradicted, "framings": framings,
            "calls": dict(server.counts()), "unrecognised": server.counts().get("UNRECOGNISED", 0),
            "seconds": round(seconds, 1)}
