"""Learning-to-rank benchmark (issue 17): the ``best`` preset (hybrid BM25 + packaged MiniLM, top 100 reordered
by the LTR model that ``medcite models build best`` trains) against BM25, dense and hybrid on the whole
snippet-level corpus, over the BioASQ dev questions training held back; the training time; the latency the
LTR stage adds to a query; and a feature-group ablation (one model per group left out, trained on the same
cached feature rows).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ltr.py --store benchmarks/work/store

Needs the full store (``benchmarks/bench_bm25.py`` builds it at ``benchmarks/work/store``; ``--store`` points
elsewhere). Its BM25 and MiniLM indexes are built on first use, as ``medcite search`` does. The model is
trained into ``--models-dir`` (default ``benchmarks/work/ltr/models``), exactly as ``medcite models build best``
trains it (same function, same options), then the ``best`` preset is run from that folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import shutil
import time
from pathlib import Path
from typing import Any

import bioasq_corpus
import numpy as np
import retrieval_corpus as rc
from common import REPO, RESULTS_DIR, latency_summary, markdown_table, update_markdown_section, write_result

from medcite.config import load_settings
from medcite.corpus.store import DocumentStore
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.paths import shared_data_dir
from medcite.pipeline.retrieval import RetrievalPipeline
from medcite.progress import progress
from medcite.rerank.ltr_features import GROUPS, Features
from medcite.train.ltr import LTROptions, QueryRows, fit_booster, train_ltr
from medcite.types import Hit, Topic
from medcite.workflows.model_builds import first_stage_pipeline

log = logging.getLogger("bench_ltr")

METRICS = ["MAP@10", "R@100", "nDCG@10"]
MODEL = "medcite-ltr-bioasq"


def scores(run: dict[str, list[Hit]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in evaluate_retrieval(run, qrels, METRICS).aggregate.items()}


def ordered(rows: list[QueryRows], predict: Any | None) -> dict[str, list[Hit]]:
    """Each row set's hits in first-stage order (``predict`` None) or by the model's scores."""
    out = {}
    for r in rows:
        order = range(len(r.hits)) if predict is None else np.argsort(-predict(r), kind="stable")
        out[r.question.id] = [Hit(r.hits[j].pmid, 0.0, n) for n, j in enumerate(order, start=1)]
    return out


def with_document_columns(rows: dict[str, list[QueryRows]], store: DocumentStore, names: list[str]
                          ) -> tuple[dict[str, list[QueryRows]], list[str]]:
    """The rows with the ``document`` group's columns appended (length, year, publication types)."""
    out: dict[str, list[QueryRows]] = {}
    for side, items in rows.items():
        out[side] = []
        for r in items:
            arts = store.get_many([h.pmid for h in r.hits])
            extra = np.column_stack(Features._document([arts[h.pmid] for h in r.hits]))
            out[side].append(QueryRows(r.question, r.hits, np.hstack([r.x, extra]), r.y))
    return out, [*names, "len_title", "len_abstract", "year", "pub_types", "review"]


def group_columns(names: list[str]) -> dict[str, list[int]]:
    """Feature group -> its column indexes (dense columns are those named cos_*)."""
    from medcite.rerank.ltr_features import feature_names

    out: dict[str, list[int]] = {}
    for g in GROUPS:
        cols = feature_names((g,), ["minilm"])
        out[g] = [names.index(c) for c in cols if c in names]
    return {g: c for g, c in out.items() if c}


