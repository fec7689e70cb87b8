"""Stance classifier quality on HealthVer claims it never saw, its ablations, and its speed.

Quality: the shared HealthVer CSV is split by claim (a quarter of the distinct claims held back) under
several seeds; for each split and each system the recipe of `medcite train stance` (linear head on the
frozen packaged MiniLM, C chosen by cross-validation over the training claims) is fitted on the training
side and scored on the held-back claims: macro-F1, per-class F1, confusion matrix. Beside it, in the same
run: the majority-class baseline, feature ablations (pair / siamese / cues only), and extra supervision
(negation-rewritten claims, BioASQ yes/no snippets of questions outside every benchmark's held-back set,
PubMedQA). The features of every pair are computed once and cached under benchmarks/work/stance/.

Speed: 1,000 HealthVer pairs through the stance backend of a trained model (one passage per pair, and
the backend's full `classify`, which also judges the closest sentences of longer texts), beside one
forward pass of the same MiniLM as a plain cross-encoder over the same pairs (the baseline).

    python benchmarks/bench_stance.py --model ~/.cache/medcite/models/medcite-stance-healthver
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import retrieval_corpus  # noqa: E402

from medcite.attribute.probe import FeatureSpec, Featurizer  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.train.common import base_model_dir  # noqa: E402
from medcite.train.stance import StanceTrainOptions, fit_head, stance_metrics  # noqa: E402
from medcite.train.stance_data import (  # noqa: E402
    StancePair,
    bioasq_yesno,
    negated,
    pubmedqa,
    read_stance_csv,
    split_by_claim,
)

NAME = "stance"
WORK = common.REPO / "benchmarks" / "work" / "stance"
DEFAULT = FeatureSpec()
SPEC = FeatureSpec(layers=(0, 1, 2, 3, 4, 5, 6))  # every layer of MiniLM-L6 once; systems take their columns


def feature_blocks(hidden: int = 384) -> dict[str, slice]:
    """Column ranges of the all-layer layout: ``pairL`` per hidden-state layer L, ``siamese``, ``cues``."""
    per = 2 * hidden
    pair = per * len(SPEC.layers)
    siamese = 2 * hidden + 1
    blocks = {f"pair{layer}": slice(i * per, (i + 1) * per) for i, layer in enumerate(SPEC.layers)}
    return {**blocks, "siamese": slice(pair, pair + siamese), "cues": slice(pair + siamese, None)}


def cached_features(name: str, pairs: list[StancePair], featurize: Featurizer) -> np.ndarray:
    spec = "-".join([str(SPEC.max_length), "l" + ".".join(map(str, SPEC.layers)), *SPEC.parts])
    path = WORK / f"features-{name}-{len(pairs)}-{spec}.npz"
    if path.exists():
        data = np.load(path)
        if data["x"].shape[0] == len(pairs):
            return np.asarray(data["x"])
    start = time.perf_counter()
    x = featurize([p.claim for p in pairs], [p.evidence for p in pairs])
    print(f"features of {name}: {len(pairs)} pairs in {time.perf_counter() - start:.0f} s", flush=True)
    WORK.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=x)
    return x


def evaluate(systems: dict[str, dict[str, Any]], hv: list[StancePair], x_hv: np.ndarray,
             extras: dict[str, tuple[list[StancePair], np.ndarray]], seeds: list[int]) -> list[dict[str, Any]]:
    """Each system on each claim split: fit on the training side (plus its extras), score the held-back."""
    rows = []
    index = {id(p): i for i, p in enumerate(hv)}
    for seed in seeds:
        train, held = split_by_claim(hv, 0.25, seed)
        tr = [index[id(p)] for p in train]
        te = [index[id(p)] for p in held]
        gold = [p.label for p in held]
        top = int(np.bincount([p.label for p in train]).argmax())
        rows.append({"system": "majority class", "seed": seed, **stance_metrics(gold, [top] * len(gold))})
        for name, sysdef in systems.items():
            cols = sysdef["columns"]
            x_parts, y_parts, groups = [x_hv[tr][:, cols]], [np.array([hv[i].label for i in tr])], \
                [hv[i].claim for i in tr]
            for extra in sysdef.get("extras", ()):
                pairs, x = extras[extra]
                if extra == "negations":  # rows of the training claims only
                    x_parts.append(x[tr][:, cols])
                    y_parts.append(np.array([pairs[i].label for i in tr]))
                    groups += [hv[i].claim for i in tr]
                else:
                    x_parts.append(x[:, cols])
                    y_parts.append(np.array([p.label for p in pairs]))
                    groups += [p.claim for p in pairs]
            started = time.perf_counter()
            scaler, clf, c, _ = fit_head(np.vstack(x_parts), np.concatenate(y_parts), groups,
                                         StanceTrainOptions(folds=4, c=sysdef.get("c")))
            predicted = clf.predict(scaler.transform(x_hv[te][:, cols])).tolist()
            rows.append({"system": name, "seed": seed, "c": c, "fit_seconds": round(time.perf_counter() - started, 1),
                         **stance_metrics(gold, predicted)})
            print(json.dumps({k: rows[-1][k] for k in ("system", "seed", "macro_f1", "per_class_f1")}), flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == name]
        f1 = [r["macro_f1"] for r in mine]
        per = {k: round(float(np.mean([r["per_class_f1"][k] for r in mine])), 4) for k in mine[0]["per_class_f1"]}
        out.append({"system": name, "splits": len(mine), "macro_f1_mean": round(float(np.mean(f1)), 4),
                    "macro_f1_sd": round(float(np.std(f1)), 4), "macro_f1_min": min(f1), "per_class_f1_mean": per,
                    "confusion_matrix_summed": np.sum([r["confusion_matrix"]["rows_gold_columns_predicted"]
                                                       for r in mine], axis=0).tolist()})
    return out


def speed(model_dir: Path, hv: list[StancePair], n: int = 1000) -> dict[str, Any]:
    """Seconds for ``n`` pairs: the trained backend (one passage; full classify) and a plain cross-encoder pass."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from medcite.attribute.classifier import SequenceClassifierModel
    from medcite.pipeline import build_stage

    pairs = hv[:n]
    claims, texts = [p.claim for p in pairs], [p.evidence for p in pairs]
    clf = build_stage("stance", {"backend": "classifier", "model": str(model_dir)})
    clf.probabilities(claims[:8], texts[:8])  # warm-up
    t = time.perf_counter()
    clf.probabilities(claims, texts)
    one = time.perf_counter() - t
    t = time.perf_counter()
    verdicts = clf.classify(list(zip(claims, texts, strict=True)))
    full = time.perf_counter() - t
    base = base_model_dir("minilm")
    tok = AutoTokenizer.from_pretrained(base)
    plain = SequenceClassifierModel(tok, AutoModelForSequenceClassification.from_pretrained(base, num_labels=3).eval(),
                                    [0, 1, 2])
    t = time.perf_counter()
    plain.probabilities(claims, texts, max_length=SPEC.max_length, batch_size=32)
    cross = time.perf_counter() - t
    return {"pairs": n, "threads": torch.get_num_threads(), "trained_one_passage_s": round(one, 1),
            "trained_classify_s": round(full, 1), "cross_encoder_pass_s": round(cross, 1),
            "ratio_to_cross_encoder": round(one / cross, 2), "verdicts": len(verdicts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="13,1,2,3,4", help="Claim-split seeds.")
    ap.add_argument("--model", type=Path, default=None, help="A trained stance folder: its training.json is "
                    "reported and its speed measured.")
    ap.add_argument("--finetune-report", type=Path, default=None,
                    help="training.json of a fine-tuned (--epochs N) model, reported beside the head.")
    ap.add_argument("--c", type=float, default=1e-3, help="C of the fixed-C systems (ablations).")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--reuse-rows", action="store_true", help="Reuse the quality rows of the last run when its "
                    "systems and seeds are the same (benchmarks/work/stance/rows.json); measure the rest.")
    args = ap.parse_args()
    if args.report_only:
        common.update_markdown_section(NAME, markdown(json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text())))
        return
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    data_dir = shared_data_dir()
    hv = read_stance_csv(data_dir / "healthver" / "healthver_dev.csv")
    held_questions = {q.id for q in retrieval_corpus.held_back(data_dir)}
    base = base_model_dir("minilm")
    featurize = Featurizer(AutoTokenizer.from_pretrained(base), AutoModel.from_pretrained(base).eval(), SPEC)
    x_hv = cached_features("healthver", hv, featurize)
    neg = negated(hv)
    bio = bioasq_yesno(data_dir / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz", exclude=held_questions)
    pqa = pubmedqa(data_dir / "pubmedqa" / "pqal_dev.json")
    extras = {"negations": (neg, cached_features("negations", neg, featurize)),
              "bioasq": (bio, cached_features("bioasq", bio, featurize)),
              "pubmedqa": (pqa, cached_features("pubmedqa", pqa, featurize))}
    blocks = feature_blocks()
    every = np.arange(x_hv.shape[1])

    def cols(*names: str) -> np.ndarray:
        return np.concatenate([every[blocks[n]] for n in names])

    c = args.c
    pair = [f"pair{layer}" for layer in DEFAULT.layers]
    default = cols(*pair, "siamese", "cues")
    systems: dict[str, dict[str, Any]] = {
        f"trained head (pair layers {list(DEFAULT.layers)} + siamese + cues), C by CV": {"columns": default},
        f"trained head, C {c:g}": {"columns": default, "c": c},
        f"trained head, C {c * 10:g}": {"columns": default, "c": c * 10},
        f"pair last layers [6, 4] + siamese + cues, C {c:g}": {"columns": cols("pair6", "pair4", "siamese", "cues"),
                                                               "c": c},
        f"pair every layer + siamese + cues, C {c:g}": {"columns": every, "c": c},
        f"cues only, C {c:g}": {"columns": cols("cues"), "c": c},
        f"pair only, C {c:g}": {"columns": cols(*pair), "c": c},
        f"siamese + cues, C {c:g}": {"columns": cols("siamese", "cues"), "c": c},
        f"pair + cues, C {c:g}": {"columns": cols(*pair, "cues"), "c": c},
        f"+ negation pairs, C {c:g}": {"columns": default, "extras": ["negations"], "c": c},
        f"+ BioASQ yes/no, C {c:g}": {"columns": default, "extras": ["bioasq"], "c": c},
        f"+ PubMedQA, C {c:g}": {"columns": default, "extras": ["pubmedqa"], "c": c},
        f"+ BioASQ + PubMedQA, C {c:g}": {"columns": default, "extras": ["bioasq", "pubmedqa"], "c": c},
    }
    seeds = [int(s) for s in args.seeds.split(",")]
    rows_cache = WORK / "rows.json"  # the quality rows, so a failed speed step does not cost the splits again
    cached = json.loads(rows_cache.read_text()) if args.reuse_rows and rows_cache.exists() else None
    if cached is not None and cached.get("systems") == list(systems) and cached.get("seeds") == seeds:
        rows = cached["rows"]
    else:
        rows = evaluate(systems, hv, x_hv, extras, seeds)
        rows_cache.write_text(json.dumps({"systems": list(systems), "seeds": seeds, "rows": rows}))
    result: dict[str, Any] = {
        "data": "healthver_dev.csv", "pairs": len(hv), "claims": len({p.claim for p in hv}), "seeds": seeds,
        "held_back_fraction": 0.25, "extra_pairs": {k: len(v[0]) for k, v in extras.items()},
        "summary": summary(rows), "splits": rows, "machine": common.machine_info(), "commit": common.git_commit()}
    if args.model:
        report = json.loads((args.model / "training.json").read_text())
        result["model"] = {"path": str(args.model), "held_back": report["metrics"]["held_back"],
                           "majority_baseline": report["metrics"]["majority_baseline"], "c": report.get("c"),
                           "seed": report["options"]["seed"]}
        result["speed"] = speed(args.model, hv)
        print(json.dumps(result["speed"]), flush=True)
    if args.finetune_report:
        report = json.loads(args.finetune_report.read_text())
        result["finetune"] = {"recipe": report.get("recipe"), "seconds": report.get("seconds"),
                              "held_back": report["metrics"]["held_back"], "seed": report["options"]["seed"],
                              "options": report["options"]}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))


