"""medcite's training loops before and after the move to sentence-transformers' trainers, same data, same seed.

A small real run: the first ``--questions`` BioASQ dev questions (split by question as ``medcite train``
does), a store of the snippet documents of every dev question plus the PubMedQA abstracts (the corpus of
``bioasq_corpus.py``), BM25 hard negatives. Each configuration is trained by the baseline code (the
``src`` of ``--baseline``, a git revision, exported to the work dir) and by this checkout's code, in
separate processes, interleaved, and reports dev MAP@10 before/after and seconds per optimiser step, with
the ratio new/old in the same run.

    python benchmarks/bench_train_loop.py --baseline d1c3ba8 --seeds 13 14
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def build_inputs(work: Path, n_questions: int) -> tuple[Path, Path]:
    """(BioASQ subset JSON, store folder), built once under ``work``."""
    import bioasq_corpus

    from medcite.paths import shared_data_dir

    data_dir = shared_data_dir()
    subset, store = work / f"bioasq_first{n_questions}.json", work / "store"
    if subset.exists() and store.exists():
        return subset, store
    questions = bioasq_corpus.load_dev_questions(data_dir)
    subset.write_text(json.dumps({"questions": questions[:n_questions]}))
    files = bioasq_corpus.build(data_dir, work / "corpus")
    from click.testing import CliRunner

    from medcite.cli.main import cli

    result = CliRunner().invoke(cli, ["-q", "ingest", "--store", str(store), str(files.pubmedqa_docs),
                                      str(files.snippet_docs)])
    if result.exit_code:
        raise RuntimeError(f"ingest failed: {result.output}")
    return subset, store


def export_baseline(rev: str, work: Path) -> Path:
    out = work / f"baseline-{rev}"
    if not (out / "src").exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(out, filter="data")
    return out / "src"


def worker(kind: str, data: str, store: str, out: str, opts: dict[str, Any]) -> None:
    """Runs in a subprocess whose PYTHONPATH picks the code under test."""
    import medcite
    from medcite.train.common import TrainOptions

    opts_obj = TrainOptions(**opts)
    if kind == "encoder":
        from medcite.train.encoder import train_encoder as train
    else:
        from medcite.train.reranker import train_reranker as train
    report = train(data, store, out, base="minilm", opts=opts_obj)
    report["code"] = str(Path(medcite.__file__).parent)
    Path(out, "bench.json").write_text(json.dumps(report))


OPTIONS = {
    "encoder": dict(epochs=1, batch_size=16, lr=3e-5, max_length=128, max_pairs=320, negatives=1,
                    eval_depth=30, max_dev=60, threads=2),
    "reranker": dict(epochs=1, batch_size=16, lr=5e-5, max_length=128, max_pairs=640, negatives=3,
                     eval_depth=30, max_dev=60, threads=2),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="d1c3ba8", help="git revision of the hand-written loops")
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--seeds", type=int, nargs="+", default=[13, 14])
    ap.add_argument("--kinds", nargs="+", default=["encoder", "reranker"])
    ap.add_argument("--new", type=Path, default=ROOT / "src", help="the src folder of the code under test")
    ap.add_argument("--impls", nargs="+", choices=["old", "new"], default=["old", "new"])
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "train_loop")
    ap.add_argument("--out", type=Path, default=None, help="write the results JSON here")
    ap.add_argument("--worker", nargs=4, metavar=("KIND", "DATA", "STORE", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--opts", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, json.loads(args.opts))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    data, store = build_inputs(args.work, args.questions)
    code = {"old": export_baseline(args.baseline, args.work), "new": args.new}
    runs: list[dict[str, Any]] = []
    for kind in args.kinds:
        for seed in args.seeds:
            for impl in args.impls:
                out = args.work / "runs" / f"{kind}-{seed}-{impl}-{code[impl].parent.name}"
                if out.exists():
                    shutil.rmtree(out)
                env = {**os.environ, "PYTHONPATH": str(code[impl]), "HF_HUB_OFFLINE": "1"}
                opts = {**OPTIONS[kind], "seed": seed}
                subprocess.run([sys.executable, __file__, "--worker", kind, str(data), str(store), str(out),
                                "--opts", json.dumps(opts)], check=True, env=env)
                report = json.loads((out / "bench.json").read_text())
                steps = report["loss"][-1][0]
                runs.append({"kind": kind, "seed": seed, "impl": impl, "code": report["code"],
                             "steps": steps, "train_seconds": report["seconds"]["train"],
                             "s_per_step": round(report["seconds"]["train"] / steps, 3),
                             "pairs": report["pairs"], "questions": report["questions"],
                             **{k: v for k, v in report["metrics"].items() if k.startswith("map")}})
                print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for kind in args.kinds:
        mine = [r for r in runs if r["kind"] == kind]
        summary[kind] = {f"{key}_{impl}": [r[key] for r in mine if r["impl"] == impl]
                         for impl in args.impls for key in ("map@10_before", "map@10_after", "s_per_step")}
        if set(args.impls) == {"old", "new"}:  # each seed's pair ran back to back: a ratio per seed
            step = {(r["seed"], r["impl"]): r["s_per_step"] for r in mine}
            per_seed = [step[seed, "new"] / step[seed, "old"] for seed in args.seeds]
            summary[kind]["s_per_step_ratio_new_over_old"] = [round(r, 3) for r in per_seed]
            summary[kind]["s_per_step_ratio_median"] = round(statistics.median(per_seed), 3)
    result = {"options": OPTIONS, "seeds": args.seeds, "questions": args.questions, "baseline": args.baseline,
              "summary": summary, "runs": runs}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
