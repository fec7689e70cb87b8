"""medcite's reader (``models:medcite-reader``) on the data its training held back, beside trivial baselines,
the frozen-feature heads it replaced, and its speed.

Quality: the split of :mod:`medcite.train.reader_data` (seed 13; the same split ``medcite train reader`` made:
BioASQ's :func:`medcite.train.qa_data.held_out_ids` questions, 299 of PubMedQA's 651 labelled items, 99 of
HealthVer's 299 claims), every measure of :func:`medcite.train.reader_eval.measure_all` on the reader loaded as
it ships (int8 on a CPU): stance macro-F1 (majority class), BioASQ yes/no macro-F1 with gold snippets (always
"yes"), PubMedQA accuracy answering yes/no and yes/no/maybe with the item's own contexts (the majority label),
factoid MRR and list F1 with gold snippets (chunked entities ranked by snippet frequency), snippet relevance
AUC / MRR (question-word overlap). ``--compare FOLDER`` measures other readers the same way (an ablation: a
shorter run, other options), ``--frozen`` adds the frozen-feature heads' figures as their training.json
recorded them (their splits differ; BioASQ's held-back questions are the same).

Speed: load time of the reader (tokenizer, base embeddings, int8 weights) and stance pairs per second at the
stance head's token limit, beside the same pairs through the packaged MiniLM as a plain fp32 encoder.

    python benchmarks/bench_reader.py [--model FOLDER] [--compare FOLDER ...]
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

NAME = "reader"
SHARED = common.REPO.parent / "shared" / "data"
BIOASQ = SHARED / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
PUBMEDQA = SHARED / "pubmedqa" / "pqal_dev.json"
HEALTHVER = SHARED / "healthver" / "healthver_dev.csv"
TARGETS = {"stance_macro_f1": 0.72, "bioasq_yesno_macro_f1": 0.80, "pubmedqa_accuracy": 0.65,
           "factoid_mrr": 0.35, "list_f1": 0.35, "load_seconds": 3.0}


def speed(folder: Path, pairs: list[tuple[str, str]]) -> dict[str, float]:
    import torch

    from medcite.reader.infer import load_reader
    from medcite.reader.model import base_dir

    t0 = time.perf_counter()
    reader = load_reader(folder)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_reader(folder)
    warm_load = time.perf_counter() - t0
    claims, passages = [c for c, _ in pairs], [p for _, p in pairs]
    t0 = time.perf_counter()
    reader.probabilities("stance", claims, passages)
    seconds = time.perf_counter() - t0
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base_dir("minilm"))
    plain = AutoModel.from_pretrained(base_dir("minilm")).eval()
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(pairs), 32):
            plain(**tok(claims[i:i + 32], passages[i:i + 32], truncation=True, max_length=reader.spec.length("stance"),
                        padding=True, return_tensors="pt"))
    base_seconds = time.perf_counter() - t0
    return {"load_seconds": round(load, 2), "second_load_seconds": round(warm_load, 2), "pairs": len(pairs),
            "pairs_per_second": round(len(pairs) / seconds, 1),
            "plain_minilm_fp32_pairs_per_second": round(len(pairs) / base_seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="models:medcite-reader")
    ap.add_argument("--compare", nargs="*", default=[], help="Other reader folders, measured the same way.")
    ap.add_argument("--frozen", nargs="*", default=[], help="Folders of the frozen-feature heads (training.json).")
    ap.add_argument("--note", action="append", default=[], help="A line of the docs section saying what a "
                    "compared reader is (kept in the results JSON).")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--render", action="store_true", help="Only rewrite the docs section from the saved JSON.")
    args = ap.parse_args()
    if args.render:
        saved = json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text(encoding="utf-8"))
        if args.note:
            saved["notes"] = args.note
            common.write_json(common.RESULTS_DIR / f"{NAME}.json", saved)
        common.update_markdown_section(NAME, markdown(saved))
        return
    import torch

    torch.set_num_threads(args.threads)
    from medcite.train.reader_data import DataOptions, build_data
    from medcite.train.reader_eval import measure_all
    from medcite.trained_models import resolve

    data = build_data(BIOASQ, PUBMEDQA, HEALTHVER, DataOptions())
    folders = {"shipped": Path(resolve(args.model)), **{Path(f).name: Path(f) for f in args.compare}}
    readers: dict[str, Any] = {}
    for name, folder in folders.items():
        t0 = time.perf_counter()
        readers[name] = {"folder": folder.name, "options": json.loads((folder / "training.json").read_text())
                         .get("options", {}), "held_back": measure_all(folder, data.test, data.train, "cpu"),
                         "seconds": round(time.perf_counter() - t0, 1)}
        print(name, json.dumps(readers[name]["held_back"], default=str)[:400], file=sys.stderr)
    frozen = {}
    for f in args.frozen:
        report = json.loads((Path(f) / "training.json").read_text())
        frozen[Path(f).name] = {"kind": report.get("kind"), "metrics": report.get("metrics")}
    ex = data.test.examples["stance"][:1000]
    result = {"splits": data.report, "targets": TARGETS, "threads": args.threads, "readers": readers,
              "frozen": frozen, "notes": args.note,
              "speed": speed(folders["shipped"], [(e.first, e.second) for e in ex])}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))
    print(markdown(result))


def _row(name: str, h: dict[str, Any]) -> list[Any]:
    s, y, sp, r = h["stance"], h["yesno"], h["span"], h["relevance"]
    p = y.get("pubmedqa") or {}
    return [name, f"{s['macro_f1']:.4f}", f"{y['bioasq']['macro_f1']:.4f}",
            f"{p.get('accuracy_yes_no', float('nan')):.4f}", f"{p.get('accuracy_three_way', float('nan')):.4f}",
            f"{sp['factoid_mrr']:.4f}", f"{sp['list_f1']:.4f}", f"{r['auc']:.4f}", f"{r['mrr']:.4f}"]


def markdown(r: dict[str, Any]) -> str:
    shipped = r["readers"]["shipped"]["held_back"]
    s, y, sp, rel = shipped["stance"], shipped["yesno"], shipped["span"], shipped["relevance"]
    p = y.get("pubmedqa") or {}
    e, w = sp["baseline_entity_frequency"], rel["baseline_word_overlap"]
    rows = [_row(f"reader ({name}: {v['options'].get('epochs', '?')} epochs, yes/no threshold "
                 f"{v['held_back']['yesno']['threshold']})", v["held_back"]) for name, v in r["readers"].items()]
    rows.append(["trivial baseline", f"{s['majority_baseline']['macro_f1']:.4f} (majority)",
                 f"{y['bioasq']['always_yes']['macro_f1']:.4f} (always yes)",
                 f"{p.get('majority_accuracy', float('nan')):.4f} (always {p.get('majority_class')})",
                 f"{p.get('majority_accuracy', float('nan')):.4f}",
                 f"{e['factoid_mrr']:.4f} (entities by frequency)", f"{e['list_f1']:.4f}",
                 f"{w['auc']:.4f} (word overlap)", f"{w['mrr']:.4f}"])
    t = r["targets"]
    rows.append(["target (issue 30)", t["stance_macro_f1"], t["bioasq_yesno_macro_f1"], t["pubmedqa_accuracy"], "–",
                 t["factoid_mrr"], t["list_f1"], "–", "–"])
    sides = r["splits"]
    sp_ = r["speed"]
    lines = [
        "## medcite's reader (`benchmarks/bench_reader.py`)",
        f"Held back by `medcite train reader` and never trained or tuned on: {s['claims']} HealthVer claims "
        f"({s['pairs']} pairs), {y['bioasq']['questions']} BioASQ yes/no, {sp['factoid_questions']} factoid and "
        f"{sp['list_questions']} list questions (gold snippets), {p.get('items', 0)} PubMedQA items (own contexts), "
        f"{rel['questions']} questions' snippet relevance ({rel['pairs']} pairs, BM25 hard negatives). Loaded as "
        f"shipped: {shipped['loaded_as']}. Splits: {json.dumps(sides.get('sides', {}).get('test', {}))}.",
        "",
        common.markdown_table(["system", "stance macro-F1", "BioASQ yes/no macro-F1", "PubMedQA acc. (yes/no)",
                               "PubMedQA acc. (3-way)", "factoid MRR", "list F1", "relevance AUC",
                               "relevance MRR"], rows),
        "",
        f"- Speed: loads in {sp_['load_seconds']} s once torch and transformers are imported "
        f"({sp_['second_load_seconds']} s again; target "
        f"{t['load_seconds']} s); {sp_['pairs_per_second']} stance pairs/s int8 on {r['threads']} threads, beside "
        f"{sp_['plain_minilm_fp32_pairs_per_second']} pairs/s through the plain fp32 MiniLM.",
        f"- Thresholds chosen on validation questions: yes/no {y['threshold']}, list spans {sp['threshold_list']}.",
        f"- Calibration (expected calibration error, 10 bins): stance {s['calibration']['ece']}, BioASQ yes/no "
        f"{y['bioasq']['calibration']['ece']}, relevance {rel['calibration']['ece']}.",
    ]
    lines += [f"- {n}" for n in r.get("notes", [])]
    for name, f in r.get("frozen", {}).items():
        lines.append(f"- Frozen-feature head `{name}` ({f['kind']}), as its training.json recorded: "
                     f"{json.dumps(f['metrics'].get('held_back', {}), default=str)[:300]}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
