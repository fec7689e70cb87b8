"""The reader as the document reranker of ``best`` (issue 30): medcite's reader (``models:medcite-reader``, its
relevance head, MaxP over abstract windows) after the ``best`` preset's learning-to-rank model, against BM25,
the hybrid first stage and ``best`` itself, on the same store as benchmarks/bench_ltr.py.

Questions: the 451 BioASQ questions the reader never trained on (``medcite.train.qa_data.held_out_ids``). The
300 of them that the LTR model also held back (bench_ltr's split) are the **test** questions; the other 151
(LTR training questions, reader held-back) choose the reader stage's settings (``top_n`` read, ``input_weight``
of the LTR order) — so no setting is chosen on a test question, and the LTR order, having been trained on the
choosing questions, looks better there than it is (the choice leans towards the LTR, not the reader).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_reader_rerank.py --store /work/cache/ltr/full-store

The store is the one bench_bm25 / bench_ltr build (NLM baseline and update file, PubMedQA abstracts, BioASQ
gold-snippet documents: 59,890 documents); its BM25 and MiniLM indexes are built on first use.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import time
from pathlib import Path
from typing import Any

import bioasq_corpus
import numpy as np
import retrieval_corpus as rc
from common import REPO, latency_summary, markdown_table, update_markdown_section, write_result

from medcite.config import load_settings
from medcite.corpus.store import DocumentStore
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.paths import shared_data_dir
from medcite.pipeline.retrieval import RetrievalPipeline
from medcite.progress import progress
from medcite.reader.infer import load_reader, reader_folder
from medcite.rerank.reader import ReaderRerankConfig, blend, windows
from medcite.train.qa_data import held_out_ids, read_bioasq
from medcite.types import Hit, Topic

log = logging.getLogger("bench_reader_rerank")

METRICS = ["MAP@10", "nDCG@10", "R@10"]
DEPTH = 50  # candidates read per question at most (the grid's largest top_n)
TOP_NS = (10, 20, 30, 50)
WEIGHTS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
MAX_WINDOWS = (1, 2, 4)


def scores(run: dict[str, list[Hit]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in evaluate_retrieval(run, qrels, METRICS).aggregate.items()}


def reranked(ltr: list[Hit], windows_logits: list[list[float]], top_n: int, weight: float,
             max_windows: int) -> list[Hit]:
    """The LTR order's top ``top_n`` reordered as the ``reader`` reranker does (max over the first
    ``max_windows`` windows, blended with the LTR score by ``weight``), the rest after it in LTR order."""
    n = min(top_n, len(ltr))
    head = ltr[:n]
    read = [max(w[:max_windows]) if w else -np.inf for w in windows_logits[:n]]
    blended = blend(read, [h.score for h in head], weight)
    order = sorted(range(n), key=lambda i: (-blended[i], i))
    pmids = [head[i].pmid for i in order] + [h.pmid for h in ltr[n:]]
    return [Hit(p, float(len(pmids) - r), r + 1) for r, p in enumerate(pmids)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=REPO / "benchmarks" / "work" / "store")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--reader", default="models:medcite-reader")
    ap.add_argument("--max-questions", type=int, default=None, help="quick check (results in /tmp)")
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started = time.time()
    data_dir = args.data_dir or shared_data_dir()
    questions = [q for q in read_bioasq(data_dir / bioasq_corpus.BIOASQ_FILE) if q.gold]
    reader_held = held_out_ids(data_dir / bioasq_corpus.BIOASQ_FILE)
    test_ids = {q.id for q in rc.held_back(data_dir)}
    if not test_ids <= reader_held:
        raise SystemExit("the LTR's held-back questions are not all held back by the reader: the split changed")
    pool = [q for q in questions if q.id in reader_held]
    if args.max_questions:  # a quick check: half test, half tuning questions
        half = args.max_questions // 2
        pool = [q for q in pool if q.id in test_ids][:half] + [q for q in pool if q.id not in test_ids][:half]
    qrels = {q.id: {p: 1 for p in q.gold} for q in pool}
    cfg = ReaderRerankConfig()
    reader = load_reader(reader_folder(args.reader, "--reader"))
    settings = load_settings("best")
    runs: dict[str, dict[str, list[Hit]]] = {"bm25": {}, "hybrid": {}, "ltr": {}}
    logits: dict[str, list[list[float]]] = {}
    read_s: list[float] = []
    with DocumentStore.open(args.store) as store:
        documents = len(store)
        pipeline = RetrievalPipeline.from_settings(settings, store=store)
        try:
            pipeline.retrieve(Topic("warm", "warm up"))
            for q in progress(pool, desc="best + reader", unit="q"):
                got = pipeline.retrieve(Topic(q.id, q.body))
                runs["bm25"][q.id] = got.runs["bm25/q0"][:100]
                runs["hybrid"][q.id] = got.rankings["retrieval"][:100]
                ltr = got.rankings["rerank"]
                runs["ltr"][q.id] = ltr
                arts = store.get_many([h.pmid for h in ltr[:DEPTH]])
                t0 = time.perf_counter()
                per_doc = []
                for h in ltr[:DEPTH]:
                    texts = windows(arts[h.pmid], cfg.window_words, cfg.stride_words, max(MAX_WINDOWS)) \
                        if h.pmid in arts else []
                    per_doc.append(texts)
                flat = [t for texts in per_doc for t in texts]
                z = reader.relevance(q.body, flat).tolist() if flat else []
                read_s.append(time.perf_counter() - t0)
                out, i = [], 0
                for texts in per_doc:
                    out.append(z[i: i + len(texts)])
                    i += len(texts)
                logits[q.id] = out
        finally:
            pipeline.close()

    def system(ids: set[str], top_n: int, weight: float, max_windows: int) -> dict[str, float]:
        run = {q: reranked(runs["ltr"][q], logits[q], top_n, weight, max_windows) for q in ids}
        return scores(run, {q: qrels[q] for q in ids})

    tune_ids = {q.id for q in pool} - test_ids
    test_ids &= {q.id for q in pool}
    grid = []
    for top_n, weight, mw in itertools.product(TOP_NS, WEIGHTS, MAX_WINDOWS):
        grid.append({"top_n": top_n, "input_weight": weight, "max_windows": mw,
                     "tune": system(tune_ids, top_n, weight, mw), "test": system(test_ids, top_n, weight, mw)})
    chosen = max(grid, key=lambda g: (g["tune"]["MAP@10"], -g["top_n"]))
    base = {k: scores({q: runs[k][q] for q in test_ids}, {q: qrels[q] for q in test_ids}) for k in runs}
    bm25 = base["bm25"]["MAP@10"]
    systems = [{"name": n, **base[k]} for k, n in (("bm25", "BM25"), ("hybrid", "Hybrid RRF (BM25 + MiniLM)"),
                                                   ("ltr", "best: hybrid + LTR"))]
    systems.append({"name": f"best + reader (top {chosen['top_n']}, LTR weight {chosen['input_weight']}, "
                            f"{chosen['max_windows']} windows)", **chosen["test"]})
    only = next(g for g in grid if g["top_n"] == chosen["top_n"] and g["input_weight"] == 0.0
                and g["max_windows"] == chosen["max_windows"])
    systems.append({"name": f"best + reader alone (top {chosen['top_n']}, LTR weight 0)", **only["test"]})
    for s in systems:
        s["x_bm25_map@10"] = round(s["MAP@10"] / bm25, 3)
    result = {
        "corpus": {"documents": documents, "store": str(args.store)},
        "questions": {"test": len(test_ids), "tune": len(tune_ids),
                      "split": "test = held back by the reader (qa_data.held_out_ids) and by the LTR "
                               "(bench_ltr's split); tune = held back by the reader, trained on by the LTR"},
        "reader": str(reader_folder(args.reader, "--reader")),
        "windows": {"window_words": cfg.window_words, "stride_words": cfg.stride_words},
        "chosen_on_tune": {k: chosen[k] for k in ("top_n", "input_weight", "max_windows")} | {
            "tune_MAP@10": chosen["tune"]["MAP@10"]},
        "systems": systems,
        "grid": grid,
        "latency": {"reader_top50_all_windows": latency_summary(read_s),
                    "per_window_ms": round(1000 * sum(read_s) / max(1, sum(len(w) for v in logits.values()
                                                                            for w in v)), 2),
                    "note": "the reader's time for the top 50 with all windows; the chosen stage reads "
                            f"top {chosen['top_n']}"},
        "wall_s": round(time.time() - started, 1),
    }
    folder = Path("/tmp") if args.max_questions else None
    path = write_result("reader_rerank", result, folder)
    log.info("results in %s", path)
    if not args.no_docs and not args.max_questions:
        update_markdown_section("reader_rerank", markdown(json.loads(path.read_text())))
    return 0


def markdown(result: dict[str, Any]) -> str:
    s, ch, q = result["systems"], result["chosen_on_tune"], result["questions"]
    rows = [[x["name"], f"{x['MAP@10']:.4f}", f"{x['x_bm25_map@10']:.2f}×", f"{x['nDCG@10']:.4f}",
             f"{x['R@10']:.4f}"] for x in s]
    best = next(g for g in result["grid"] if g["top_n"] == ch["top_n"] and g["max_windows"] == ch["max_windows"]
                and g["input_weight"] == ch["input_weight"])
    abl = [[g["top_n"], g["input_weight"], g["max_windows"], f"{g['tune']['MAP@10']:.4f}",
            f"{g['test']['MAP@10']:.4f}"] for g in result["grid"]
           if (g["max_windows"] == ch["max_windows"] and g["top_n"] == ch["top_n"])
           or (g["input_weight"] == ch["input_weight"] and g["max_windows"] == ch["max_windows"])
           or (g["input_weight"] == ch["input_weight"] and g["top_n"] == ch["top_n"])]
    lat = result["latency"]
    return "\n".join([
        "## The reader as best's reranker (issue 30)",
        "",
        f"`benchmarks/bench_reader_rerank.py`: medcite's reader (relevance head, MaxP over abstract windows of "
        f"{result['windows']['window_words']} words every {result['windows']['stride_words']}) after the `best` "
        f"preset's LTR, over the {result['corpus']['documents']:,}-document store of bench_ltr. **{q['test']} test "
        f"questions** held back by both the reader and the LTR; the reader stage's settings chosen on {q['tune']} "
        "other questions the reader held back (the LTR trained on them, so the choice leans towards the LTR "
        "order). BM25 is the trivial baseline; the ratio is to BM25 in the same run.",
        "",
        markdown_table(["system (test questions)", "MAP@10", "× BM25", "nDCG@10", "R@10"], rows),
        "",
        f"Chosen on the tuning questions: top {ch['top_n']}, LTR weight {ch['input_weight']}, "
        f"{ch['max_windows']} window(s) (tune MAP@10 {best['tune']['MAP@10']:.4f}). The reader reads "
        f"{lat['per_window_ms']:.1f} ms per window on 2 cores (p50 {lat['reader_top50_all_windows']['p50_ms']:.0f} "
        "ms for a question's top 50, all windows). Ablation (one setting varied at a time around the choice; "
        "test figures shown, never used to choose):",
        "",
        markdown_table(["top_n", "LTR weight", "windows", "tune MAP@10", "test MAP@10"], abl),
    ])


if __name__ == "__main__":
    raise SystemExit(main())
