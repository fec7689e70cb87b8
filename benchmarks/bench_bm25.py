"""BM25 retrieval benchmark on BioASQ: medcite (tantivy, bm25s) against Lucene BM25 (Anserini) in one run.

Corpus: one document per BioASQ dev gold PMID made of its gold snippets (see ``bioasq_corpus.py``), with
the 30k-article NLM baseline file, the daily update file (deletions applied) and the PubMedQA abstracts
as distractors, all ingested with ``medcite ingest`` into one document store; Lucene indexes exactly
the articles of that store. Quality: MAP@10 (BioASQ's min(|R|, 10) denominator) and R@100 over the
BioASQ dev questions. Speed: ingest throughput and peak RSS of ``medcite ingest`` on the 30k file
(against a plain lxml parse of the same file, measured in the same run), index build time and peak RSS,
query latency at top-100.

    .venv/bin/python benchmarks/bench_bm25.py                     # full run (several minutes)
    .venv/bin/python benchmarks/bench_bm25.py --max-questions 50  # quick check; docs left untouched
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import bioasq_corpus
import lucene
from bm25_report import markdown_section
from common import REPO, RESULTS_DIR, Measured, latency_summary, run_measured, update_markdown_section, write_result

from medcite.corpus.sample import demo_files
from medcite.corpus.store import DocumentStore
from medcite.evaluate.gold import read_gold
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.index.sparse.base import open_sparse
from medcite.io import read_jsonl
from medcite.paths import shared_data_dir
from medcite.trec import Run, read_run, write_run

log = logging.getLogger("bench_bm25")

HITS = 100
METRICS = ["MAP@10", "R@100"]
# medcite variants: name -> --set overrides of `medcite index bm25` (tantivy is the default backend)
VARIANTS: dict[str, list[str]] = {
    "medcite-tantivy": [],
    "medcite-bm25s": ["indexes.bm25.backend=bm25s"],
    # Porter (1980) stemming, as Lucene's EnglishAnalyzer: isolates the stemmer's share of any gap
    "medcite-bm25s-porter": ["indexes.bm25.backend=bm25s", "indexes.bm25.stemmer=porter"],
    # Pyserini's BM25 (k1 0.9, b 0.4, Porter): what clac25-a..e score with (000 §3.2 "Pyserini over Lucene");
    # beside medcite-bm25s-porter it differs in k1/b alone, so the pair is what the paper's choice costs or gains
    "medcite-bm25s-pyserini": ["indexes.bm25.backend=bm25s", "indexes.bm25.stemmer=porter",
                               f"indexes.bm25.k1={lucene.LUCENE_DEFAULT_K1}",
                               f"indexes.bm25.b={lucene.LUCENE_DEFAULT_B}"],
}
# Parse-only baseline for ingest: lxml iterparse over the same gzip file, nothing extracted or stored.
LXML_BASELINE = """
import gzip, sys
from lxml import etree
n = 0
with gzip.open(sys.argv[1], "rb") as fh:
    for _, el in etree.iterparse(fh, tag="PubmedArticle"):
        n += 1
        el.clear()
        while el.getprevious() is not None:
            del el.getparent()[0]
print(n)
"""


def medcite_cmd() -> list[str]:
    """The ``medcite`` console script of this interpreter's environment."""
    script = Path(sys.executable).parent / "medcite"
    if script.exists():
        return [str(script)]
    found = shutil.which("medcite")
    if not found:
        raise RuntimeError("the medcite command is not installed: pip install -e . in this environment")
    return [found]


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    return path


