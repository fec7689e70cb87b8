"""Cross-encoder reranking speed: seconds to rerank a question's top 100 with a MiniLM-L6-sized model.

Target (issue 3): <= 3 s per question on 2 cores. Settings: max_length 512 / 256 / 128, batch 16 / 32, and
full precision against the int8 dynamic quantization of ``rerank.quantize`` (scores compared with the full
model's as the Spearman correlation per question). The model is the packaged all-MiniLM-L6-v2 body with a
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

from common import markdown_table, update_markdown_section, write_result

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


def _spearman(a: list[float], b: list[float]) -> float:
    from scipy.stats import spearmanr

    return 1.0 if a == b else float(spearmanr(a, b).statistic)


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    rows = [[r["max_length"], r["batch"], "int8" if r["int8"] else "fp32", f"{r['wall_s_median']:.2f}",
             f"{r['wall_s_max']:.2f}", f"{r['cpu_s_median']:.2f}", f"{r['spearman_vs_fp32_median']:.4f}",
             "met" if r["wall_s_median"] <= result["target_s_per_question"] else "missed", r["load_avg_1m"]]
            for r in result["results"].values()]
    return "\n".join([
        "## Cross-encoder rerank speed (`benchmarks/bench_rerank.py`)",
        "",
        f"Measured {result['measured_at']} at `{result['git_commit']}` with `{result['command']}`: "
        f"{result['model']}, {result['threads']} torch threads on {m.get('cpus')} cores (load average "
        f"{m.get('load_avg_1m_at_start')} at start), top {result['docs_per_question']} real PubMed abstracts "
        f"(mean {result['doc_words_mean']} words) per question, {result['questions']} BioASQ questions. "
        "Target: ≤ 3 s per question. *Spearman*: rank correlation of the int8 scores with the full-precision "
        "scores of the same model, per question (median).",
        "",
        markdown_table(["max_length", "batch", "weights", "wall s / question (median)", "wall s (max)",
                        "CPU s (median)", "Spearman vs fp32", "≤ 3 s", "load avg"], rows),
    ])


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
        for max_length in (512, 256, 128):
            reference: dict[str, list[float]] = {}
            for quantize in (False, True):
                for batch_size in (16, 32):
                    rr = CrossEncoderReranker(model, max_length=max_length, batch_size=batch_size, top_n=100,
                                              activation="raw", quantize=quantize)
                    rr.rerank(questions[0], hits[:8], arts, 8)  # warm-up
                    wall, cpu, rho = [], [], []
                    for q in questions:
                        t0, c0 = time.perf_counter(), time.process_time()
                        scores = rr.score(q, docs)
                        wall.append(time.perf_counter() - t0)
                        cpu.append(time.process_time() - c0)
                        if not quantize:
                            reference.setdefault(q, scores)
                        rho.append(_spearman(reference[q], scores))
                    key = f"max_length={max_length},batch={batch_size},{'int8' if quantize else 'fp32'}"
                    results[key] = {"max_length": max_length, "batch": batch_size, "int8": quantize,
                                    "wall_s_median": round(statistics.median(wall), 3),
                                    "wall_s_max": round(max(wall), 3),
                                    "cpu_s_median": round(statistics.median(cpu), 3),
                                    "spearman_vs_fp32_median": round(statistics.median(rho), 4),
                                    "load_avg_1m": round(os.getloadavg()[0], 2)}
                    print(key, results[key], flush=True)
    payload = {"model": args.model or "packaged all-MiniLM-L6-v2 body + fresh 1-logit head",
               "threads": args.threads, "questions": len(questions), "docs_per_question": len(hits),
               "doc_words_mean": round(statistics.mean(words), 1), "target_s_per_question": 3.0,
               "results": results}
    path = write_result("rerank", payload, Path(args.out) if args.out else None)
    if not args.out:
        update_markdown_section("rerank", markdown(json.loads(path.read_text(encoding="utf-8"))))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
