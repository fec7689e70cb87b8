"""Draw the benchmark comparisons from benchmarks/results/*.json as PNGs in docs/img and embed them in
docs/BENCHMARKS.md (each in its own ``<name>_plots`` section, so a benchmark's table section is untouched).

For each results file that exists:

- ``retrieval.json`` / ``retrieval_full.json`` (bench_retrieval.py): MAP@10 of each system ÷ BM25's on the same
  questions (a reranker ÷ BM25 on the reranked questions), and p50 latency per question against MAP@10;
- ``task_b.json`` + ``citations.json`` (bench_task_b.py, bench_citations.py): each preset's citation support
  rate ÷ the random-citation baseline of the same run, and mean seconds per topic against support rate;
- ``bioasq_a.json`` (bench_bioasq_a.py): MAP@10 and snippet F1 of each system ÷ BM25 with TF-IDF snippets,
  and seconds per question against snippet F1 (the gold-document oracle left out);
- ``bioasq_b.json`` (bench_bioasq_b.py): each measure of each system ÷ the trivial baseline's.

The numbers come from the JSON as it is: nothing is measured again. The benchmark scripts call
:func:`main` with their own name after writing their results.

    python benchmarks/plot_results.py                # every results file found
    python benchmarks/plot_results.py task_b bioasq_b
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, RESULTS_DIR, update_markdown_section  # noqa: E402
from plots import Point, Ratio, cost_quality, ratio_bars  # noqa: E402

IMG = REPO / "docs" / "img"
Figure = tuple[Path, str]  # (PNG, caption)


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def retrieval(result: Mapping[str, Any], img: Path, name: str) -> list[Figure]:
    systems = [s for s in result["systems"] if s.get("MAP@10") is not None]
    by = {s["name"]: s for s in systems}
    bm25 = by["BM25"]
    bars, points = [], []
    for s in systems:
        if s.get("stage") == "reference":
            continue
        base = bm25
        if s["questions"] != bm25["questions"]:
            base = by.get("BM25 (the reranked questions only)", bm25)
        bars.append(Ratio(s["name"], s["MAP@10"], base["MAP@10"]))
        p50 = (s.get("latency_s") or {}).get("p50_ms")
        if p50 is not None:
            points.append(Point(s["name"], p50 / 1000, s["MAP@10"], baseline=s is bm25))
    docs = result.get("corpus", {}).get("documents")
    where = f"{docs:,} documents" if docs else "the benchmark corpus"
    ratio_png = ratio_bars(bars, img / f"{name}_ratio.png", xlabel="MAP@10 ÷ BM25's (same questions)",
                           title=f"Retrieval on held-back BioASQ questions ({where}): MAP@10 relative to BM25")
    figures = [(ratio_png, f"MAP@10 of each system divided by BM25's on the same questions ({where}); a "
                "reranker is divided by BM25 on the questions it reranked. The number after the ratio is MAP@10.")]
    if points:
        cost_png = cost_quality(points, img / f"{name}_cost.png", xlabel="p50 latency per question, s (log)",
                                ylabel="MAP@10", title=f"Cost against quality ({where}); BM25 in grey")
        figures.append((cost_png, "Median latency per question (log scale, a shared 2-core machine: upper "
                        "bounds) against MAP@10; BM25, the baseline, is the grey square. Rerankers, where present, "
                        "score on the questions they reranked (see the table), so read their height against the "
                        "ratio plot above."))
    return figures


def task_b(result: Mapping[str, Any], citations: Mapping[str, Any] | None, img: Path) -> list[Figure]:
    if citations is None:
        return []
    runs = citations["runs"]
    bars = [Ratio(name, r["support_rate"], r["random_support_rate"]) for name, r in runs.items()]
    ratio_png = ratio_bars(bars, img / "task_b_ratio.png", xlabel="support rate ÷ random-citation support rate",
                           title="Task B presets: citation support relative to random citations (same run)")
    figures = [(ratio_png, "Each preset's citation support rate (stance model) divided by the support rate of the "
                "same citations swapped for random abstracts of the topic's evidence (the trivial baseline measured "
                "in the same run); the number after the ratio is the support rate.")]
    points = []
    for name, r in runs.items():
        preset, _, stack = name.rpartition("-")
        run = (result or {}).get("runs", {}).get(f"{preset}/{stack}")
        mean_ms = (((run or {}).get("latency") or {}).get("total") or {}).get("mean_ms")
        if mean_ms is not None:
            points.append(Point(name, mean_ms / 1000, r["support_rate"], baseline=preset == "offline"))
    if points:
        cost_png = cost_quality(points, img / "task_b_cost.png", xlabel="mean seconds per topic (log)",
                                ylabel="citation support rate",
                                title="Task B presets (stack none, demo corpus): cost against support; offline "
                                "in grey")
        figures.append((cost_png, "Mean seconds per topic (bench_task_b.py, a shared 2-core machine: upper bounds) "
                        "against the citation support rate (bench_citations.py); the offline preset is the grey "
                        "square. Presets whose LLM stages were swapped for their no-LLM stand-ins can share a point."))
    return figures


def bioasq_a(result: Mapping[str, Any], img: Path) -> list[Figure]:
    rows = [r for r in result["rows"] if "oracle" not in r["system"]]
    base = next(r for r in rows if r["system"] == "BM25" and r["scorer"] == "tfidf")
    seen: set[str] = set()
    bars = []
    for r in rows:
        if r["system"] not in seen:
            seen.add(r["system"])
            bars.append(Ratio(r["system"], r["map10"], base["map10"], "MAP@10"))
    bars += [Ratio(f"{r['system']}, {r['scorer']} snippets", r["snippet_f1"], base["snippet_f1"], "snippet F1")
             for r in rows]
    n = result.get("questions", "")
    ratio_png = ratio_bars(bars, img / "bioasq_a_ratio.png", xlabel="÷ BM25 with TF-IDF snippets",
                           title=f"BioASQ Phase A ({n} questions): documents and snippets relative to BM25")
    points = [Point(f"{r['system']}, {r['scorer']}", r["seconds_retrieval"] + r["seconds_snippets"], r["snippet_f1"],
                    baseline=r is base) for r in rows]
    cost_png = cost_quality(points, img / "bioasq_a_cost.png", xlabel="seconds per question (log)",
                            ylabel="snippet F1", title="BioASQ Phase A: cost against snippet F1; BM25 + TF-IDF "
                            "in grey")
    return [(ratio_png, "MAP@10 (documents) and snippet F1 of each system divided by BM25's with TF-IDF snippet "
             "scoring; the gold-document oracle is left out (it is in the table)."),
            (cost_png, "Seconds per question (retrieval + snippet selection, log scale, shared machine) against "
             "snippet F1; the baseline is the grey square.")]


B_MEASURES = (("yesno", "macro_f1", "yes/no macro F1"), ("factoid", "MRR", "factoid MRR"),
              ("list", "F1", "list F1"), ("ideal", "rouge2_f1", "ideal ROUGE-2 F1"))


def bioasq_b(result: Mapping[str, Any], img: Path) -> list[Figure]:
    systems = result["systems"]
    base_name = next(n for n in systems if n.startswith("baseline"))
    base = systems[base_name]
    bars = [Ratio(name, s[group][key], base[group][key], label)
            for name, s in systems.items() if name != base_name for group, key, label in B_MEASURES]
    n = result.get("held_back_questions", "")
    png = ratio_bars(bars, img / "bioasq_b_ratio.png", xlabel="÷ the trivial baseline",
                     title=f"BioASQ Phase B ({n} held-back questions): each measure relative to the baseline")
    return [(png, f"Each measure of each system divided by the baseline's ({base_name}). The run's speed is one "
             "figure for all systems (in the table), so there is no cost plot.")]


def _section(figures: Sequence[Figure]) -> str:
    parts = []
    for png, caption in figures:
        rel = png.relative_to(REPO / "docs") if png.is_relative_to(REPO / "docs") else png
        parts.append(f"![{png.stem}]({rel})\n\n*{caption}* (drawn by `benchmarks/plot_results.py` from "
                     f"`benchmarks/results/`)")
    return "\n\n".join(parts)


def make(name: str, results: Path = RESULTS_DIR, img: Path = IMG) -> list[Figure]:
    """The figures of one benchmark (``[]`` when its results file is missing)."""
    makers: dict[str, Callable[[dict[str, Any]], list[Figure]]] = {
        "retrieval": lambda r: retrieval(r, img, "retrieval"),
        "retrieval_full": lambda r: retrieval(r, img, "retrieval_full"),
        "task_b": lambda r: task_b(r, _load(results, "citations"), img),
        "bioasq_a": lambda r: bioasq_a(r, img),
        "bioasq_b": lambda r: bioasq_b(r, img),
    }
    if name == "citations":  # its figures are Task B's
        name = "task_b"
    if name not in makers:
        raise SystemExit(f"no plots for {name!r}: choose from {', '.join(makers)}")
    result = _load(results, name)
    return makers[name](result) if result is not None else []


NAMES = ("retrieval", "retrieval_full", "task_b", "bioasq_a", "bioasq_b")


def main(names: Sequence[str] | None = None, *, results: Path = RESULTS_DIR, img: Path = IMG,
         markdown: Path | None = None) -> list[Path]:
    """Draw the figures of ``names`` (default: all) and put each benchmark's in its ``<name>_plots`` section."""
    written = []
    for name in names or NAMES:
        figures = make(name, results, img)
        if figures:
            section = ("task_b" if name == "citations" else name) + "_plots"
            update_markdown_section(section, _section(figures), path=markdown)
            written += [png for png, _ in figures]
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"benchmarks to draw: {', '.join(NAMES)} (default: all)")
    args = ap.parse_args()
    for png in main(args.names):
        print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}: {png.stat().st_size // 1024} KiB")
