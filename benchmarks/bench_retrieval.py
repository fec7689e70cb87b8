"""Retrieval benchmark (issue 3): BM25, dense (MiniLM, MiniLM adapted), hybrid RRF and the rerankers (trained
cross-encoder, ensembles) on the BioASQ dev questions that training held back; IVF-PQ recall on real MiniLM
embeddings. Writes ``benchmarks/results/retrieval.json``, ``docs/img/recall_at_k.png`` and the ``retrieval``
section of ``docs/BENCHMARKS.md``.

    MEDCITE_MODELS_DIR=DIR .venv/bin/python benchmarks/bench_retrieval.py [--rerank-questions 100]

Needs the foundation corpus (``benchmarks/bench_bm25.py`` writes ``benchmarks/work/corpus`` and the full
store ``benchmarks/work/store``) and the trained models under ``$MEDCITE_MODELS_DIR`` (``medcite train
reranker|encoder``, see the docs section; a missing model is skipped and reported). ``--training-report``
names ``training.json`` files whose training time goes into the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

import bioasq_corpus
import plot_results
import retrieval_corpus as rc
import retrieval_report
import retrieval_systems as rs
from common import REPO, latency_summary, update_markdown_section, write_result

from medcite.corpus.store import DocumentStore
from medcite.errors import ConfigError
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.paths import models_dir, shared_data_dir
from medcite.pipeline import build_stage
from medcite.rerank.embedding import EmbeddingReranker
from medcite.rerank.ensemble import UnionEnsemble, WeightedEnsemble, search_weights
from medcite.types import Hit, Topic

log = logging.getLogger("bench_retrieval")

CE_MODEL = "medcite-minilm-ce-bioasq"
BI_MODEL = "medcite-minilm-bi-bioasq"
METRICS = ["MAP@10", "R@100", "nDCG@10"]
DENSE_ONLY = 'retrieve.branches=[{"backend": "dense"}]'
CV_SEED = 7


def ingest(docs: Path, store: Path) -> None:
    import subprocess

    cmd = [sys.executable, "-m", "medcite.cli.main", "--quiet", "ingest", str(docs), "--store", str(store)]
    subprocess.run(cmd, check=True)


FINDABLE: dict[str, dict[str, int]] = {}  # qrels cut to the gold PMIDs that have a document in the corpus


def evaluate(run: dict[str, list[Hit]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    sub = {q: qrels[q] for q in run}
    report = evaluate_retrieval(run, sub, METRICS)
    found = evaluate_retrieval(run, {q: FINDABLE[q] for q in run if FINDABLE.get(q)}, ["R@100"])
    return {"questions": report.queries, **{k: round(v, 4) for k, v in report.aggregate.items()},
            "R@100_findable": round(found.aggregate["R@100"], 4),
            "recall_at_k": retrieval_report.recall_curve(run, sub)}


def system(name: str, run: dict[str, list[Hit]], seconds: list[float], qrels: dict[str, dict[str, int]],
           **extra: Any) -> dict[str, Any]:
    out = {"name": name, **evaluate(run, qrels), "latency_s": latency_summary(seconds), **extra}
    log.info("%s: MAP@10 %.4f R@100 %.4f nDCG@10 %.4f p50 %s ms", name, out["MAP@10"], out["R@100"],
             out["nDCG@10"], out["latency_s"].get("p50_ms"))
    return out


def cv_weighted(members: list[Any], topics: list[Topic], pool: dict[str, list[Hit]], articles: Any,
                qrels: dict[str, dict[str, int]]) -> tuple[dict[str, list[Hit]], dict[str, Any]]:
    """DS@GT weighted ensemble, weights grid-searched (steps 1/8) with 2-fold cross-validation over the
    reranked questions: tuned on one half, applied to the other; every question is scored out of fold."""
    order = sorted(t.id for t in topics)
    random.Random(CV_SEED).shuffle(order)
    folds = [set(order[: len(order) // 2]), set(order[len(order) // 2:])]
    runs = {t.id: [m.rerank(t.question, pool[t.id], articles, rs.DEPTH) for m in members] for t in topics}
    out: dict[str, list[Hit]] = {}
    chosen = []
    for i, tune in enumerate(folds):
        ids = sorted(tune)
        grid = search_weights([runs[q] for q in ids], [set(qrels[q]) for q in ids], steps=8)
        chosen.append({"tuned_on": len(ids), "weights": list(grid.weights), "tune_map@10": round(grid.score, 4)})
        ens = WeightedEnsemble(members, grid.weights, normalize="minmax", top_n=rs.DEPTH)
        for t in topics:
            if t.id in folds[1 - i]:
                out[t.id] = ens.rerank(t.question, pool[t.id], articles, rs.DEPTH)
    every = search_weights([runs[t.id] for t in topics], [set(qrels[t.id]) for t in topics], steps=8)
    return out, {"folds": chosen, "weights_all_questions": list(every.weights)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--work-dir", type=Path, default=REPO / "benchmarks" / "work")
    ap.add_argument("--rerank-questions", type=int, default=100,
                    help="held-back questions (first N in the split's order) reranked; first stages use all")
    ap.add_argument("--questions", type=int, default=None,
                    help="evaluate only the first N held-back questions (a quick check)")
    ap.add_argument("--latency-questions", type=int, default=3, help="questions timed on the uncached ensemble")
    ap.add_argument("--training-report", type=Path, action="append", default=[])
    ap.add_argument("--fresh", action="store_true", help="rerun first stages even when a cached run matches")
    ap.add_argument("--first-stage-only", action="store_true", help="run (and cache) the first stages, then stop")
    ap.add_argument("--full-corpus", action="store_true",
                    help="first stages on the whole snippet-level corpus (benchmarks/work/store) instead of the "
                         "sub-corpus; writes results/retrieval_full.json and its docs section")
    ap.add_argument("--full-corpus-plain", action="store_true",
                    help="with --full-corpus, also the packaged MiniLM's dense and hybrid when the adapted encoder "
                         "exists (a second encoding of the whole corpus)")
    ap.add_argument("--no-docs", action="store_true", help="write JSON only (no docs section, no plot)")
    ap.add_argument("--docs-only", action="store_true",
                    help="only rewrite the plot, docs sections and best preset from benchmarks/results/retrieval*.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.docs_only:
        write_docs(REPO / "benchmarks" / "results" / "retrieval.json")
        if (REPO / "benchmarks" / "results" / "retrieval_full.json").is_file():
            write_full_docs(REPO / "benchmarks" / "results" / "retrieval_full.json")
        return 0
    started = time.time()
    data = args.data_dir or shared_data_dir()
    questions = rc.held_back(data)
    if args.full_corpus:
        return full_corpus(args, questions[: args.questions] if args.questions else questions, started)
    work = args.work_dir / "retrieval"
    docs, store = work / "corpus" / "subset_docs.jsonl", work / "store"
    if not store.exists():
        corpus = bioasq_corpus.build(data, args.work_dir / "corpus")
        stats = rc.build_subset(corpus.snippet_docs.parent, args.work_dir / "store", questions, docs)
        ingest(docs, store)
        (work / "subset_stats.json").write_text(json.dumps(stats))
    stats = json.loads((work / "subset_stats.json").read_text())
    questions = questions[: args.questions] if args.questions else questions
    topics = [Topic(q.id, q.body) for q in questions]
    qrels = {q.id: {p: 1 for p in q.gold} for q in questions}
    ceiling = findable_and_ceiling(store, questions, qrels)
    first = FirstStages(store, topics, qrels, work / "first_stage", args.fresh)
    adapted = first.run_all()
    systems, runs, per_topic = first.systems, first.runs, first.per_topic

    if args.first_stage_only:
        return 0
    # rerankers over the best first stage's top 100 of the first N held-back questions: the adapted hybrid
    # (the trained-ce / trained-ensemble presets extend hybrid-adapted), else the plain hybrid
    sub = topics[: args.rerank_questions]
    base_name = "Hybrid RRF (BM25 + MiniLM adapted)" if adapted else "Hybrid RRF (BM25 + MiniLM)"
    base_preset = "hybrid-adapted" if adapted else "hybrid"
    pool = {t.id: runs[base_name][t.id] for t in sub}
    rerank: dict[str, Any] = {"questions": len(sub), "pool": base_name}
    store_db = DocumentStore.open(store)
    articles = store_db.get_many(sorted({h.pmid for hits in pool.values() for h in hits}))
    base_secs = per_topic[base_name]

    def total(secs: list[float], ts: list[Topic]) -> list[float]:
        """Per question: the first stage's seconds plus the reranker's."""
        return [base_secs[t.id] + s for t, s in zip(ts, secs, strict=True)]

    systems.append(system("BM25 (the reranked questions only)", {q: runs["BM25"][q] for q in pool},
                          [per_topic["BM25"][t.id] for t in sub], qrels, preset="bm25", stage="reference"))
    sub_base = {q: runs[base_name][q] for q in pool}
    systems.append(system(f"{base_name} (the reranked questions only)", sub_base, [base_secs[t.id] for t in sub],
                          qrels, preset=base_preset, stage="reference"))
    try:
        if not adapted:
            raise ConfigError("the trained-ce preset's first stage needs the adapted encoder "
                              f"{models_dir() / BI_MODEL}")
        ce_cfg = rs.settings("trained-ce")
        ce = rs.CachedScores(build_stage("rerank", ce_cfg.rerank, settings=ce_cfg), "trained-ce")
    except ConfigError as exc:
        log.warning("trained cross-encoder unavailable, rerankers skipped: %s", exc)
        ce = None
    if ce is not None:
        run, secs = rs.rerank_pool(ce, sub, pool, articles)
        runs["+ trained CE"] = run
        systems.append(system(f"{base_name} → trained cross-encoder", run, total(secs, sub), qrels,
                              preset="trained-ce", stage="rerank", rerank_latency_s=latency_summary(secs)))
        q8_cfg = rs.settings("trained-ce-int8")
        q8 = build_stage("rerank", q8_cfg.rerank, settings=q8_cfg)
        run, secs = rs.rerank_pool(q8, sub, pool, articles)
        systems.append(system(f"{base_name} → trained cross-encoder, int8", run, total(secs, sub), qrels,
                              preset="trained-ce-int8", stage="rerank", rerank_latency_s=latency_summary(secs)))
        emb_cfg = rs.settings(base_preset)
        emb = rs.CachedScores(EmbeddingReranker(rs.StoredVectors(_query_encoder(emb_cfg, store),
                                                                  rs.dense_folder(emb_cfg, store))), "embedding")
        members = [ce, emb]
        run, cv = cv_weighted(members, sub, pool, articles, qrels)
        rerank["weighted_cv"] = cv
        timed_topics = sub[: args.latency_questions]
        secs = _time_real_ensemble(cv["weights_all_questions"], timed_topics, pool, articles)
        timed = total(secs, timed_topics)
        enc_label = "MiniLM adapted" if adapted else "MiniLM"
        systems.append(system(f"{base_name} → ensemble (weighted: trained CE + {enc_label} cosine)", run, timed,
                              qrels, preset="trained-ensemble", stage="rerank", weights=cv,
                              rerank_latency_s=latency_summary(secs)))
        union = UnionEnsemble(members, member_k=5, top_n=rs.DEPTH)
        run, _ = rs.rerank_pool(union, sub, pool, articles)
        systems.append(system(f"{base_name} → ensemble (union of top 5: trained CE + {enc_label} cosine)", run,
                              timed, qrels, stage="rerank", note="at most 10 hits by construction (PJs)",
                              rerank_latency_s=latency_summary(secs)))
    store_db.close()
    best = choose_best(systems, runs, sub, qrels)


    hyb = rs.settings("hybrid")
    qvecs = _query_encoder(hyb, store).encode_queries([t.question for t in topics])
    ivfpq = rs.ivfpq_recall(rs.dense_folder(hyb, store), qvecs, [
        {"nlist": 64, "pq_m": 48, "nprobe": (8, 16, 32), "rerank": (100, 256)},
        {"nlist": 64, "pq_m": 96, "nprobe": (8, 16, 32), "rerank": (100, 256)},
    ])
    training = [json.loads(p.read_text()) for p in args.training_report if p.is_file()]
    result = {
        "split": {"dev_fraction": rc.DEV_FRACTION, "seed": rc.SPLIT_SEED,
                                             "held_back_questions": len(questions)},
        "corpus": stats, "ceiling": ceiling, "rerank": rerank, "best": best, "systems": systems, "ivfpq": ivfpq,
        "training": [_training_summary(t) for t in training],
        "wall_s": round(time.time() - started, 1),
    }
    path = write_result("retrieval", result, None if not args.no_docs else work)
    log.info("results in %s", path)
    if not args.no_docs:
        write_docs(path)
    return 0


def findable_and_ceiling(store: Path, questions: list[Any], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Fill FINDABLE (the gold with a document in ``store``) and return the oracle's metrics."""
    FINDABLE.clear()
    with DocumentStore.open(store) as db:
        FINDABLE.update({q.id: {p: 1 for p in db.existing(q.gold)} for q in questions})
    oracle = {q: [Hit(p, 1.0, i + 1) for i, p in enumerate(sorted(g))] for q, g in FINDABLE.items()}
    return {k: round(v, 4) for k, v in evaluate_retrieval(oracle, qrels, METRICS).aggregate.items()}