def measure_ingest_30k(baseline_file: Path, work: Path, repeat: int = 3) -> dict[str, Any]:
    """``medcite ingest`` of the 30k baseline file into a fresh store, and the lxml parse baseline.

    Parse and ingest alternate ``repeat`` times; the best (smallest) time of each is reported, as
    ``timeit`` does, because on a shared machine the slower samples measure the other jobs.
    """
    parses: list[Measured] = []
    ingests: list[Measured] = []
    store = work / "store_30k"
    for _ in range(repeat):
        parses.append(run_measured([sys.executable, "-c", LXML_BASELINE, baseline_file]).check())
        ingests.append(run_measured([*medcite_cmd(), "--quiet", "ingest", baseline_file, "--store", fresh(store),
                                     "--on-error", "skip"]).check())
    parsed = int(parses[0].stdout.strip())
    with DocumentStore.open(store) as s:
        stored = len(s)
    wall, cpu = min(m.wall_s for m in ingests), min(m.cpu_s for m in ingests)
    p_wall, p_cpu = min(m.wall_s for m in parses), min(m.cpu_s for m in parses)
    return {
        "file": baseline_file.name,
        "articles_in_file": parsed,
        "articles_stored": stored,
        "repeats": repeat,
        "wall_s": round(wall, 3),
        "articles_per_s": round(stored / wall, 1),
        "cpu_s": round(cpu, 3),
        "articles_per_cpu_s": round(stored / cpu, 1),
        "peak_rss_mib": round(max(m.peak_rss_mib for m in ingests), 1),
        "wall_s_all": [round(m.wall_s, 3) for m in ingests],
        "cpu_s_all": [round(m.cpu_s, 3) for m in ingests],
        "baseline_lxml_parse_wall_s": round(p_wall, 3),
        "baseline_lxml_parse_cpu_s": round(p_cpu, 3),
        "baseline_lxml_parse_peak_rss_mib": round(max(m.peak_rss_mib for m in parses), 1),
        "ratio_wall_vs_lxml_parse": round(wall / p_wall, 2),
        "ratio_cpu_vs_lxml_parse": round(cpu / p_cpu, 2),
        "note": "best of the repeats; wall time of the whole `medcite ingest` process (interpreter start "
                "included), 2 cores; peak RSS is the largest of the repeats",
    }


def build_store(files: list[Path], store: Path) -> Measured:
    """Everything into one store, in order: distractors first, snippet documents last (they win).

    The update file holds records with neither title nor abstract: they are skipped with a warning.
    """
    return run_measured([*medcite_cmd(), "--quiet", "ingest", *files, "--store", fresh(store),
                         "--on-error", "skip"]).check()


def build_medcite_index(store: Path, out: Path, overrides: list[str]) -> Measured:
    cmd: list[str | Path] = [*medcite_cmd(), "--quiet", "index", "bm25", "--store", store, "--out", fresh(out)]
    for o in overrides:
        cmd += ["--set", o]
    return run_measured(cmd).check()


def search_medcite(index_dir: Path, store: Path, topics: list[dict[str, str]], run: Path,
                   name: str) -> dict[str, Any]:
    """In-process search of every topic at top-100: one untimed warm-up pass, then a timed pass."""
    with DocumentStore.open(store) as s:
        index = open_sparse(index_dir, store=s)
    questions = [t["question"] for t in topics]
    for q in questions:  # warm-up: OS page cache, tantivy segment readers, analyser
        index.search(q, HITS)
    latencies: list[float] = []
    ranked: Run = {}
    for topic, q in zip(topics, questions, strict=True):
        start = time.perf_counter()
        hits = index.search(q, HITS)
        latencies.append(time.perf_counter() - start)
        ranked[topic["id"]] = hits
    write_run(run, ranked, tag=name)
    return {"k1": index.settings.k1, "b": index.settings.b, "stemmer": index.settings.stemmer,
            "stopwords": index.settings.stopwords, "latency": latency_summary(latencies),
            "latency_method": "in-process, per query, after one warm-up pass over all questions"}


