"""Make the viewer screenshots in docs/img from real runs: a topic page with an open citation, a run summary
with its citation chart, and two runs compared on one topic (captions in docs/VIEWER.md).

Without ``--runs`` it builds everything with the ``medcite`` command line, offline, in ``--work``
(default ``benchmarks/work/screenshots``; each step is skipped when its output is already there):

1. the demo corpus (``medcite.corpus.sample.demo_files``: NLM files pubmed20n0014 + pubmed21n1298, fetched
   once with pip and cached) ingested into ``WORK/store``;
2. the first ``--topics`` (5) topics of TREC BioGen 2025 Task B (``shared/data/biogen``) and the three
   questions of ``medcite demo`` as topics 901-903 (the featured one, ``--topic 902``, is the demo's relaxation
   therapy question, whose answer quotes the review that answers it);
3. two runs over them: ``offline`` with the stance check of every citation recorded (``verify.citations=check``,
   the trained stance classifier) and ``clac25-a`` on the local stack of docs/TASK_B.md (the packaged
   SmolLM2-135M in-process, MiniLM instead of the hub reranker; a small answer budget so that it finishes
   in minutes on a CPU), also with the stance check;
4. ``medcite eval biogen-b --run RUN`` on both (the citation measures, judged by the stance classifier), which
   the viewer's run summary draws as a chart.

With ``--runs DIR`` it screenshots two runs already in DIR (``--first`` and ``--second`` name them).

Needs the Debian browser (``apt-get install chromium``) and the Python ``playwright`` package; Playwright's
own browser download is not used. Usage:

    python scripts/screenshots.py [--work DIR | --runs DIR] [--out docs/img] [--topic 183]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from medcite.cli.demo import QUESTIONS as DEMO_QUESTIONS
from medcite.corpus.sample import demo_files
from medcite.paths import shared_data_dir
from medcite.viewer.server import serve_in_thread

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
REPO = Path(__file__).resolve().parent.parent
FIRST, SECOND = "offline-check", "clac25-a-local"
CHECK = ["--set", "verify.citations=check", "--set", "stance.backend=classifier"]
RUNS = {
    FIRST: ["--preset", "offline", *CHECK],
    # docs/TASK_B.md's local stack, with a smaller answer budget (SmolLM2 on a CPU: about a minute a call)
    SECOND: ["--preset", "clac25-a", "--set", "llm.backend=local", "--set", "llm.model=null",
             "--set", "rerank.backend=embedding", "--set", "rerank.model=minilm",
             "--set", "generate.max_tokens=96", "--set", "generate.max_attempts=1", *CHECK],
}


def medcite(work: Path, *args: str | Path) -> None:
    """Run the ``medcite`` command line in ``work`` (paths relative to it, as the run pages show them)."""
    cmd = [sys.executable, "-m", "medcite", "-q", *map(str, args)]
    print(f"$ (cd {work}; medcite " + " ".join(map(str, args)) + ")", flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    subprocess.run(cmd, check=True, env=env, cwd=work)


def build_runs(work: Path, topics: int) -> Path:
    """The store, topics, runs and their citation metrics in ``work`` (steps already done are skipped)."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "store" / "manifest.json").exists():
        medcite(work, "ingest", "--store", "store", "--on-error", "skip", *demo_files())
    if not (work / "topics.json").exists():
        source = shared_data_dir() / "biogen" / "biogen2025_taskB_topics.json"
        chosen = json.loads(source.read_text(encoding="utf-8"))[:topics]
        chosen += [{"id": 901 + i, "question": t.question, "narrative": "", "topic": t.question}
                   for i, t in enumerate(DEMO_QUESTIONS)]
        (work / "topics.json").write_text(json.dumps(chosen, indent=1), encoding="utf-8")
    for name, options in RUNS.items():
        run = f"runs/{name}"
        if not (work / run / "validation.json").exists():  # written when the run finished
            medcite(work, "run", "--topics", "topics.json", "--corpus", "store", "--out", run, *options)
        if not (work / run / "metrics_task_b.json").exists():
            medcite(work, "eval", "biogen-b", "--run", run, "--no-completeness")
    return work / "runs"


def shrink(path: Path, colours: int = 128) -> None:
    """Re-save as a palette PNG: screenshots are flat colours, so this keeps them sharp and small."""
    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=0)
    small.save(path, optimize=True)


def shoot(runs: Path, out: Path, first: str, second: str, topic: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with serve_in_thread(runs) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})

        page.goto(f"{base}/run/{first}/topic/{topic}")
        page.locator("#answer a.chip").first.click()  # the first citation of the answer's first sentence
        page.locator("#panel article.abstract").wait_for()
        shots.append(out / "viewer-topic.png")
        page.screenshot(path=str(shots[-1]))

        page.goto(f"{base}/run/{first}")
        page.locator("#citation-chart").wait_for()
        shots.append(out / "viewer-run.png")
        page.screenshot(path=str(shots[-1]))

        page.goto(f"{base}/compare?runs={first}&runs={second}&topic={topic}")
        shots.append(out / "viewer-compare.png")
        page.screenshot(path=str(shots[-1]))
        browser.close()
    for png in shots:
        shrink(png)
    return shots


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img", help="Where the PNGs go.")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "work" / "screenshots",
                    help="Where the store, topics and runs are built (reused when there).")
    ap.add_argument("--runs", type=Path, default=None, help="Screenshot runs already in this folder instead.")
    ap.add_argument("--first", default=FIRST, help="The run of the topic page and the run summary.")
    ap.add_argument("--second", default=SECOND, help="The run compared with the first.")
    ap.add_argument("--topics", type=int, default=5, help="How many BioGen 2025 topics the built runs answer.")
    ap.add_argument("--topic", default="902", help="The topic of the topic page and the comparison.")
    args = ap.parse_args()
    runs = args.runs if args.runs is not None else build_runs(args.work, args.topics)
    for png in shoot(runs, args.out, args.first, args.second, args.topic):
        print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}: {png.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