class FirstStages:
    """BM25, dense MiniLM, their RRF hybrid and, when the adapted encoder is there, its dense and hybrid:
    each run over all topics, or reused from ``cache`` when the settings, encoder, store and questions match."""

    def __init__(self, store: Path, topics: list[Topic], qrels: dict[str, dict[str, int]], cache: Path,
                 fresh: bool) -> None:
        self.store, self.topics, self.qrels, self.cache, self.fresh = store, topics, qrels, cache, fresh
        with DocumentStore.open(store) as db:
            self.store_seq = db.seq
        self.systems: list[dict[str, Any]] = []
        self.runs: dict[str, dict[str, list[Hit]]] = {}
        self.per_topic: dict[str, dict[str, float]] = {}

    def run_all(self, plain: bool = True) -> bool:
        """Run every first stage (``plain=False``: not the packaged MiniLM's dense and hybrid when the
        adapted encoder is there); True when the adapted encoder was there."""
        adapted = (models_dir() / BI_MODEL / "config.json").is_file()
        self.run("BM25", "bm25")
        if plain or not adapted:
            self.run("Dense (MiniLM)", "hybrid", DENSE_ONLY)
            self.run("Hybrid RRF (BM25 + MiniLM)", "hybrid")
        if adapted:
            self.run("Dense (MiniLM adapted)", "hybrid", DENSE_ONLY, f"indexes.dense.encoder=models:{BI_MODEL}")
            self.run("Hybrid RRF (BM25 + MiniLM adapted)", "hybrid-adapted")
        else:
            log.warning("no adapted encoder at %s: skipped", models_dir() / BI_MODEL)
        return adapted

    def run(self, name: str, preset: str, *over: str) -> None:
        cfg = rs.settings(preset, *over)
        ids = [t.id for t in self.topics]
        questions = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:8]
        # the dense folder's name carries a trained model's content identity: a retrained encoder reruns
        cached = self.cache / f"{cfg.hash()}-{rs.dense_folder(cfg, self.store).name}-q{questions}.json"
        if cached.is_file() and not self.fresh:  # the same settings, store and questions: reuse the run
            got = json.loads(cached.read_text())
            if got["questions"] == ids and got["store_seq"] == self.store_seq:
                self.runs[name] = {q: [Hit(p, sc, i + 1) for i, (p, sc) in enumerate(hits)]
                                   for q, hits in got["run"].items()}
                secs = got["seconds"]
                log.info("%s: first-stage run and timings reused from %s", name, cached)
        if name not in self.runs:
            self.runs[name], secs = rs.first_stage(cfg, self.store, self.topics)
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps({"questions": ids, "store_seq": self.store_seq, "seconds": secs,
                                          "run": {q: [(h.pmid, h.score) for h in hits]
                                                  for q, hits in self.runs[name].items()}}))
        self.per_topic[name] = {t.id: s for t, s in zip(self.topics, secs, strict=True)}
        self.systems.append(system(name, self.runs[name], secs, self.qrels, preset=preset, overrides=list(over),
                                   stage="first"))


