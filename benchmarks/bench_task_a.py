"""TREC BioGen Task A quality without judgements: ground BioASQ ideal-answer sentences, count gold PMIDs.

The input is built from held-back BioASQ dev questions (the retrieval benchmark's split, never seen by a
trained model): each question's ideal answer, split into sentences, becomes one Task A item with no
existing citations. A supported PMID counts as right when it is one of that question's gold documents.
Measures: support precision (right / all supported PMIDs), the sentence hit rate (sentences with at least
one right PMID) and PMIDs per sentence, beside the starter kit's baseline measured in the same run (BM25 on
the sentence, its top 3 as supported). Corpus: the retrieval benchmark's documented sub-corpus of the
snippet-level BioASQ corpus (docs/BENCHMARKS.md, retrieval section). Also the time of `medcite ground` per
question-answer pair.

With ``--timing``: 40 BioGen-sized items — the answers medcite's Task B presets wrote for the BioGen 2025
topics (`bench_task_b.py` run directories, their citations as existing ones) — are grounded by the
`medcite ground` command of every Task A preset on the demo corpus, offline (LLM stages swapped for their
no-LLM counterparts as `offline_lines(..., "none", grounding=True)` prints), measuring wall time and
checking the submission with the validator (0 violations expected).

    python benchmarks/bench_task_a.py --questions 100
    python benchmarks/bench_task_a.py --timing --taskb-runs benchmarks/work/task_b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bioasq_corpus  # noqa: E402
import common  # noqa: E402
import retrieval_corpus  # noqa: E402

from medcite.config import load_settings  # noqa: E402
from medcite.corpus.ingest import ingest  # noqa: E402
from medcite.corpus.store import DocumentStore  # noqa: E402
from medcite.evidence.sentences import split_spans  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import Pipeline, RetrievalPipeline  # noqa: E402
from medcite.tasks.base import RunContext  # noqa: E402
from medcite.tasks.biogen_a_format import GroundingItem, GroundingSentence  # noqa: E402
from medcite.tasks.biogen_a_task import TaskA  # noqa: E402
from medcite.types import Topic  # noqa: E402

NAME = "task_a"
WORK = common.REPO / "benchmarks" / "work" / "task_a"
TASK_A_PRESETS = ["offline-grounding", "clac24-llm", "clac24-llm-nli", "dal25-expert", "dal25-emotional"]


def timing_input(runs: Path, out: Path, n: int = 40) -> Path:
    """Task A input (official JSON list) from the answers in Task B run directories: ``n`` items."""
    items: list[dict[str, Any]] = []
    for run in sorted(p for p in runs.iterdir() if (p / "submission.jsonl").exists()) if runs.is_dir() else []:
        questions = {str(t["id"]): t["question"] for t in map(json.loads, (run / "topics.jsonl").read_text(
            encoding="utf-8").splitlines()) if t}
        for line in (run / "submission.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            topic = str(row["metadata"]["topic_id"])
            answer = [{"text": r["text"], "existing_supported_citations": list(r.get("citations") or [])}
                      for r in row["responses"] if r["text"].strip()]
            if answer and len(items) < n:
                items.append({"metadata": {"qa_id": f"{run.name}-{topic}", "question": questions[topic]},
                              "answer": answer})
    if len(items) < n:
        raise SystemExit(f"only {len(items)} answers in {runs}; write Task B runs first: "
                         "python benchmarks/bench_task_b.py --stack none")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(items), encoding="utf-8")
    return out


def time_presets(input_path: Path, corpus: Path, presets: list[str]) -> list[dict[str, Any]]:
    """`medcite ground` of each preset, offline, on ``input_path``: wall time, validity, PMIDs found."""
    import shlex

    from medcite.presets.offline import offline_lines

    rows = []
    items = json.loads(input_path.read_text(encoding="utf-8"))
    sentences = sum(len(i["answer"]) for i in items)
    for preset in presets:
        swaps = [arg for line in offline_lines(load_settings(preset), "none", grounding=True)
                 for arg in shlex.split(line)]  # the options a user would type
        out = WORK / "timing" / preset
        if out.exists():
            import shutil

            shutil.rmtree(out)
        cmd = [sys.executable, "-m", "medcite", "ground", "--input", str(input_path), "--corpus", str(corpus),
               "--out", str(out), "--preset", preset, *swaps]
        measured = common.run_measured(cmd, env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        validation = json.loads((out / "validation.json").read_text()) if (out / "validation.json").exists() else {}
        submitted = [json.loads(x) for x in (out / "submission.jsonl").read_text().splitlines()] \
            if (out / "submission.jsonl").exists() else []
        supported = sum(len(s.get("supported_citations") or []) for r in submitted for s in r["answer"])
        contradicted = sum(len(s.get("contradicted_citations") or []) for r in submitted for s in r["answer"])
        rows.append({"preset": preset, "overrides": [o for o in swaps if o != "--set"], "items": len(items),
                     "sentences": sentences, "wall_s": round(measured.wall_s, 1), "cpu_s": round(measured.cpu_s, 1),
                     "peak_rss_mib": round(measured.peak_rss_mib), "returncode": measured.returncode,
                     "violations": len(validation.get("errors", [])) if validation else None,
                     "supported": supported, "contradicted": contradicted})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def items_from(questions: list[dict[str, Any]]) -> tuple[list[GroundingItem], dict[str, set[str]]]:
    """Task A items (ideal-answer sentences, nothing cited) and each item's gold PMIDs."""
    items, gold = [], {}
    for q in questions:
        text = q["ideal_answer"][0] if isinstance(q.get("ideal_answer"), list) else q.get("ideal_answer") or ""
        sentences = [" ".join(text[s:e].split()) for s, e in split_spans(text)]
        sentences = [s for s in sentences if len(s.split()) >= 4]
        if not sentences:
            continue
        items.append(GroundingItem(q["id"], q["body"], tuple(GroundingSentence(s) for s in sentences)))
        gold[q["id"]] = {bioasq_corpus.pmid_of(d) for d in q.get("documents", [])}
    return items, gold


