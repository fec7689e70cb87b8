"""LTR transfer (issue 17): the ``best`` model that ``medcite models build best`` trains on medcite's BioASQ
snippet store (what a user whose store lacks the BioASQ gold gets, e.g. the README's demo store), applied to the
whole benchmark store, against BM25 and the hybrid first stage in the same run on the held-back questions.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ltr_transfer.py --store benchmarks/work/store \\
        --models-dir /tmp/mb/models

``--models-dir`` holds a ``medcite-ltr-bioasq`` built by ``medcite models build best`` (its ``training.json``
names the store it was trained on). The model trained on the whole store is measured by bench_ltr.py
(``ltr.json``); this script reads that file's MAP@10 for the comparison.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

import retrieval_corpus as rc
from common import RESULTS_DIR, markdown_table, update_markdown_section, write_result

from medcite.config import load_settings
from medcite.corpus.store import DocumentStore
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.paths import shared_data_dir
from medcite.pipeline.retrieval import RetrievalPipeline
from medcite.progress import progress
from medcite.types import Hit, Topic

log = logging.getLogger("bench_ltr_transfer")
METRICS = ["MAP@10", "R@100", "nDCG@10"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--models-dir", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--no-docs", action="store_true", help="write JSON only (no docs section)")
    ap.add_argument("--note", action="append", default=[], help="a note for the docs section (repeatable)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started = time.time()
    held_qs = rc.held_back(args.data_dir or shared_data_dir())
    qrels = {q.id: {p: 1 for p in q.gold} for q in held_qs}
    os.environ["MEDCITE_MODELS_DIR"] = str(args.models_dir)
    trained = json.loads((args.models_dir / "medcite-ltr-bioasq" / "training.json").read_text())
    runs: dict[str, dict[str, list[Hit]]] = {"bm25": {}, "hybrid": {}, "ltr": {}}
    with DocumentStore.open(args.store) as store:
        documents = len(store)
        pipeline = RetrievalPipeline.from_settings(load_settings("best"), store=store)
        try:
            for q in progress(held_qs, desc="best preset", unit="q"):
                got = pipeline.retrieve(Topic(q.id, q.body))
                runs["bm25"][q.id] = got.runs["bm25/q0"][:100]
                runs["hybrid"][q.id] = got.rankings["retrieval"][:100]
                runs["ltr"][q.id] = got.rankings["rerank"]
        finally:
            pipeline.close()
    scores = {k: {m: round(v, 4) for m, v in evaluate_retrieval(r, qrels, METRICS).aggregate.items()}
              for k, r in runs.items()}
    in_store = json.loads((RESULTS_DIR / "ltr.json").read_text())
    in_store_map = next(s["MAP@10"] for s in in_store["systems"] if s["name"].startswith("best"))
    bm25 = scores["bm25"]["MAP@10"]
    result = {
        "corpus": {"documents": documents, "store": str(args.store)},
        "held_back_questions": len(held_qs),
        "model": {"trained_on": trained["store"], "questions": trained["questions"],
                  "held_back_in_training_store": trained["metrics"]},
        "systems": {k: {**v, "x_bm25_map@10": round(v["MAP@10"] / bm25, 3)} for k, v in scores.items()},
        "in_store_trained_map@10": in_store_map,
        "in_store_trained_measured_at": in_store["measured_at"],
        "wall_s": round(time.time() - started, 1),
        "notes": ["Shared machine: 2 CPU cores used by other sessions at the same time.", *args.note],
    }
    path = write_result("ltr_transfer", result)
    log.info("results in %s", path)
    if not args.no_docs:
        r = json.loads(path.read_text())
        rows = [["BM25", f"{scores['bm25']['MAP@10']:.4f}", "1.00×", f"{scores['bm25']['nDCG@10']:.4f}"],
                ["Hybrid RRF (first stage)", f"{scores['hybrid']['MAP@10']:.4f}",
                 f"{scores['hybrid']['MAP@10'] / bm25:.2f}×", f"{scores['hybrid']['nDCG@10']:.4f}"],
                ["best, LTR trained on the snippet store", f"{scores['ltr']['MAP@10']:.4f}",
                 f"{scores['ltr']['MAP@10'] / bm25:.2f}×", f"{scores['ltr']['nDCG@10']:.4f}"]]
        update_markdown_section("ltr_transfer", "\n".join([
            "## Learning to rank trained on the snippet store, applied to the whole corpus",
            "",
            f"Measured {r['measured_at']} at `{r['git_commit']}` with `{r['command']}` ({r['wall_s']:.0f} s; 2 "
            "cores shared with other sessions).",
            "",
            f"A store without the BioASQ gold articles (the README's demo store) makes `medcite models build best` "
            f"train on medcite's BioASQ snippet store ({trained['store']}). That model, applied to the whole "
            f"store ({documents:,} documents), on the same {len(held_qs)} held-back questions as the section above:",
            "",
            markdown_table(["system", "MAP@10", "× BM25", "nDCG@10"], rows),
            "",
            f"The model trained on this store itself (section above, {in_store['measured_at']}): MAP@10 "
            f"{in_store_map:.4f}.",
            *[f"\n**Note.** {n}" for n in args.note],
        ]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