def full_corpus(args: argparse.Namespace, questions: list[Any], started: float) -> int:
    """The first stages on the whole snippet-level corpus (the foundation store, ~60k documents)."""
    store = args.work_dir / "store"
    if not store.exists():
        raise SystemExit(f"no full store at {store}: run benchmarks/bench_bm25.py first")
    topics = [Topic(q.id, q.body) for q in questions]
    qrels = {q.id: {p: 1 for p in q.gold} for q in questions}
    ceiling = findable_and_ceiling(store, questions, qrels)
    first = FirstStages(store, topics, qrels, args.work_dir / "retrieval" / "first_stage_full", args.fresh)
    first.run_all(plain=args.full_corpus_plain)
    with DocumentStore.open(store) as db:
        documents = len(db)
    result = {"split": {"dev_fraction": rc.DEV_FRACTION, "seed": rc.SPLIT_SEED, "held_back_questions": len(topics)},
              "corpus": {"documents": documents, "store": str(store.relative_to(REPO))}, "ceiling": ceiling,
              "systems": first.systems, "wall_s": round(time.time() - started, 1)}
    path = write_result("retrieval_full", result, None if not args.no_docs else args.work_dir / "retrieval")
    log.info("results in %s", path)
    if not args.no_docs:
        write_full_docs(path)
    return 0


