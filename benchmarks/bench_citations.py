"""How many of a Task B run's citations does the cited abstract support? Per preset, judged by a stance model.

For each run directory written by `benchmarks/bench_task_b.py` (default: benchmarks/work/task_b/*-none, the
30 BioGen 2025 topics on the demo corpus), every (answer sentence, cited PMID) pair is judged by the stance
stage against the abstract the run recorded (`articles.jsonl`) — what `medcite eval biogen-b` reports:
coverage, support rate and contradiction rate (micro, over all citations). The trivial baseline, in the
same run: each citation replaced by a random other abstract of the same topic's evidence (seeded), judged
the same way. The judge's own error is the stance benchmark's (docs/BENCHMARKS.md "stance"): rates are
estimates, comparable across presets, not ground truth.

    python benchmarks/bench_citations.py --runs benchmarks/work/task_b
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plot_results  # noqa: E402

from medcite.evaluate.citations import citation_metrics  # noqa: E402
from medcite.pipeline import build_stage  # noqa: E402
from medcite.rundir import read_answers, read_articles  # noqa: E402
from medcite.types import Stance  # noqa: E402

NAME = "citations"


def judge_run(run: Path, stance: Any, seed: int = 13) -> dict[str, Any]:
    answers = read_answers(run)
    articles = read_articles(run)
    rng = random.Random(seed)
    cited, placebo = [], []
    for a in answers:
        pool = sorted(articles.get(a.topic_id, {}))
        for i, s in enumerate(a.sentences):
            for p in s.pmids:
                art = articles.get(a.topic_id, {}).get(p)
                if art is None:
                    continue
                cited.append(((a.topic_id, i, p), s.text, art))
                others = [q for q in pool if q not in s.pmids]
                if others:
                    q = rng.choice(others)
                    placebo.append(((a.topic_id, i, p), s.text, articles[a.topic_id][q]))
    start = time.perf_counter()
    verdicts = stance.classify_articles([(t, art) for _, t, art in cited])
    random_verdicts = stance.classify_articles([(t, art) for _, t, art in placebo])
    seconds = time.perf_counter() - start
    report = citation_metrics(answers, {key: v.label for (key, _, _), v in zip(cited, verdicts, strict=True)})
    judged_random = [v.label for v in random_verdicts]
    n = len(judged_random)
    return {
        **{k: round(v, 4) for k, v in report.micro.items()},
        "citations": report.counts.citations, "sentences": report.counts.sentences, "topics": len(answers),
        "random_support_rate": round(sum(x is Stance.SUPPORTS for x in judged_random) / n, 4) if n else 0.0,
        "random_contradiction_rate": round(sum(x is Stance.CONTRADICTS for x in judged_random) / n, 4) if n else 0.0,
        "judge_seconds": round(seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=common.REPO / "benchmarks" / "work" / "task_b",
                    help="Folder of run directories (bench_task_b.py --runs).")
    ap.add_argument("--suffix", default="-none", help="Only run directories whose name ends so.")
    ap.add_argument("--stance", default="models:medcite-reader", help="Stance model (the judge).")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        common.update_markdown_section(NAME, markdown(json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text())))
        plot_results.main([NAME])
        return
    runs = sorted(p for p in args.runs.iterdir() if p.is_dir() and p.name.endswith(args.suffix)
                  and (p / "answers.jsonl").exists()) if args.runs.is_dir() else []
    if not runs:
        raise SystemExit(f"no run directories in {args.runs}; write them first with "
                         "`python benchmarks/bench_task_b.py --stack none`")
    stance = build_stage("stance", {"backend": "classifier", "model": args.stance})
    rows = {}
    for run in runs:
        rows[run.name] = judge_run(run, stance)
        print(json.dumps({run.name: rows[run.name]}), flush=True)
    result = {"judge": args.stance, "runs_dir": str(args.runs), "runs": rows, "machine": common.machine_info(),
              "commit": common.git_commit()}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))
    plot_results.main([NAME])


def markdown(result: dict[str, Any]) -> str:
    rows = [[name, str(r["citations"]), f"{r['coverage']:.3f}", f"{r['support_rate']:.3f}",
             f"{r['random_support_rate']:.3f}",
             f"{r['support_rate'] / r['random_support_rate']:.2f}×" if r["random_support_rate"] else "–",
             f"{r['contradiction_rate']:.3f}", f"{r['random_contradiction_rate']:.3f}"]
            for name, r in result["runs"].items()]
    return "\n".join([
        "## Citation support of Task B runs (`benchmarks/bench_citations.py`)",
        "",
        "Every (sentence, cited PMID) of each run (30 BioGen 2025 topics, demo corpus, stack `none`) judged by "
        f"the stance model `{result['judge']}` against the cited abstract (`medcite eval biogen-b`). Baseline in "
        "the same run: each citation swapped for a random other abstract of the topic's evidence. The judge's "
        "error is the stance benchmark's, so these are estimates comparable across presets.",
        "",
        common.markdown_table(["run", "citations", "coverage", "support rate", "random-citation support",
                               "ratio", "contradiction rate", "random-citation contradiction"], rows),
    ])


if __name__ == "__main__":
    main()
