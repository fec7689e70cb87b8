"""TREC BioGen 2025 Task B: every preset over the 30 topics on the demo corpus, offline.

For each preset and stack (``none``: every LLM stage swapped for its no-LLM counterpart; ``local``: the
packaged SmolLM2-135M in-process, see :func:`medcite.presets.offline.offline_settings`), the run directory is
written like ``medcite run`` does, the submission validated (official checks + medcite's), and checked
again here: PMIDs cited outside the topic's evidence block, sentences over 3 PMIDs, answers over 250 words.
Per-topic latency by stage comes from the run's ``timings.jsonl``: retrieval (query generation + first
stage + fusion), rerank, evidence, generation. With ``--rerun`` each finished run is repeated into a fresh
directory and must be served wholly from the LLM cache (every trace row a cache hit, identical answers).

Results accumulate in ``benchmarks/results/task_b.json`` (one entry per preset and stack, written after
each run, so a long local-LLM matrix keeps what finished) and the docs/BENCHMARKS.md section ``task_b``.

    python benchmarks/bench_task_b.py --stack none
    python benchmarks/bench_task_b.py --stack local --presets clac25-a --set evidence.docs=3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plot_results  # noqa: E402

from medcite.config import load_settings, with_overrides  # noqa: E402
from medcite.corpus.store import DocumentStore  # noqa: E402
from medcite.errors import ConfigError, LLMError  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import Pipeline  # noqa: E402
from medcite.presets.offline import offline_lines, offline_settings  # noqa: E402
from medcite.rundir import read_answers  # noqa: E402
from medcite.tasks.biogen_b_format import write_biogen25  # noqa: E402
from medcite.tasks.biogen_b_validate import evidence_by_topic, validate_biogen25  # noqa: E402
from medcite.tasks.topics import read_topics  # noqa: E402

#: every Task B preset (BioGen 2025); Task A and retrieval-only presets are measured elsewhere
PRESETS = ["offline", "clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e", "dal25-rrf",
           "dal25-rfr_monot5-msmarco_llama70b", "dal25-rfr_monot5-msmarco_deepseek-r1", "dal25-rmmln", "dal25-rmmdn",
           "dal25-afmmd", "dal25-afmmdn", "medcite-agentic", "medcite-agentic-novalidate", "dal25-expd", "dal25-empd",
           "clac24-simpleqa", "clac24-simpleqa-hybrid", "clac24-medhopqa-bm25", "clac24-medhopqa-hybrid"]
STAGES = ("retrieval", "rerank", "evidence", "generation")
NAME = "task_b"


def stage_seconds(row: dict[str, float]) -> dict[str, float]:
    """Per-topic seconds by stage from one ``timings.jsonl`` row (retrieval excludes the rerank)."""
    rerank = row.get("rerank_s", 0.0)
    return {"retrieval": row.get("retrieval_s", 0.0) - rerank, "rerank": rerank,
            "evidence": row.get("evidence_s", 0.0), "generation": row.get("generation_s", 0.0),
            "querygen": row.get("querygen_s", 0.0), "total": row.get("total_s", 0.0)}


def drop_dense(preset: str) -> list[str]:
    """``--set`` that replaces a dense branch by BM25 (for a store without a dense index)."""
    branches = load_settings(preset).retrieve.branches
    if not any(b.backend == "dense" for b in branches):
        return []
    kept = [{**b.model_dump(exclude_defaults=True), "backend": b.backend} for b in branches if b.backend != "dense"]
    kept = kept or [{"backend": "bm25"}]
    return [f"retrieve.branches={json.dumps(kept, separators=(',', ':'))}"]


def check_run(out: Path, topic_ids: list[str], corpus: Path) -> dict[str, Any]:
    answers = read_answers(out)
    order = {t: i for i, t in enumerate(topic_ids)}
    answers.sort(key=lambda a: order.get(a.topic_id, len(order)))
    sub = out / "submission.jsonl"
    write_biogen25(sub, answers, "medcite", out.name)
    evidence = evidence_by_topic(out)
    with DocumentStore.open(corpus) as store:
        report = validate_biogen25(sub, in_corpus=store.existing, expected_topics=topic_ids, evidence=evidence)
    outside = sum(p not in evidence.get(a.topic_id, set()) for a in answers for s in a.sentences for p in s.pmids)
    over_cites = sum(len(s.pmids) > 3 for a in answers for s in a.sentences)
    over_words = sum(sum(len(s.text.split()) for s in a.sentences) > 250 for a in answers)
    empty = sum(not a.sentences for a in answers)
    generators: dict[str, int] = {}
    for a in answers:
        generators[a.generator] = generators.get(a.generator, 0) + 1
    return {"topics": len(answers), "valid": report.ok, "errors": report.errors[:10],
            "pmids_outside_evidence": outside, "sentences_over_3_pmids": over_cites,
            "answers_over_250_words": over_words, "empty_answers": empty, "generators": generators,
            "mean_words": round(sum(len(a.text.split()) for a in answers) / max(len(answers), 1), 1),
            "mean_sentences": round(sum(len(a.sentences) for a in answers) / max(len(answers), 1), 2),
            "answers": {a.topic_id: a.text for a in answers}}


def run_one(preset: str, stack: str, topics: list[Any], corpus: Path, out: Path, sets: list[str],
            resume: bool = False) -> dict[str, Any]:
    base = load_settings(preset)
    overrides = offline_lines(base, stack)  # what the run changed, as printed for the results
    settings = with_overrides(offline_settings(base, stack), sets)
    if out.exists() and not resume:
        shutil.rmtree(out)
    start = time.perf_counter()
    pipeline = Pipeline(settings, corpus)
    setup = time.perf_counter() - start
    try:
        pipeline.run(topics, out, command=f"bench_task_b {preset} {stack}")
    finally:
        pipeline.close()
    wall = time.perf_counter() - start
    rows = [json.loads(x) for x in (out / "timings.jsonl").read_text().splitlines()]
    per_stage = {k: [stage_seconds(r)[k] for r in rows] for k in (*STAGES, "querygen", "total")}
    result = {"preset": preset, "stack": stack, "overrides": overrides, "sets": sets, "run_dir": str(out),
              "setup_s": round(setup, 2), "wall_s": round(wall, 2),
              "latency": {k: common.latency_summary(v) for k, v in per_stage.items()},
              **check_run(out, [t.id for t in topics], corpus)}
    trace = out / "trace.jsonl"
    if trace.exists():
        calls = [row for row in map(json.loads, trace.read_text().splitlines()) if "event" not in row]  # no rejections
        result["llm_calls"] = len(calls)
        result["llm_cache_hits"] = sum(bool(c.get("cache_hit")) for c in calls)
    return result


def rerun_from_cache(first: dict[str, Any], topics: list[Any], corpus: Path) -> dict[str, Any]:
    out = Path(first["run_dir"] + "-rerun")
    again = run_one(first["preset"], first["stack"], topics, corpus, out, first["sets"])
    return {"wall_s": again["wall_s"], "llm_calls": again.get("llm_calls", 0),
            "all_cache_hits": again.get("llm_calls", 0) == again.get("llm_cache_hits", 0),
            "identical_answers": again["answers"] == first["answers"]}


def load_results() -> dict[str, Any]:
    path = common.RESULTS_DIR / f"{NAME}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def ms(summary: dict[str, Any], key: str) -> str:
    return "–" if not summary.get("n") else f"{summary[key] / 1000:.2f}"


def markdown(results: dict[str, Any]) -> str:
    runs = results.get("runs", {})
    lines = [
        "## TREC BioGen 2025 Task B presets (`benchmarks/bench_task_b.py`)",
        "",
        "The topics of `biogen2025_taskB_topics.json` (30, or the first N where the table says so) on the demo corpus "
        "(`data/demo/store`, 50k PubMed abstracts), measured on the shared 2-core machine while other jobs ran "
        "(several runs at once, one torch thread each), so timings are upper bounds. Stack `none`: every LLM stage "
        "swapped for its no-LLM counterpart (`offline_settings(settings, 'none')`); `local`: the packaged "
        "SmolLM2-135M in-process (`offline_settings(settings, 'local')`) with the small budgets listed. Servers "
        "and hub models named by the presets (vLLM, cross-encoders, MedCPT) are not available here, so no run "
        "reranks, and dense branches use the packaged MiniLM (`indexes.dense.encoder=minilm`, the store's dense "
        "index built on first use). A run whose overrides list `retrieve.branches=[...bm25...]` had BM25 in place "
        "of its dense branch (`--drop-dense`, measured before the demo store had a dense index).",
        "",
        common.markdown_table(
            ["preset", "stack", "topics", "valid", "PMIDs outside evidence", "> 3 PMIDs", "> 250 words", "empty",
             "generators", "mean words", "re-run all cached"],
            [[r["preset"], r["stack"], r["topics"], "yes" if r["valid"] else "NO", r["pmids_outside_evidence"],
              r["sentences_over_3_pmids"], r["answers_over_250_words"], r["empty_answers"],
              ", ".join(f"{k} {v}" for k, v in sorted(r["generators"].items())), r["mean_words"],
              ("yes" if r["rerun"]["all_cache_hits"] and r["rerun"]["identical_answers"] else "NO")
              if "rerun" in r else "–"]
             for r in runs.values()],
        ),
        "",
        "Per-topic latency by stage, seconds (mean / p50 / p95); retrieval includes query generation, whose LLM "
        "share is also shown alone:",
        "",
        common.markdown_table(
            ["preset", "stack", *STAGES, "total", "(query generation)"],
            [[r["preset"], r["stack"], *(
                f"{ms(r['latency'][k], 'mean_ms')} / {ms(r['latency'][k], 'p50_ms')} / {ms(r['latency'][k], 'p95_ms')}"
                if k in r["latency"] else "–" for k in (*STAGES, "total", "querygen"))] for r in runs.values()],
        ),
        "",
        "Settings changed per run (besides the preset):",
        "",
    ]
    lines += [f"- `{r['preset']}` / {r['stack']}: " + (" ".join(f"`{o}`" for o in r["overrides"]) or "none")
              for r in runs.values()]
    refused = results.get("refused", {})
    if refused:
        lines += ["", "Refused before any work (a stage with no stand-in on that stack; the error names the "
                  "options that run it):", ""]
        lines += [f"- `{name}`: {why}" for name, why in sorted(refused.items())]
    lines += ["", *results.get("notes", [])]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", choices=["none", "local"], default="none")
    ap.add_argument("--presets", nargs="*", default=PRESETS)
    ap.add_argument("--corpus", type=Path, default=common.REPO / "data" / "demo" / "store")
    ap.add_argument("--topics", type=Path, default=shared_data_dir() / "biogen" / "biogen2025_taskB_topics.json")
    ap.add_argument("--limit", type=int, default=None, help="Only the first N topics.")
    ap.add_argument("--runs", type=Path, default=common.REPO / "benchmarks" / "work" / "task_b")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="Extra override for every run.")
    ap.add_argument("--drop-dense", action="store_true",
                    help="Replace dense branches by BM25 (when the store has no dense index yet).")
    ap.add_argument("--resume", action="store_true",
                    help="Keep the topics a killed run already answered (their timings stay those of that run).")
    ap.add_argument("--rerun", action="store_true", help="Repeat each run; it must come wholly from the cache.")
    ap.add_argument("--note", action="append", default=[], help="A line added under the docs tables.")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (1 is much faster for the local LLM on a busy machine; 0: torch's default).")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    results = load_results()
    results.setdefault("runs", {})
    if not args.report_only:
        topics = read_topics(args.topics)[: args.limit]
        for preset in args.presets:
            sets = [*args.sets, *(drop_dense(preset) if args.drop_dense else [])]
            out = args.runs / f"{preset}-{args.stack}"
            try:
                result = run_one(preset, args.stack, topics, args.corpus, out, sets, args.resume)
            except (ConfigError, LLMError) as exc:  # a chain with no stand-in on this stack stops before any work
                results = load_results()
                results.setdefault("refused", {})[f"{preset}/{args.stack}"] = exc.message
                results.get("runs", {}).pop(f"{preset}/{args.stack}", None)
                common.write_result(NAME, {k: v for k, v in results.items()
                                           if k not in ("benchmark", "measured_at", "git_commit", "command",
                                                        "machine")})
                print(f"{preset}/{args.stack}: refused before any work: {exc.message}", flush=True)
                continue
            if args.rerun:
                result["rerun"] = rerun_from_cache(result, topics, args.corpus)
            result.pop("answers")
            results = load_results()  # another bench process may have added runs meanwhile
            results.setdefault("runs", {})[f"{preset}/{args.stack}"] = result
            results.get("refused", {}).pop(f"{preset}/{args.stack}", None)
            results["notes"] = list(dict.fromkeys([*results.get("notes", []), *args.note]))
            common.write_result(NAME, {k: v for k, v in results.items()
                                       if k not in ("benchmark", "measured_at", "git_commit", "command", "machine")})
            print(f"{preset}/{args.stack}: valid={result['valid']} outside={result['pmids_outside_evidence']} "
                  f"total p50={ms(result['latency']['total'], 'p50_ms')}s wall={result['wall_s']}s", flush=True)
    common.update_markdown_section(NAME, markdown(results))
    plot_results.main([NAME])


if __name__ == "__main__":
    main()
