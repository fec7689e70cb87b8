"""medcite's readers (``models:medcite-reader``) on the data their training held back, beside trivial baselines,
the reader they replace, the frozen-feature stance head, and their speed.

Quality: the split of :mod:`medcite.train.reader_data` (seed 13; the same split ``medcite train reader`` made:
BioASQ's :func:`medcite.train.qa_data.held_out_ids` questions, 299 of PubMedQA's 651 labelled items, 99 of
HealthVer's 299 claims), every measure of :func:`medcite.train.reader_eval.measure_all` on the reader loaded as
it ships (int8 on a CPU): stance macro-F1 (majority class), BioASQ yes/no macro-F1 with gold snippets (always
"yes"), PubMedQA accuracy answering yes/no and yes/no/maybe with the item's own contexts (the majority label),
factoid MRR and list F1 with gold snippets (chunked entities ranked by snippet frequency), snippet relevance
AUC / MRR (question-word overlap). ``--compare FOLDER`` measures other readers the same way (an ablation: a
shorter run, other options), ``--frozen`` adds the frozen-feature heads' figures as their training.json
recorded them (their splits differ; BioASQ's held-back questions are the same); ``--old-stance FOLDER`` measures
that frozen stance head (``medcite-stance-healthver``, the "old head") on every stance set's held-back claims,
the same pairs the reader is measured on; ``--replaced`` names the training.json of the reader this one
replaces (its held-back figures, measured on the same split).

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
BIOASQ_12B = SHARED / "bioasq" / "bioasq_taskb_golden_12b.json.gz"
STANCE = SHARED / "stance"
#: issue 40's targets
TARGETS = {"stance_macro_f1": 0.65, "bioasq_yesno_macro_f1": 0.85, "bioasq_no_recall": 0.60,
           "pubmedqa_auc": 0.70, "factoid_mrr": 0.35, "list_f1": 0.35, "load_seconds": 3.0}


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
    ap.add_argument("--old-stance", default=None, help="The frozen stance head's folder (medcite-stance-healthver).")
    ap.add_argument("--replaced", default=None, help="training.json of the reader this one replaces.")
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

    data = build_data(BIOASQ, PUBMEDQA, HEALTHVER, DataOptions(), bioasq_extra=[BIOASQ_12B], stance_dir=STANCE)
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
    old_stance = old_head(Path(args.old_stance), data.test.examples["stance"]) if args.old_stance else {}
    replaced = json.loads(Path(args.replaced).read_text()).get("metrics") if args.replaced else None
    ex = data.test.examples["stance"][:1000]
    result = {"splits": data.report, "targets": TARGETS, "threads": args.threads, "readers": readers,
              "frozen": frozen, "notes": args.note, "old_stance_head": old_stance, "replaced": replaced,
              "speed": speed(folders["shipped"], [(e.first, e.second) for e in ex])}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))
    print(markdown(result))


def old_head(folder: Path, examples: list[Any]) -> dict[str, float]:
    """The frozen-feature stance head's macro-F1 on each stance set's held-back pairs (as the reader's)."""
    from medcite.attribute.classifier import load_classifier
    from medcite.train.reader_eval import stance_by_set, stance_report

    model = load_classifier(str(folder))
    out = {}
    for name, ex in stance_by_set(examples).items():
        probs = model.probabilities([e.first for e in ex], [e.second for e in ex], max_length=256, batch_size=32)
        out[name] = float(stance_report([int(e.label) for e in ex], probs.argmax(1).tolist(),
                                        name != "healthver")["macro_f1"])
    return out


def _row(name: str, h: dict[str, Any]) -> list[Any]:
    s, y, sp, r = h["stance"], h["yesno"], h["span"], h["relevance"]
    p, b = y.get("pubmedqa") or {}, y.get("bioasq") or {}
    return [name, f"{s['macro_f1']:.4f}", f"{b.get('macro_f1', float('nan')):.4f}",
            f"{b.get('no_recall', float('nan')):.4f}", f"{p.get('accuracy_yes_no', float('nan')):.4f}",
            f"{p.get('auc_yes_vs_no') or float('nan'):.4f}", f"{sp['factoid_mrr']:.4f}", f"{sp['list_f1']:.4f}",
            f"{r['auc']:.4f}"]


def markdown(r: dict[str, Any]) -> str:
    shipped = r["readers"]["shipped"]["held_back"]
    s, y, sp, rel = shipped["stance"], shipped["yesno"], shipped["span"], shipped["relevance"]
    p, b = y.get("pubmedqa") or {}, y.get("bioasq") or {}
    e, w = sp["baseline_entity_frequency"], rel["baseline_word_overlap"]
    rows = [_row(f"readers ({name})", v["held_back"]) for name, v in r["readers"].items()]
    old = r.get("replaced")
    if old:
        ob, op = old["yesno"]["bioasq"], old["yesno"].get("pubmedqa") or {}
        rows.append(["the reader it replaces (MiniLM, one trunk)", f"{old['stance']['macro_f1']:.4f}",
                     f"{ob['macro_f1']:.4f}", "–", f"{op.get('accuracy_yes_no', float('nan')):.4f}", "–",
                     f"{old['span']['factoid_mrr']:.4f}", f"{old['span']['list_f1']:.4f}",
                     f"{old['relevance']['auc']:.4f}"])
    rows.append(["trivial baseline", f"{s['majority_baseline']['macro_f1']:.4f} (majority)",
                 f"{b['always_yes']['macro_f1']:.4f} (always yes)", "0",
                 f"{p.get('always_yes_accuracy', float('nan')):.4f} (always yes)", "0.5",
                 f"{e['factoid_mrr']:.4f} (entities by frequency)", f"{e['list_f1']:.4f}",
                 f"{w['auc']:.4f} (word overlap)"])
    t = r["targets"]
    rows.append(["target (issue 40)", t["stance_macro_f1"], t["bioasq_yesno_macro_f1"], t["bioasq_no_recall"],
                 ">= always yes", t["pubmedqa_auc"], t["factoid_mrr"], t["list_f1"], "–"])
    sets = shipped.get("stance_sets") or {}
    old_head = r.get("old_stance_head") or {}
    set_rows = [["HealthVer", f"{s['macro_f1']:.4f}", old_head.get("healthver", "–"),
                 f"{s['majority_baseline']['macro_f1']:.4f}", s["claims"], s["pairs"]]]
    set_rows += [[name, f"{v['macro_f1']:.4f}", old_head.get(name, "–"), f"{v['majority_baseline']['macro_f1']:.4f}",
                  v["claims"], v["pairs"]] for name, v in sets.items()]
    sp_ = r["speed"]
    lines = [
        "## medcite's readers (`benchmarks/bench_reader.py`)",
        f"Held back by `medcite train reader` and never trained or tuned on: {s['claims']} HealthVer claims "
        f"({s['pairs']} pairs), {b.get('questions')} BioASQ yes/no, {sp['factoid_questions']} factoid and "
        f"{sp['list_questions']} list questions (gold snippets), {p.get('items', 0)} PubMedQA items (own contexts, "
        f"no conclusion), {rel['questions']} questions' snippet relevance ({rel['pairs']} pairs, BM25 hard "
        f"negatives). Loaded as shipped: {shipped['loaded_as']}.",
        "",
        common.markdown_table(["system", "stance macro-F1 (HealthVer)", "BioASQ yes/no macro-F1", "BioASQ no recall",
                               "PubMedQA acc. (yes/no)", "PubMedQA AUC of P(yes)", "factoid MRR", "list F1",
                               "relevance AUC"], rows),
        "",
        "Stance on each set's held-back claims (macro-F1 over the classes the set has; the old head is the frozen "
        "MiniLM-feature stance head, `medcite-stance-healthver`, trained on HealthVer only):",
        "",
        common.markdown_table(["set", "readers", "old head", "majority", "claims", "pairs"], set_rows),
        "",
        f"- Speed: loads in {sp_['load_seconds']} s once torch and transformers are imported "
        f"({sp_['second_load_seconds']} s again; target {t['load_seconds']} s); {sp_['pairs_per_second']} stance "
        f"pairs/s int8 on {r['threads']} threads, beside {sp_['plain_minilm_fp32_pairs_per_second']} pairs/s through "
        "the plain fp32 MiniLM.",
        f"- Thresholds chosen on validation questions: yes/no {y['threshold']}, list spans {sp['threshold_list']}.",
        f"- Calibration (expected calibration error, 10 bins): stance {s['calibration']['ece']}, BioASQ yes/no "
        f"{b['calibration']['ece']}, relevance {rel['calibration']['ece']}.",
    ]
    lines += [f"- {n}" for n in r.get("notes", [])]
    for name, f in r.get("frozen", {}).items():
        lines.append(f"- Frozen-feature head `{name}` ({f['kind']}), as its training.json recorded: "
                     f"{json.dumps(f['metrics'].get('held_back', {}), default=str)[:300]}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