def ablation(rows: dict[str, list[QueryRows]], names: list[str], held: set[str], qrels: dict[str, dict[str, int]],
             opts: LTROptions) -> list[dict[str, Any]]:
    import lightgbm as lgb

    fit = [r for r in rows["fit"] if r.y.any()]
    valid = [r for r in rows["valid"] if r.y.any()]
    dev = [r for r in rows["dev"] if r.question.id in held]
    groups = group_columns(names)
    default = [c for g, cols in groups.items() if g != "document" for c in cols]
    variants: list[tuple[str, list[int]]] = [("all default groups", default)]
    for g in groups:
        if g != "document":
            variants.append((f"without {g}", [c for c in default if c not in groups[g]]))
    variants.append(("first_stage only", groups["first_stage"]))
    variants.append(("first_stage + dense", groups["first_stage"] + groups.get("dense", [])))
    if "document" in groups:
        variants.append(("with document (corpus artefact)", default + groups["document"]))
    out = []
    for name, cols in variants:
        t0 = time.perf_counter()
        booster, best = fit_booster(lgb, fit, valid, names, opts, cols)
        seconds = time.perf_counter() - t0
        run = ordered(dev, lambda r, b=booster, c=cols, i=best: b.predict(r.x[:, c], num_iteration=i, num_threads=1))
        out.append({"name": name, "features": len(cols), "trees": best, "train_s": round(seconds, 1),
                    **scores(run, qrels)})
        log.info("ablation %s: %s", name, out[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=REPO / "benchmarks" / "work" / "store")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--models-dir", type=Path, default=REPO / "benchmarks" / "work" / "ltr" / "models")
    ap.add_argument("--max-train", type=int, default=None, help="quick check: at most N training questions")
    ap.add_argument("--no-docs", action="store_true", help="write JSON only (no docs section)")
    ap.add_argument("--top-n", type=int, default=None,
                    help="candidates the LTR reads (default: the best preset's rerank.top_n); with another value the "
                         "results go to ltr_topN.json and the docs are left alone")
    ap.add_argument("--note", action="append", default=[], help="a note for the docs section (repeatable)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the model and feature rows a previous run cached (after a later step failed)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started = time.time()
    data_dir = args.data_dir or shared_data_dir()
    data = data_dir / bioasq_corpus.BIOASQ_FILE
    held_qs = rc.held_back(data_dir)
    held = {q.id for q in held_qs}
    qrels = {q.id: {p: 1 for p in q.gold} for q in held_qs}
    os.environ["MEDCITE_MODELS_DIR"] = str(args.models_dir)
    out = args.models_dir / MODEL
    over = [] if args.top_n is None else [f"rerank.top_n={args.top_n}"]
    opts = LTROptions(first_stage="best", max_train=args.max_train, top_n=load_settings("best", over).rerank.top_n)
    rows: dict[str, list[QueryRows]] = {}
    with DocumentStore.open(args.store) as store:
        documents = len(store)
        findable = {q.id: {p: 1 for p in store.existing(q.gold)} for q in held_qs}
        # 1. train, as `medcite models build best` does (first stage opened first: its indexes built or synced)
        cache = args.models_dir.parent / "ltr_rows.pkl"
        if args.reuse and cache.is_file() and (out / "config.json").is_file():
            rows, report, train_s = pickle.loads(cache.read_bytes())  # a rerun after a later step failed
        else:
            if out.exists():
                shutil.rmtree(out)
            with first_stage_pipeline("best", store) as (run, ctx, h):
                run("warm up")
                t0 = time.perf_counter()
                report = train_ltr(data, store, out, run, ctx, opts, first_stage_hash=h, rows=rows)
                train_s = time.perf_counter() - t0
            cache.write_bytes(pickle.dumps((rows, report, train_s)))
        log.info("trained in %.0f s: %s", train_s, report["metrics"])
        # 2. the best preset end to end on the held-back questions: first stages from its runs, LTR, timings
        settings = load_settings("best", over)
        pipeline = RetrievalPipeline.from_settings(settings, store=store)
        runs: dict[str, dict[str, list[Hit]]] = {"bm25": {}, "dense": {}, "hybrid": {}, "ltr": {}}
        first_s: list[float] = []
        rerank_s: list[float] = []
        ltr_wall: list[float] = []
        ltr_cpu: list[float] = []
        try:
            pipeline.retrieve(Topic("warm", "warm up"))
            for q in progress(held_qs, desc="best preset", unit="q"):
                got = pipeline.retrieve(Topic(q.id, q.body))
                runs["bm25"][q.id] = got.runs["bm25/q0"][:100]
                runs["dense"][q.id] = got.runs["dense/q0"][:100]
                runs["hybrid"][q.id] = got.rankings["retrieval"][:100]
                runs["ltr"][q.id] = got.rankings["rerank"]
                first_s.append(got.timings["first_stage"])
                rerank_s.append(got.timings["rerank"])
                # the LTR call alone on the top 100 (articles fetched before, as the pipeline does for any
                # reranker): wall and CPU time, the latter less sensitive to the other sessions' load
                articles = store.get_many([h.pmid for h in got.rankings["retrieval"][:100]])
                w0, c0 = time.perf_counter(), time.process_time()
                pipeline.reranker.rerank(q.body, got.rankings["retrieval"], articles, 100)
                ltr_wall.append(time.perf_counter() - w0)
                ltr_cpu.append(time.process_time() - c0)
        finally:
            pipeline.close()
        head = json.loads((out / "config.json").read_text())
        full_rows, names = with_document_columns(rows, store, head["features"])
    systems = []
    labels = {"bm25": "BM25", "dense": "Dense (packaged MiniLM)", "hybrid": "Hybrid RRF (BM25 + MiniLM)",
              "ltr": "best: hybrid + LTR (LambdaMART)"}
    for key, label in labels.items():
        systems.append({"name": label, "questions": len(runs[key]), **scores(runs[key], qrels),
                        "R@100_findable": scores(runs[key], findable)["R@100"]})
    bm25 = systems[0]["MAP@10"]
    for s in systems:
        s["x_bm25_map@10"] = round(s["MAP@10"] / bm25, 3)
    oracle = {q: [Hit(p, 1.0, i + 1) for i, p in enumerate(sorted(g))] for q, g in findable.items()}
    result = {
        "corpus": {"documents": documents, "store": str(args.store)},
        "split": {"dev_fraction": rc.DEV_FRACTION, "seed": rc.SPLIT_SEED, "held_back_questions": len(held_qs)},
        "ceiling": scores(oracle, qrels),
        "systems": systems,
        "latency_s": {"first_stage": latency_summary(first_s), "ltr": latency_summary(rerank_s),
                      "ltr_top100_call_wall": latency_summary(ltr_wall),
                      "ltr_top100_call_cpu": latency_summary(ltr_cpu)},
        "training": {"seconds": round(train_s, 1), "report_seconds": report["seconds"],
                     "questions": report["questions"], "duplicates": report["duplicates"],
                     "best_iteration": report["best_iteration"], "metrics": report["metrics"],
                     "feature_importance_gain": dict(list(report["feature_importance_gain"].items())[:15]),
                     "options": report["options"]},
        "ablation": ablation(full_rows, names, held, qrels, opts),
        "wall_s": round(time.time() - started, 1),
        "notes": [
            *(["--reuse: the model, its training time and feature rows are those of the previous run "
               "(ltr_rows.pkl beside --models-dir); everything else was measured again."]
              if args.reuse else []),
            "Shared machine: 2 CPU cores used by other sessions at the same time; timings are upper bounds.",
            "R@100 of every reranker equals its first stage's: it reorders the top 100.",
            *args.note,
        ],
    }
    name = "ltr" if args.top_n is None else f"ltr_top{args.top_n}"
    path = write_result(name, result, None if not args.no_docs else args.models_dir.parent)
    log.info("results in %s", path)
    if not args.no_docs and args.top_n is None:
        update_markdown_section("ltr", markdown(json.loads(path.read_text())))
    return 0


def deeper(result: dict[str, Any]) -> list[str]:
    """A sentence on the run with more candidates (``--top-n 200``), when its results file is there."""
    path = RESULTS_DIR / "ltr_top200.json"
    if not path.is_file():
        return []
    other = json.loads(path.read_text())
    mine, wide = result["systems"][-1], other["systems"][-1]
    ratio = other["latency_s"]["ltr"]["p50_ms"] / result["latency_s"]["ltr"]["p50_ms"]
    return [f"Reading the whole fused list (`--top-n 200`: up to ~170 candidates) instead of the top 100 gives "
            f"MAP@10 {wide['MAP@10']:.4f} (vs {mine['MAP@10']:.4f}) and R@100 {wide['R@100']:.4f} (vs "
            f"{mine['R@100']:.4f}) for {ratio:.1f}× "
            f"the LTR time (p50 {other['latency_s']['ltr']['p50_ms']:.0f} ms, a run of its own): no gain, so `best` "
            "reads 100 (benchmarks/results/ltr_top200.json).", ""]


def markdown(result: dict[str, Any]) -> str:
    systems, ceiling, lat, tr = result["systems"], result["ceiling"], result["latency_s"], result["training"]
    rows = [[s["name"], s["questions"], f"{s['MAP@10']:.4f}", f"{s['x_bm25_map@10']:.2f}×", f"{s['R@100']:.4f}",
             f"{s['R@100_findable']:.4f}", f"{s['nDCG@10']:.4f}"] for s in systems]
    bm25 = systems[0]["MAP@10"]
    abl = [[a["name"], a["features"], a["trees"], f"{a['MAP@10']:.4f}", f"{a['MAP@10'] / bm25:.2f}×",
            f"{a['nDCG@10']:.4f}"] for a in result["ablation"]]
    imp = ", ".join(f"{k} {v:,.0f}" for k, v in list(tr["feature_importance_gain"].items())[:8])
    return "\n".join([
        "## Learning to rank on the whole corpus (`best`)",
        "",
        f"Measured {result['measured_at']} at `{result['git_commit']}` with `{result['command']}` "
        f"({result['wall_s']:.0f} s for this run; {result['machine'].get('cpus')} cores shared with other sessions, "
        f"load average {result['machine'].get('load_avg_1m_at_start')} at start: timings are upper bounds).",
        "",
        f"**{result['split']['held_back_questions']} held-back BioASQ dev questions** (the trainers' split: "
        f"dev_fraction {result['split']['dev_fraction']}, seed {result['split']['seed']}; their near-duplicates are "
        f"held back too) searched in the whole store ({result['corpus']['documents']:,} documents). `best` = "
        "hybrid first stage (BM25 + packaged MiniLM, RRF), its top 100 reordered by the LTR model that "
        "`medcite models build best --corpus STORE` trains (trained here by the same function and options). "
        "Qrels: every official gold document; *findable*: only those the store holds.",
        "",
        markdown_table(["system", "questions", "MAP@10", "× BM25", "R@100", "R@100 (findable)", "nDCG@10"], rows),
        "",
        f"Ceiling (every findable gold document first): MAP@10 {ceiling['MAP@10']:.4f}, R@100 {ceiling['R@100']:.4f}: "
        "an R@100 of 0.95 cannot be reached on this corpus, since "
        f"{100 * (1 - ceiling['R@100']):.1f}% of the gold documents have no document in it (no gold snippet).",
        "",
        f"**Cost.** Training: {tr['seconds']:.0f} s ({tr['report_seconds']['features']:.0f} s of first stage + "
        f"features for {tr['questions']['train'] + tr['questions']['early_stopping'] + tr['questions']['dev']} "
        f"questions, {tr['report_seconds']['train']:.0f} s of boosting, {tr['best_iteration']} trees; "
        f"{tr['duplicates']['duplicate_questions']} near-duplicate questions in {tr['duplicates']['duplicate_groups']}"
        " groups). Per query: first stage p50 "
        f"{lat['first_stage']['p50_ms']:.0f} ms, LTR (features of the top 100 + scoring) p50 "
        f"{lat['ltr']['p50_ms']:.0f} ms, p95 {lat['ltr']['p95_ms']:.0f} ms (target: at most 100 ms beyond the "
        f"first stage); the LTR call alone on a top 100: CPU time p50 {lat['ltr_top100_call_cpu']['p50_ms']:.0f} ms, "
        f"p95 {lat['ltr_top100_call_cpu']['p95_ms']:.0f} ms (wall p50 {lat['ltr_top100_call_wall']['p50_ms']:.0f} ms).",
        "",
        f"**Feature importance (gain, top 8):** {imp}.",
        "",
        "**Ablation** (same cached feature rows, one model each, same options; held-back questions):",
        "",
        markdown_table(["features", "columns", "trees", "MAP@10", "× BM25", "nDCG@10"], abl),
        "",
        *deeper(result),
        "The `document` group (title/abstract length, year, publication types) is off by default: in this corpus "
        "every gold document is rebuilt from BioASQ gold snippets (short, no year, no publication type) while "
        "distractors are full PubMed records, so those columns find snippet documents, not relevant ones; the "
        "last ablation row shows how much that artefact would add.",
        *[f"\n**Note.** {n}" for n in result.get("notes", [])],
    ])


if __name__ == "__main__":
    raise SystemExit(main())