def markdown(result: dict[str, Any]) -> str:
    rows = []
    base = next(s for s in result["summary"] if s["system"] == "majority class")
    for s in result["summary"]:
        per = s["per_class_f1_mean"]
        rows.append([s["system"], f"{s['macro_f1_mean']:.4f} ± {s['macro_f1_sd']:.4f}", f"{s['macro_f1_min']:.4f}",
                     f"{per['supports']:.3f}", f"{per['contradicts']:.3f}", f"{per['neutral']:.3f}",
                     f"{s['macro_f1_mean'] / base['macro_f1_mean']:.2f}×"])
    lines = [
        "## Stance classifier (`benchmarks/bench_stance.py`)",
        "",
        f"HealthVer (shared dev CSV, {result['pairs']} pairs, {result['claims']} claims), split by claim: "
        f"{int(result['held_back_fraction'] * 100)} % of the claims held back, seeds {result['seeds']}. Each system "
        "is fitted on the training claims (C by 4-fold cross-validation over training claims) and scored on the "
        "held-back claims; mean ± sd over the splits, the worst split, per-class F1 (mean), and the ratio to the "
        f"majority-class baseline of the same splits. Extra pairs: {result['extra_pairs']}.",
        "",
        common.markdown_table(["system", "macro-F1", "worst split", "supports F1", "contradicts F1", "neutral F1",
                               "× majority"], rows),
    ]
    main = next(s for s in result["summary"] if s["system"].startswith("trained head"))  # C by CV
    lines += ["", "Confusion matrix of the trained head, summed over the splits (rows gold, columns predicted; "
              "supports, contradicts, neutral): " + json.dumps(main["confusion_matrix_summed"]) + "."]
    if "model" in result:
        m = result["model"]["held_back"]
        lines += ["", f"The shipped model (`medcite train stance`, seed {result['model']['seed']}, C "
                  f"{result['model']['c']}): held-back macro-F1 **{m['macro_f1']:.4f}** (majority baseline "
                  f"{result['model']['majority_baseline']['macro_f1']:.4f}), per class {m['per_class_f1']}, confusion "
                  f"matrix {m['confusion_matrix']['rows_gold_columns_predicted']}."]
    if "finetune" in result:
        f = result["finetune"]
        lines += ["", f"Fine-tuning the whole MiniLM instead ({f['recipe']}, lr {f['options']['lr']}, "
                  f"seed {f['seed']}, {f['seconds']:.0f} s): held-back macro-F1 "
                  f"{f['held_back']['macro_f1']:.4f}, per class {f['held_back']['per_class_f1']}."]
    if "speed" in result:
        sp = result["speed"]
        lines += ["", f"Speed ({sp['pairs']} HealthVer pairs, {sp['threads']} threads): the trained model "
                  f"{sp['trained_one_passage_s']} s with one passage per pair, {sp['trained_classify_s']} s for the "
                  f"backend's full classify (whole text and closest sentences); one plain MiniLM cross-encoder pass "
                  f"over the same pairs {sp['cross_encoder_pass_s']} s (ratio {sp['ratio_to_cross_encoder']}×)."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