def score(results: dict[str, list[list[str]]], gold: dict[str, set[str]]) -> dict[str, float]:
    """Support precision, sentence hit rate and PMIDs per sentence of qa_id -> per-sentence supported PMIDs."""
    cited = right = hit = sentences = 0
    for qa, per_sentence in results.items():
        for pmids in per_sentence:
            sentences += 1
            good = [p for p in pmids if p in gold[qa]]
            cited += len(pmids)
            right += len(good)
            hit += bool(good)
    return {"precision": right / cited if cited else 0.0, "hit_rate": hit / sentences if sentences else 0.0,
            "pmids_per_sentence": cited / sentences if sentences else 0.0, "sentences": sentences,
            "supported": cited, "right": right}


def build_store(data_dir: Path, demo_store: Path) -> Path:
    corpus_dir = common.REPO / "benchmarks" / "work" / "bioasq_corpus"
    if not (corpus_dir / "bioasq_snippet_docs.jsonl").exists():
        bioasq_corpus.build(data_dir, corpus_dir)
    docs = WORK / "subcorpus.jsonl"
    store = WORK / "store"
    if not store.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        retrieval_corpus.build_subset(corpus_dir, demo_store, retrieval_corpus.held_back(data_dir), docs)
        with DocumentStore.create(store) as s:
            ingest([docs], s, on_error="skip")
    return store


def top3(store: Path, items: list[GroundingItem], preset: str = "bm25",
         overrides: tuple[str, ...] = ()) -> dict[str, list[list[str]]]:
    """The top 3 of a preset's retrieval for each sentence, all taken as supported: with ``bm25`` this is the
    starter kit's Task A baseline; with the grounding preset, the ablation without the stance stage."""
    settings = load_settings(preset, list(overrides))
    pipe = RetrievalPipeline.from_settings(settings, store)
    try:
        return {it.qa_id: [[h.pmid for h in pipe.retrieve(Topic(f"{it.qa_id}-{i}", s.text)).final[:3]]
                           for i, s in enumerate(it.sentences)] for it in items}
    finally:
        pipe.close()


