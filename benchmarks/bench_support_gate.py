"""The support gate on LLM answers (issue 16): how many generated citations does the cited abstract support,
with the gate off (the published runs), with the overlap gate (medcite's default) and with the stance gate?

For each preset, the local stack (the packaged SmolLM2-135M in-process) answers the first N BioGen 2025 topics
on the demo corpus three times, once per ``verify.gate``; the LLM cache makes the second and third runs reuse
the first one's generations, so the three differ only by the gate. Every (sentence, cited PMID) pair of each
run is then judged by the trained stance model against the abstract the run recorded (what ``medcite eval
biogen-b`` reports), beside the trivial baseline of the same run (each citation swapped for a random other
abstract of the topic's evidence, judged the same way; `bench_citations.judge_run`). Also counted: citations
that quote the cited abstract verbatim, and sentences and citations each gate removed.

The stance gate and the judge are the same model, so the stance-gated row's support rate is high by
construction; the overlap row is judged by a model it never consulted.

    python benchmarks/bench_support_gate.py --presets clac25-a clac24-simpleqa --limit 10
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from bench_citations import judge_run  # noqa: E402
from bench_task_b import run_one  # noqa: E402

from medcite.attribute.overlap import OverlapStance  # noqa: E402
from medcite.attribute.validation import support_summary  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import build_stage  # noqa: E402
from medcite.rundir import read_answers, read_articles  # noqa: E402
from medcite.tasks.topics import read_topics  # noqa: E402

NAME = "support_gate"
GATES = ("off", "overlap", "stance")


def gate_counts(run: Path) -> dict[str, int]:
    removed_sentences = removed_citations = 0
    for a in read_answers(run):
        for d in a.dropped:
            if "gate" in d.reason or "overlap" in d.reason or "does not support" in d.reason:
                removed_sentences += d.what == "sentence"
                removed_citations += d.what == "citation"
    return {"gate_removed_sentences": removed_sentences, "gate_removed_citations": removed_citations}


def healthver_gate(csv: Path, judge: Any, thresholds: tuple[float, ...] = (0.4, 0.5, 0.6, 0.7, 0.8),
                   seed: int = 13) -> dict[str, Any]:
    """The gates as classifiers of "supports" on HealthVer's held-back claims (the stance benchmark's seed-13
    split by claim, 25 %): of the pairs a gate keeps, how many does the gold label call supporting (precision),
    how many gold supports it keeps (recall), and how many refuting pairs it lets through."""
    from medcite.train.stance_data import read_stance_csv, split_by_claim
    from medcite.types import Stance

    _, held = split_by_claim(read_stance_csv(csv), 0.25, seed)
    gold = [p.label for p in held]  # 0 supports, 1 refutes, 2 neutral

    def scores(kept: list[bool]) -> dict[str, Any]:
        tp = sum(k and g == 0 for k, g in zip(kept, gold, strict=True))
        n_kept, n_sup = sum(kept), sum(g == 0 for g in gold)
        refutes = [k for k, g in zip(kept, gold, strict=True) if g == 1]
        return {"kept": n_kept, "precision": round(tp / n_kept, 4) if n_kept else 0.0,
                "recall": round(tp / n_sup, 4) if n_sup else 0.0,
                "refutes_kept": round(sum(refutes) / len(refutes), 4) if refutes else 0.0}

    pairs = [(p.claim, p.evidence) for p in held]
    rows = {f"overlap {t:.1f}": scores([v.label is Stance.SUPPORTS for v in OverlapStance(t).classify(pairs)])
            for t in thresholds}
    verdicts = judge.classify(pairs)
    rows["stance (P >= 0.5)"] = scores([v.label is Stance.SUPPORTS and v.score(Stance.SUPPORTS) >= 0.5
                                        for v in verdicts])
    rows["keep all (gate off)"] = scores([True] * len(pairs))
    return {"pairs": len(pairs), "claims": len({p.claim for p in held}), "supports": gold.count(0),
            "refutes": gold.count(1), "neutral": gold.count(2), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="*", default=["clac25-a", "clac24-simpleqa"])
    ap.add_argument("--limit", type=int, default=10, help="The first N topics.")
    ap.add_argument("--corpus", type=Path, default=common.REPO / "data" / "demo" / "store")
    ap.add_argument("--topics", type=Path, default=shared_data_dir() / "biogen" / "biogen2025_taskB_topics.json")
    ap.add_argument("--runs", type=Path, default=common.REPO / "benchmarks" / "work" / "support_gate")
    ap.add_argument("--stance", default="models:medcite-reader", help="Stance model: judge and gate.")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="Extra override for every run.")
    ap.add_argument("--healthver", type=Path, default=shared_data_dir() / "healthver" / "healthver_dev.csv")
    ap.add_argument("--healthver-only", action="store_true", help="Only the gate-as-classifier table.")
    args = ap.parse_args()
    topics = read_topics(args.topics)[: args.limit]
    judge = build_stage("stance", {"backend": "classifier", "model": args.stance})
    rows: dict[str, Any] = {}
    started = time.perf_counter()
    healthver = healthver_gate(args.healthver, judge)
    print(json.dumps({"healthver": healthver}), flush=True)
    previous = common.RESULTS_DIR / f"{NAME}.json"
    if args.healthver_only and previous.exists():
        old = json.loads(previous.read_text())
        result = {**old, "healthver": healthver}
        common.write_result(NAME, result)
        common.update_markdown_section(NAME, markdown(result))
        return
    for preset in args.presets:
        for gate in GATES:
            sets = [*args.sets, f"verify.gate={gate}",
                    f'stance={json.dumps({"backend": "classifier", "model": args.stance})}']
            out = args.runs / f"{preset}-{gate}"
            run = run_one(preset, "local", topics, args.corpus, out, sets)
            judged = judge_run(out, judge)
            overlap = support_summary(read_answers(out), read_articles(out), OverlapStance())
            rows[f"{preset}/{gate}"] = {
                "preset": preset, "gate": gate, "topics": run["topics"], "valid": run["valid"],
                "pmids_outside_evidence": run["pmids_outside_evidence"], "generators": run["generators"],
                "mean_words": run["mean_words"], "wall_s": run["wall_s"],
                "llm_calls": run.get("llm_calls", 0), "llm_cache_hits": run.get("llm_cache_hits", 0),
                "quoted": overlap.quoted, "overlap_pass_rate": round(overlap.rate, 4), **gate_counts(out),
                **judged,
            }
            print(json.dumps({f"{preset}/{gate}": rows[f"{preset}/{gate}"]}), flush=True)
    result = {"judge": args.stance, "limit": args.limit, "corpus": str(args.corpus), "runs": rows,
              "healthver": healthver,
              "wall_s": round(time.perf_counter() - started, 1), "machine": common.machine_info(),
              "commit": common.git_commit()}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for r in result["runs"].values():
        ratio = f"{r['support_rate'] / r['random_support_rate']:.2f}×" if r["random_support_rate"] else "–"
        rows.append([r["preset"], r["gate"], str(r["topics"]), "yes" if r["valid"] else "NO",
                     str(r["citations"]), str(r["quoted"]), str(r["gate_removed_citations"]),
                     str(r["gate_removed_sentences"]), f"{r['overlap_pass_rate']:.3f}", f"{r['support_rate']:.3f}",
                     f"{r['random_support_rate']:.3f}", ratio, f"{r['contradiction_rate']:.3f}"])
    return "\n".join([
        "## Support gate on LLM answers (`benchmarks/bench_support_gate.py`)",
        "",
        f"The first {result['limit']} BioGen 2025 topics, demo corpus, local stack (SmolLM2-135M in-process), each "
        "preset run with `verify.gate` off (the published runs), `overlap` (medcite's default: a lexical "
        "entailment proxy, threshold 0.6) and `stance` (the trained stance model, P(supports) ≥ 0.5); the LLM "
        "cache makes the three runs share the generations. Support rate: every remaining (sentence, PMID) judged "
        f"by `{result['judge']}` (macro-F1 0.675 on held-back HealthVer claims, so an estimate); baseline in the "
        "same run: each citation swapped for a random other abstract of the topic's evidence. The stance-gated "
        "row is judged by the model that gated it (high by construction); the overlap row by a model it never "
        "consulted. 'quoted': citations whose sentence is a verbatim quote of the cited abstract (not gated).",
        "",
        common.markdown_table(["preset", "gate", "topics", "valid", "citations", "quoted", "citations removed",
                               "sentences removed", "overlap pass", "support rate (judge)", "random-citation",
                               "ratio", "contradiction rate"], rows),
        "",
        f"Wall time {result['wall_s'] / 60:.0f} min on the shared 2-core machine (commit {result['commit']}).",
        *[f"\n{note}" for note in result.get("notes", [])],
        *healthver_markdown(result.get("healthver")),
    ])


def healthver_markdown(hv: dict[str, Any] | None) -> list[str]:
    if not hv:
        return []
    rows = [[name, str(r["kept"]), f"{r['precision']:.3f}", f"{r['recall']:.3f}", f"{r['refutes_kept']:.3f}"]
            for name, r in hv["rows"].items()]
    return [
        "",
        f"The gates as classifiers of 'supports' on HealthVer's held-back claims ({hv['claims']} claims, "
        f"{hv['pairs']} pairs: {hv['supports']} supports, {hv['refutes']} refutes, {hv['neutral']} neutral; the "
        "stance benchmark's seed-13 split by claim, never seen in training). A kept pair is a citation the gate "
        "lets through: precision = share of kept pairs whose gold label is 'supports'; 'refutes kept' = share of "
        "refuting pairs let through. The trivial baseline is keeping everything (gate off). HealthVer's claims "
        "paraphrase their evidence, so the lexical gate's recall here is a floor for copied wording.",
        "",
        common.markdown_table(["gate", "pairs kept", "precision", "recall of supports", "refutes kept"], rows),
    ]


if __name__ == "__main__":
    main()