def write_full_docs(path: Path) -> None:
    """The ``retrieval_full`` docs section from its results file."""
    update_markdown_section("retrieval_full", retrieval_report.markdown_full(json.loads(path.read_text())))
    plot_results.main(["retrieval_full"])


def _training_summary(report: dict[str, Any]) -> dict[str, Any]:
    """What the docs need from a ``training.json``; for a model trained from another trained model (a
    cross-encoder on an adapted encoder's body), that base's options too, so the docs can reproduce it."""
    keep = ("kind", "store", "seconds", "pairs", "options", "metrics")
    out = {k: report.get(k) for k in keep}
    if out["kind"] == "bi-encoder" and "hard_negatives" not in (out["pairs"] or {}):
        # written before `train encoder --negatives` existed: those runs used in-batch negatives only
        out["options"] = {**(out["options"] or {}), "negatives": 0}
    base_report = Path(str(report.get("base", ""))) / "training.json"
    if report.get("base") and base_report.is_file():
        base = _training_summary(json.loads(base_report.read_text()))
        out["base_training"] = {k: base.get(k) for k in ("kind", "store", "options")}
    return out


def write_docs(path: Path) -> None:
    """The plot and the docs section from a results file (``best`` is set by benchmarks/bench_ltr.py now: the
    LTR preset a fresh machine reaches with `medcite models build best`)."""
    result = json.loads(path.read_text(encoding="utf-8"))
    retrieval_report.plot(result["systems"], REPO / "docs" / "img" / "recall_at_k.png")
    update_markdown_section("retrieval", retrieval_report.markdown(result))
    plot_results.main(["retrieval"])