def grounded(store: Path, items: list[GroundingItem], preset: str, overrides: list[str],
             out: Path) -> tuple[dict[str, list[list[str]]], dict[str, list[list[str]]], float]:
    """(supported, contradicted) PMIDs per sentence of each item, and the seconds it took."""
    if out.exists():
        import shutil

        shutil.rmtree(out)
    start = time.perf_counter()
    with Pipeline(load_settings(preset, overrides), store, grounding=True) as pipe:
        task: TaskA = pipe.context.build("task", TaskA.Config(run_id=out.name))
        task.run(items, RunContext(pipe.context, out, pipe))
    seconds = time.perf_counter() - start
    results = task.results(out)
    return ({qa: [list(s.supported) for s in per] for qa, per in results.items()},
            {qa: [list(s.contradicted) for s in per] for qa, per in results.items()}, seconds)


def contradiction_proxy(contradicted: dict[str, list[list[str]]], gold: dict[str, set[str]]) -> dict[str, float]:
    """Contradicting PMIDs per sentence and the share of them that are the question's gold documents: a gold
    document of an ideal answer almost always supports it, so that share estimates wrong contradictions."""
    flat = [(qa, p) for qa, per in contradicted.items() for pmids in per for p in pmids]
    sentences = sum(len(per) for per in contradicted.values())
    return {"contradicted_per_sentence": len(flat) / sentences if sentences else 0.0,
            "contradicted_gold_share": sum(p in gold[qa] for qa, p in flat) / len(flat) if flat else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100, help="N held-back questions with ideal answers.")
    ap.add_argument("--skip", type=int, default=100, help="Held-back questions skipped first: offline-grounding's "
                    "selection policy was chosen on the first 100, so the default measures the next 100.")
    ap.add_argument("--demo-store", type=Path, default=common.REPO / "data" / "demo" / "store")
    ap.add_argument("--preset", default="offline-grounding")
    ap.add_argument("--system", action="append", default=[],
                    help="NAME=--set,... a grounding variant to measure (repeatable); default: the preset as is.")
    ap.add_argument("--retrieval-only", action="store_true", help="Only the two systems without a stance stage.")
    ap.add_argument("--timing", action="store_true", help="Time `medcite ground` of every Task A preset on 40 "
                    "BioGen-sized items (kept beside the quality results).")
    ap.add_argument("--taskb-runs", type=Path, default=common.REPO / "benchmarks" / "work" / "task_b",
                    help="Task B run directories whose answers become the timing input.")
    ap.add_argument("--presets", default=",".join(TASK_A_PRESETS), help="Presets to time.")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    results_path = common.REPO / "benchmarks" / "results" / f"{NAME}.json"
    if args.report_only:
        common.update_markdown_section(NAME, markdown(json.loads(results_path.read_text())))
        return
    if args.timing:
        input_path = timing_input(args.taskb_runs, WORK / "timing_input.json")
        rows = time_presets(input_path, args.demo_store, args.presets.split(","))
        previous = json.loads(results_path.read_text()) if results_path.exists() else {}
        kept = [r for r in previous.get("timing", {}).get("rows", []) if r["preset"] not in {x["preset"] for x in rows}]
        order = {p: i for i, p in enumerate(TASK_A_PRESETS)}
        rows = sorted(kept + rows, key=lambda r: order.get(r["preset"], len(order)))  # --presets: only those re-timed
        previous["timing"] = {"input": f"40 answers of {args.taskb_runs.name} runs", "rows": rows,
                              "machine": common.machine_info(), "commit": common.git_commit()}
        common.write_result(NAME, previous)
        common.update_markdown_section(NAME, markdown(previous))
        return
    data_dir = shared_data_dir()
    store = build_store(data_dir, args.demo_store)
    held = {q.id for q in retrieval_corpus.held_back(data_dir)}
    questions = [q for q in bioasq_corpus.load_dev_questions(data_dir) if q["id"] in held and q.get("ideal_answer")]
    items, gold = items_from(questions[args.skip: args.skip + args.questions])
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    base = top3(store, items)
    rows.append({"system": "kit baseline (BM25 top 3)", **score(base, gold),
                 "seconds_per_item": (time.perf_counter() - t) / len(items)})
    t = time.perf_counter()
    first = top3(store, items, args.preset)
    rows.append({"system": f"{args.preset} retrieval top 3, no stance", **score(first, gold),
                 "seconds_per_item": (time.perf_counter() - t) / len(items)})
    print(json.dumps(rows[:2]), flush=True)
    if args.retrieval_only:
        systems = []
    else:
        systems = [s.split("=", 1) for s in args.system] or [["preset", ""]]
    for name, sets in systems:
        overrides = [x for x in sets.split(",") if x]
        out = WORK / "runs" / name
        res, contra, seconds = grounded(store, items, args.preset, overrides, out)
        rows.append({"system": f"{args.preset} {name}", "overrides": overrides, **score(res, gold),
                     **contradiction_proxy(contra, gold), "seconds_per_item": seconds / len(items)})
        print(json.dumps(rows[-1]), flush=True)
    result = {"questions": len(items), "skipped": args.skip, "sentences": rows[0]["sentences"], "preset": args.preset,
              "systems": rows,
              "machine": common.machine_info(), "commit": common.git_commit()}
    if results_path.exists() and "timing" in json.loads(results_path.read_text()):
        result["timing"] = json.loads(results_path.read_text())["timing"]
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))