def search_lucene(index_dir: Path, topics_tsv: Path, run: Path, k1: float, b: float,
                  n_topics: int) -> dict[str, Any]:
    result = lucene.search(index_dir, topics_tsv, run, k1=k1, b=b, hits=HITS, threads=1)
    out: dict[str, Any] = {"k1": k1, "b": b, "process_wall_s": round(result.measured.wall_s, 3),
                           "process_peak_rss_mib": round(result.measured.peak_rss_mib, 1)}
    if result.reported_qps:
        out["latency"] = {"n": n_topics, "mean_ms": round(1000.0 / result.reported_qps, 4)}
    out["latency_method"] = (
        "Anserini SearchCollection, 1 thread, cold JVM: total search-loop time / questions from its own "
        "'~q/s' log line (per-query latency is not observable from outside, so no p50/p95)"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data (default: ../shared/data)")
    parser.add_argument("--work-dir", type=Path, default=REPO / "benchmarks" / "work",
                        help="scratch folder for stores, indexes and runs (git-ignored)")
    parser.add_argument("--max-questions", type=int, default=None,
                        help="only the first N dev questions (a quick check: results go to the work dir)")
    parser.add_argument("--skip-bm25s", action="store_true", help="do not build and search the bm25s backend")
    parser.add_argument("--docs-only", action="store_true",
                        help="only rewrite docs/BENCHMARKS.md from benchmarks/results/bm25.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.docs_only:
        write_docs(RESULTS_DIR / "bm25.json")
        return 0
    data_dir = args.data_dir or shared_data_dir()
    work: Path = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    partial = args.max_questions is not None

    corpus = bioasq_corpus.build(data_dir, work / "corpus", args.max_questions)
    topics = list(read_jsonl(corpus.topics_jsonl))
    baseline, update = demo_files()
    jar = lucene.anserini_jar()

    log.info("ingest throughput on %s", baseline.name)
    ingest_30k = measure_ingest_30k(baseline, work)
    log.info("ingest: %s", ingest_30k)

    store = work / "store"
    sources = [baseline, update, corpus.pubmedqa_docs, corpus.snippet_docs]
    ingest_all = build_store(sources, store)
    with DocumentStore.open(store) as s:
        n_docs = len(s)
        n_collection = lucene.write_collection(s.iter_articles(), fresh(work / "lucene_collection"))
    log.info("store: %d articles (%.1f s)", n_docs, ingest_all.wall_s)

    variants = {n: o for n, o in VARIANTS.items() if not (args.skip_bm25s and "bm25s" in n)}
    builds: dict[str, Measured] = {}
    for name, overrides in variants.items():
        builds[name] = build_medcite_index(store, work / f"index_{name}", overrides)
        log.info("index %s: %.1f s", name, builds[name].wall_s)
    builds["lucene"] = lucene.build_index(work / "lucene_collection", fresh(work / "index_lucene"),
                                          threads=2, jar=jar)
    log.info("index lucene: %.1f s", builds["lucene"].wall_s)

    runs_dir = work / "runs"
    runs_dir.mkdir(exist_ok=True)
    systems: dict[str, dict[str, Any]] = {}
    for name in variants:
        systems[name] = search_medcite(work / f"index_{name}", store, topics, runs_dir / f"{name}.trec", name)
    ref = systems["medcite-tantivy"]
    lucene_rows = {"lucene-same-k1-b": (ref["k1"], ref["b"]),
                   "lucene-defaults": (lucene.LUCENE_DEFAULT_K1, lucene.LUCENE_DEFAULT_B)}
    for name, (k1, b) in lucene_rows.items():
        systems[name] = search_lucene(work / "index_lucene", corpus.topics_tsv, runs_dir / f"{name}.trec",
                                      k1, b, len(topics))
    qrels = read_gold(corpus.qrels)
    runs: dict[str, Run] = {}
    for name, row in systems.items():
        runs[name] = read_run(runs_dir / f"{name}.trec")
        report = evaluate_retrieval(runs[name], qrels, METRICS)
        row["metrics"] = {k: round(v, 4) for k, v in report.aggregate.items()}
        row["per_query_ap10"] = {q: v["MAP@10"] for q, v in report.per_query.items()}
        build = builds.get("lucene" if name.startswith("lucene") else name)
        if build is not None:
            row["index_build_s"] = round(build.wall_s, 2)
            row["index_build_cpu_s"] = round(build.cpu_s, 2)
            row["index_build_peak_rss_mib"] = round(build.peak_rss_mib, 1)
        log.info("%s: %s", name, row["metrics"])
    agreement = {name: compare_runs(runs[name], runs[lucene_twin(systems[name])], systems[name]["per_query_ap10"],
                                    systems[lucene_twin(systems[name])]["per_query_ap10"])
                 for name in variants}
    choice = {"pyserini": "medcite-bm25s-pyserini", "same_backend_1.2_0.75": "medcite-bm25s-porter",
              "per_question": compare_runs(runs["medcite-bm25s-pyserini"], runs["medcite-bm25s-porter"],
                                           systems["medcite-bm25s-pyserini"]["per_query_ap10"],
                                           systems["medcite-bm25s-porter"]["per_query_ap10"])} \
        if {"medcite-bm25s-pyserini", "medcite-bm25s-porter"} <= set(variants) else None
    for row in systems.values():
        del row["per_query_ap10"]

    result = summarise(corpus, n_docs, n_collection, ingest_30k, ingest_all, systems)
    result["agreement_with_lucene_same_k1_b"] = agreement
    if choice is not None:
        result["pyserini_parameters"] = choice
    folder = work if partial else None
    path = write_result("bm25", result, folder=folder)
    log.info("results: %s", path)
    if not partial:
        write_docs(path)
    return 0


def write_docs(result_path: Path) -> None:
    """Rewrite the ``bm25`` section of docs/BENCHMARKS.md from a result file of this benchmark."""
    result = json.loads(result_path.read_text(encoding="utf-8"))
    update_markdown_section("bm25", markdown_section(result))
    log.info("docs/BENCHMARKS.md section 'bm25' updated from %s", result_path)


def lucene_twin(row: dict[str, Any]) -> str:
    """The Lucene run with the same k1/b as a medcite system (Anserini's defaults or tantivy's fixed 1.2/0.75)."""
    same = (row["k1"], row["b"]) == (lucene.LUCENE_DEFAULT_K1, lucene.LUCENE_DEFAULT_B)
    return "lucene-defaults" if same else "lucene-same-k1-b"


def compare_runs(run: Run, ref: Run, ap: dict[str, float], ref_ap: dict[str, float],
                 depth: int = 10) -> dict[str, Any]:
    """How close a run is to the reference run: top-``depth`` overlap and per-question AP@10 wins/losses."""
    overlaps, same_order = [], 0
    for qid, ref_hits in ref.items():
        mine = [h.pmid for h in run.get(qid, [])[:depth]]
        theirs = [h.pmid for h in ref_hits[:depth]]
        overlaps.append(len(set(mine) & set(theirs)) / max(len(theirs), 1))
        same_order += mine == theirs
    diffs = [ap.get(q, 0.0) - v for q, v in ref_ap.items()]
    return {
        f"mean_top{depth}_overlap": round(sum(overlaps) / max(len(overlaps), 1), 4),
        f"identical_top{depth}_rankings": same_order,
        "questions": len(ref),
        "ap10_better": sum(d > 1e-9 for d in diffs),
        "ap10_worse": sum(d < -1e-9 for d in diffs),
        "ap10_equal": sum(abs(d) <= 1e-9 for d in diffs),
    }


def summarise(corpus: bioasq_corpus.CorpusFiles, n_docs: int, n_collection: int, ingest_30k: dict[str, Any],
              ingest_all: Measured, systems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The JSON result, including the ratios and whether each target of the issue is met."""
    med, luc = systems["medcite-tantivy"], systems["lucene-same-k1-b"]
    map_ratio = med["metrics"]["MAP@10"] / luc["metrics"]["MAP@10"] if luc["metrics"]["MAP@10"] else None
    lucene_mean = luc.get("latency", {}).get("mean_ms")
    targets = {
        "map10_within_2pct_of_lucene": {"ratio": round(map_ratio, 4) if map_ratio else None,
                                        "target": ">= 0.98", "met": bool(map_ratio and map_ratio >= 0.98)},
        "ingest_articles_per_s": {"value": ingest_30k["articles_per_s"], "target": ">= 3000",
                                  "met": ingest_30k["articles_per_s"] >= 3000,
                                  "per_cpu_s": ingest_30k["articles_per_cpu_s"],
                                  "met_per_cpu_s": ingest_30k["articles_per_cpu_s"] >= 3000},
        "ingest_peak_rss_mib": {"value": ingest_30k["peak_rss_mib"], "target": "<= 1024",
                                "met": ingest_30k["peak_rss_mib"] <= 1024},
        "query_p50_ms_top100": {"value": med["latency"]["p50_ms"], "target": "<= 5",
                                "met": med["latency"]["p50_ms"] <= 5.0,
                                "ratio_vs_lucene_mean": (round(med["latency"]["p50_ms"] / lucene_mean, 3)
                                                         if lucene_mean else None)},
    }
    return {
        "corpus": {**corpus.stats, "documents_in_store": n_docs, "documents_given_to_lucene": n_collection,
                   "store_ingest_wall_s": round(ingest_all.wall_s, 2),
                   "store_ingest_cpu_s": round(ingest_all.cpu_s, 2),
                   "store_ingest_peak_rss_mib": round(ingest_all.peak_rss_mib, 1)},
        "hits": HITS,
        "ingest_30k": ingest_30k,
        "systems": systems,
        "targets": targets,
    }


if __name__ == "__main__":
    raise SystemExit(main())