def choose_best(systems: list[dict[str, Any]], runs: dict[str, dict[str, list[Hit]]], sub: list[Topic],
                qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The preset (run as is, no overrides) with the highest MAP@10 on the reranked questions, where
    every system was measured; first stages are re-scored on those questions for the comparison."""
    ids = {t.id for t in sub}
    scores = {}
    for s in systems:
        if not s.get("preset") or s.get("overrides") or s.get("stage") == "reference":
            continue
        if s["stage"] == "first":
            run = {q: hits for q, hits in runs[s["name"]].items() if q in ids}
            value = evaluate_retrieval(run, {q: qrels[q] for q in run}, ["MAP@10"]).aggregate["MAP@10"]
        else:
            value = s["MAP@10"]
        scores[s["preset"]] = max(round(value, 4), scores.get(s["preset"], 0.0))
    preset = max(scores, key=lambda p: scores[p])
    return {"preset": preset, "map@10_on_reranked_questions": scores, "questions": len(ids)}


def _query_encoder(cfg: Any, store: Path) -> Any:
    from medcite.index.dense.encoders import load_encoder

    return load_encoder(cfg.indexes["dense"].encoder)


def _time_real_ensemble(weights: list[float], topics: list[Topic], pool: dict[str, list[Hit]],
                        articles: Any) -> list[float]:
    """Seconds per question of the uncached weighted ensemble, built from its preset with these weights."""
    cfg = rs.settings("trained-ensemble", f"rerank.weights={json.dumps(weights)}")
    ens = build_stage("rerank", cfg.rerank, settings=cfg)
    _, secs = rs.rerank_pool(ens, topics, pool, articles)
    return secs


if __name__ == "__main__":
    sys.exit(main())