def markdown(result: dict[str, Any]) -> str:
    if "systems" not in result:
        return timing_markdown(result)
    base = result["systems"][0]
    rows = [[s["system"], f"{s['precision']:.4f}", f"{s['precision'] / base['precision']:.2f}×" if base["precision"]
             else "–", f"{s['hit_rate']:.4f}", f"{s['hit_rate'] / base['hit_rate']:.2f}×" if base["hit_rate"] else "–",
             f"{s['pmids_per_sentence']:.2f}",
             f"{s['contradicted_per_sentence']:.2f} ({s['contradicted_gold_share']:.2f})"
             if "contradicted_per_sentence" in s else "–", f"{s['seconds_per_item']:.2f}"] for s in result["systems"]]
    return "\n".join([
        "## TREC BioGen Task A grounding (`benchmarks/bench_task_a.py`)",
        "",
        f"{result['questions']} held-back BioASQ dev questions (after the first {result.get('skipped', 0)}, on which "
        f"offline-grounding's selection policy was chosen), their ideal answers split into {result['sentences']} "
        "sentences (no existing citations); a supported PMID is right when it is one of the question's gold "
        "documents. Corpus: the retrieval benchmark's sub-corpus. Ratios are to the starter kit's baseline in "
        "the same run (BM25 on the sentence, top 3 as supported). Contradicting PMIDs per sentence, with the "
        "share of them that are gold documents in brackets: a gold document of an ideal answer almost always "
        "supports it, so that share estimates wrong contradictions (there are no contradiction judgements here).",
        "",
        common.markdown_table(["system", "support precision", "ratio", "sentence hit rate", "ratio",
                               "PMIDs / sentence", "contradicting / sentence (gold share)", "s / item"], rows),
    ]) + ("\n\n" + timing_markdown(result) if "timing" in result else "")


def timing_markdown(result: dict[str, Any]) -> str:
    t = result["timing"]
    def status(r: dict[str, Any]) -> str:
        if r["returncode"] == 0:
            return "ok"
        if r["returncode"] in (-9, -15):
            return f"stopped by hand after {r['wall_s']:.0f} s (not finished)"
        return f"failed (exit {r['returncode']})"

    rows = [[r["preset"], " ".join(r["overrides"]) or "–", str(r["items"]), str(r["sentences"]), status(r),
             f"{r['wall_s']:.0f}", f"{r['cpu_s']:.0f}", str(r["violations"]) if r["returncode"] == 0 else "–",
             str(r["supported"]), str(r["contradicted"])] for r in t["rows"]]
    return "\n".join([
        "### `medcite ground` on 40 BioGen-sized items, offline",
        "",
        f"Input: {t['input']} (each answer's citations given as existing ones); demo corpus; every LLM stage "
        "swapped for its no-LLM counterpart. Wall time of the whole command (model loading included). The Dalhousie "
        "presets judge 20 candidates per sentence after a 100-candidate MiniLM stand-in for monoT5 (the paper's "
        "budgets); they were stopped after a few minutes on the loaded machine.",
        "",
        common.markdown_table(["preset", "offline swaps", "items", "sentences", "run", "wall s", "CPU s", "violations",
                               "supported", "contradicted"], rows),
    ])


if __name__ == "__main__":
    main()
