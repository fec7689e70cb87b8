"""Viewer latency on a large run: a 300-topic run directory must open its index page in under 1 s.

Writes two synthetic 300-topic runs with the real RunWriter (medcite.viewer.synthetic), starts
`medcite view` as a separate process on a loopback port, and times pages through real HTTP (httpx):

- cold: the first request to a freshly started server (nothing parsed yet; the OS file cache is warm
  because the runs were just written), median of several restarts;
- warm: repeated requests to the same server (parsed files cached by path, mtime and size).

Usage: python benchmarks/bench_viewer.py [--topics 300] [--restarts 3] [--repeats 20]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from common import RESULTS_DIR, latency_summary, markdown_table, update_markdown_section, write_result

from medcite.viewer.synthetic import write_synthetic_run

INDEX_BUDGET_S = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def viewer(runs: Path) -> Iterator[str]:
    """`medcite view RUNS --port P` in its own process; yields the base URL once it answers."""
    port = free_port()
    cmd = [sys.executable, "-c", "from medcite.cli.main import cli; cli()", "view", str(runs), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"medcite view exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                if httpx.get(base + "/static/viewer.css", timeout=2).status_code == 200:  # reads no run file
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("medcite view did not start within 60 s")
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def get(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    r = client.get(url)
    elapsed = time.perf_counter() - start
    if r.status_code != 200:
        raise RuntimeError(f"GET {url} -> {r.status_code}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=300)
    ap.add_argument("--retrieved", type=int, default=1000, help="retrieval.trec lines per topic")
    ap.add_argument("--restarts", type=int, default=3, help="fresh servers per cold measurement")
    ap.add_argument("--repeats", type=int, default=20, help="warm requests per page")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/BENCHMARKS.md")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the docs section from benchmarks/results/viewer.json without measuring")
    args = ap.parse_args()
    if args.report_only:
        update_markdown_section("viewer", report(json.loads((RESULTS_DIR / "viewer.json").read_text("utf-8"))))
        return

    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        runs = Path(tmp)
        t0 = time.perf_counter()
        write_synthetic_run(runs / "run-a", args.topics, seed=1, preset="clac25-a", n_retrieved=args.retrieved)
        write_synthetic_run(runs / "run-b", args.topics, seed=2, preset="offline", n_retrieved=args.retrieved)
        write_s = time.perf_counter() - t0
        sizes = {p.name: p.stat().st_size for p in sorted((runs / "run-a").iterdir())}
        mid = str(181 + args.topics // 2)
        pages = {
            "run list (/)": "/",
            "run index (/run/run-a)": "/run/run-a",
            "topic page": f"/run/run-a/topic/{mid}",
            "compare runs": "/compare?runs=run-a&runs=run-b",
            "compare topic": f"/compare?runs=run-a&runs=run-b&topic={mid}",
        }
        cold: dict[str, list[float]] = {name: [] for name in pages}
        warm: dict[str, list[float]] = {name: [] for name in pages}
        for _ in range(args.restarts):
            for name, url in pages.items():  # each cold number comes from a fresh process
                with viewer(runs) as base, httpx.Client(base_url=base, timeout=60) as client:
                    cold[name].append(get(client, url))
        with viewer(runs) as base, httpx.Client(base_url=base, timeout=60) as client:
            for url in pages.values():
                get(client, url)
            for name, url in pages.items():
                warm[name] = [get(client, url) for _ in range(args.repeats)]
            html_bytes = {name: len(client.get(url).content) for name, url in pages.items()}

    rows: list[dict[str, Any]] = []
    for name in pages:
        w = latency_summary(warm[name])
        rows.append({"page": name, "url": pages[name], "cold_ms": round(statistics.median(cold[name]) * 1000, 1),
                     "cold_all_ms": [round(x * 1000, 1) for x in cold[name]],
                     "warm_p50_ms": w["p50_ms"], "warm_p95_ms": w["p95_ms"], "html_kib": html_bytes[name] // 1024})
    index_cold = next(r["cold_ms"] for r in rows if r["url"] == "/run/run-a") / 1000
    data = {"topics": args.topics, "retrieved_per_topic": args.retrieved, "runs": 2,
            "write_runs_s": round(write_s, 2), "run_files_bytes": sizes, "restarts": args.restarts,
            "repeats": args.repeats, "pages": rows, "index_cold_s": index_cold, "index_budget_s": INDEX_BUDGET_S,
            "index_within_budget": index_cold < INDEX_BUDGET_S}
    path = write_result("viewer", data)
    print(f"wrote {path}")
    body = report(json.loads(path.read_text(encoding="utf-8")))
    print(body)
    if not args.no_docs:
        update_markdown_section("viewer", body)
    if not data["index_within_budget"]:
        sys.exit(f"index page took {index_cold:.2f} s, over the {INDEX_BUDGET_S} s budget")


def report(data: dict[str, Any]) -> str:
    """The docs/BENCHMARKS.md section for one results file."""
    rows = data["pages"]
    table = markdown_table(["page", "cold (ms, median)", "warm p50 (ms)", "warm p95 (ms)", "HTML (KiB)"],
                           [[r["page"], f"{r['cold_ms']:.0f}", f"{r['warm_p50_ms']:.0f}", f"{r['warm_p95_ms']:.0f}",
                             r["html_kib"]] for r in rows])
    mib = sum(data["run_files_bytes"].values()) / 1024 / 1024
    machine = data.get("machine", {})
    return f"""## Run viewer (`medcite view`)

`python benchmarks/bench_viewer.py` — two synthetic runs of {data['topics']} topics each, written with the
real `RunWriter` ({mib:.1f} MiB per run: {data['retrieved_per_topic']} retrieval hits, 20 rerank hits,
10 evidence items, 10 abstracts and 2 LLM calls per topic), served by `medcite view` in its own process
and fetched over loopback HTTP with httpx. *Cold* is the first request to a freshly started server
(median of {data['restarts']} restarts; files are parsed on first use, the OS file cache is warm);
*warm* repeats the request {data['repeats']} times (parsed files are cached by path, mtime and size).
Measured {data.get('measured_at', '')} on {machine.get('cpus', '?')} shared CPUs (load average
{machine.get('load_avg_1m_at_start', '?')} at the start), so the numbers are upper bounds.

{table}

The index page of a {data['topics']}-topic run opens cold in **{data['index_cold_s'] * 1000:.0f} ms**
(target: under {data['index_budget_s']:.0f} s). Results: `benchmarks/results/viewer.json`;
`python benchmarks/bench_viewer.py --report-only` rewrites this section from them."""


if __name__ == "__main__":
    main()
