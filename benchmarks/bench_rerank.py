"""Cross-encoder reranking speed: seconds to rerank a question's top 100 with a MiniLM-L6-sized model.

Target (issue 3): <= 3 s per question on 2 cores. The model is the packaged all-MiniLM-L6-v2 body with a
fresh one-logit head (the architecture of ``cross-encoder/ms-marco-MiniLM-L-6-v2``: 6 layers, 384
hidden; speed depends on the shape, not the weights), or any cross-encoder folder given with --model.
Documents: the real abstracts of the NLM update file sample (``pubmed21n1298_first300...``, modern
structured abstracts), 100 per question, queries from BioASQ dev. Reported per setting: wall and CPU
seconds per question (median over questions), with the load average, since the machine is shared.

    .venv/bin/python benchmarks/bench_rerank.py                 # ~5-10 min on a quiet machine
    .venv/bin/python benchmarks/bench_rerank.py --questions 3   # quick check
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import write_result

from medcite.corpus.pubmed_xml import iter_pubmed_xml
from medcite.paths import shared_data_dir
from medcite.rerank.cross_encoder import CrossEncoderReranker
from medcite.train.common import base_model_dir
from medcite.train.reranker import prepare_base
from medcite.types import Article, Hit


def _abstracts(data: Path) -> list[Article]:
    path = data / "pubmed_xml" / "pubmed21n1298_first300_plus_deletecitation.xml.gz"
    with open(path, "rb") as fh:
        items = list(iter_pubmed_xml(fh, path.name))
    return [a for a in items if isinstance(a, Article) and len(a.abstract.split()) >= 50]


def _questions(data: Path, n: int) -> list[str]:
    with gzip.open(data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz", "rt", encoding="utf-8") as fh:
        return [q["body"] for q in json.load(fh)["questions"][:n]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="cross-encoder folder (default: packaged MiniLM + fresh head)")
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    data = shared_data_dir()
    docs = _abstracts(data)[:100]
    arts = {a.pmid: a for a in docs}
    hits = [Hit(a.pmid, 1.0) for a in docs]
    words = [len(a.text.split()) for a in docs]
    questions = _questions(data, args.questions)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or prepare_base(str(base_model_dir("minilm")), Path(tmp), 0)
        for max_length in (512, 256):
            for batch_size in (16, 32):
                rr = CrossEncoderReranker(model, max_length=max_length, batch_size=batch_size, top_n=100)
                rr.rerank(questions[0], hits[:8], arts, 8)  # warm-up
                wall, cpu = [], []
                for q in questions:
                    t0, c0 = time.perf_counter(), time.process_time()
                    out = rr.rerank(q, hits, arts, 10)
                    wall.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
                    assert len(out) == 10
                key = f"max_length={max_length},batch={batch_size}"
                results[key] = {"wall_s_median": round(statistics.median(wall), 3),
                                "wall_s_max": round(max(wall), 3),
                                "cpu_s_median": round(statistics.median(cpu), 3),
                                "load_avg_1m": round(os.getloadavg()[0], 2)}
                print(key, results[key], flush=True)
    payload = {"model": args.model or "packaged all-MiniLM-L6-v2 body + fresh 1-logit head",
               "threads": args.threads, "questions": len(questions), "docs_per_question": len(hits),
               "doc_words_mean": round(statistics.mean(words), 1), "target_s_per_question": 3.0,
               "results": results}
    path = write_result("rerank", payload, Path(args.out) if args.out else None)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
