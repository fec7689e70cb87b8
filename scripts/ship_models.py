"""Rebuild the models medcite ships (src/medcite/shipped_models/) with `medcite models build`.

    .venv/bin/python scripts/ship_models.py                 # all shipped models (~25 min on 2 cores)
    .venv/bin/python scripts/ship_models.py medcite-ideal   # one
    .venv/bin/python scripts/ship_models.py --built medcite-reader   # ship the one `medcite models build`
                                                                     # already made in $MEDCITE_MODELS_DIR

Each model is built by the same code path a user's `medcite models build NAME` takes, into a temporary models
folder, from the shared evaluation data (../shared/data, or $MEDCITE_DATA_DIR); then its files replace the
shipped copy. Its training.json keeps the command (data paths relative to the repository) and the held-back
measures; docs/MODELS.md lists them. A model whose held-back figure is not above its trivial baseline in the
same run (:func:`below_baseline`), or is below the figure of the shipped model it replaces (:func:`below_replaced`,
per head: each figure both reports hold), is refused, never shipped (unless accepted by name with --accept, which
training.json and docs/MODELS.md then say). The figures of the model it replaced are kept in its training.json
(``replaces``). Run it whenever a shipped model's feature code changes (its FEATURE_VERSION is bumped):
tests/unit/test_shipped_models.py fails until then.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="shipped models to rebuild (default: all)")
    parser.add_argument("--accept", action="append", default=[], metavar="FIGURE=WHY",
                        help="ship although this held-back figure (as below_baseline names it, e.g. 'PubMedQA "
                             "accuracy') is not above its trivial baseline, for the reason given; recorded in "
                             "training.json (accepted_shortfalls) and shown in docs/MODELS.md")
    parser.add_argument("--built", action="store_true",
                        help="ship the models as `medcite models build NAME` already built them in the models folder "
                             "($MEDCITE_MODELS_DIR; a long build run in the background) instead of building them now")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="medcite-ship-") as tmp:
        if not args.built:
            os.environ["MEDCITE_MODELS_DIR"] = str(Path(tmp) / "models")
        from medcite.io import write_json
        from medcite.paths import shared_data_dir
        from medcite.trained_models import CATALOGUE, DATA, SHIPPED_DIR, folder
        from medcite.workflows.model_builds import BuildData, build_models, command_of

        names = args.names or [n for n, m in CATALOGUE.items() if m.shipped]
        bad = [n for n in names if n not in CATALOGUE or not CATALOGUE[n].shipped]
        if bad:
            parser.error(f"not shipped models: {', '.join(bad)}")
        shared = shared_data_dir()
        files = {kind: shared / rel for kind, (rel, _) in DATA.items() if (shared / rel).is_file()}
        for name in names:
            if not args.built:
                build_models([name], BuildData(files), echo=lambda m: print(m, file=sys.stderr), force=True)
            built = folder(name)
            if not (built / "training.json").is_file():
                raise SystemExit(f"{name} is not built in {built}: run `medcite models build {name}` first")
            target = SHIPPED_DIR / name
            staging = SHIPPED_DIR / f".{name}.new"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(built, staging)
            report_path = staging / "training.json"
            # data paths as the repository sees them: ../shared/data (where CI and the README put the data)
            text = report_path.read_text(encoding="utf-8").replace(str(shared.resolve()), "../shared/data")
            text = text.replace(str(built.parent.parent / "training"), "$MEDCITE_MODELS_DIR/../training")
            text = text.replace(str(Path(tmp) / "training"), "$MEDCITE_MODELS_DIR/../training")  # the snippet store
            report = json.loads(text.replace(str(shared), "../shared/data"))
            if not report.get("command"):  # the command `medcite models build` records, with the shared data
                report["command"] = command_of(name, BuildData({k: Path("../shared/data") / DATA[k][0]
                                                                for k in files}), None)
            accepted = dict(a.split("=", 1) for a in args.accept)
            kind = CATALOGUE[name].kind
            old_path = target / "training.json"
            old = json.loads(old_path.read_text(encoding="utf-8")) if old_path.is_file() else None
            if old is not None:  # the figures of the model this one replaces, as its own training.json holds them
                report["replaces"] = {"figures": figures(kind, old), "trained": old.get("finished_at"),
                                      "command": old.get("command")}
            found = below_baseline(kind, report) + below_replaced(kind, report)
            worse = [w for w in found if not any(w.startswith(f + " ") for f in accepted)]
            if worse:
                shutil.rmtree(staging, ignore_errors=True)
                raise SystemExit(f"refusing to ship {name}: held back, " + "; ".join(worse))
            report["accepted_shortfalls"] = [{"figure": w, "why": why} for w in found
                                             for f, why in accepted.items() if w.startswith(f + " ")]
            write_json(report_path, report)
            for path in staging.iterdir():
                path.chmod(0o644)  # the atomic writer's temporary files are private; package data is readable
            shutil.rmtree(target, ignore_errors=True)
            os.replace(staging, target)
            size = sum(p.stat().st_size for p in target.iterdir())
            print(f"shipped {name}: {size / 1e6:.2f} MB at {target}", file=sys.stderr)
    write_docs()
    return 0


def figures(kind: str, report: dict) -> dict[str, float]:
    """The held-back figures of a model's training.json, by name (higher is better), one or more per head."""
    m, out = report.get("metrics") or {}, {}
    if kind == "reader":
        if "stance" in m:
            out["stance macro-F1"] = m["stance"]["macro_f1"]
        for name, r in (m.get("stance_sets") or {}).items():
            out[f"stance macro-F1 on {name}"] = r["macro_f1"]
        yn = m.get("yesno") or {}
        if "bioasq" in yn:
            out["BioASQ yes/no macro-F1"] = yn["bioasq"]["macro_f1"]
        if "pubmedqa" in yn:
            out["PubMedQA accuracy"] = yn["pubmedqa"]["accuracy_yes_no"]
            if yn["pubmedqa"].get("auc_yes_vs_no") is not None:
                out["PubMedQA AUC"] = yn["pubmedqa"]["auc_yes_vs_no"]
        if "span" in m:
            out["factoid MRR"] = m["span"]["factoid_mrr"]
            out["list F1"] = m["span"]["list_f1"]
        if "relevance" in m:
            out["snippet relevance AUC"] = m["relevance"]["auc"]
    return out


def below_replaced(kind: str, report: dict) -> list[str]:
    """The figures of a new model's training.json below those of the shipped model it replaces (``replaces``,
    recorded by :func:`main`): per head, each figure both hold."""
    old = (report.get("replaces") or {}).get("figures") or {}
    new = figures(kind, report)
    return [f"{name} {new[name]:.4f} is below the {old[name]:.4f} of the model it replaces"
            for name in new if name in old and new[name] < old[name]]


def below_baseline(kind: str, report: dict) -> list[str]:
    """The held-back figures of a model's training.json that are not above their trivial baseline (measured in
    the same run): a model with any is not shipped."""
    m, worse = report["metrics"], []

    def check(what: str, value: float, baseline: float) -> None:
        if value <= baseline:
            worse.append(f"{what} {value:.4f} is not above its trivial baseline {baseline:.4f}")

    if kind == "reader":
        if "stance" in m:
            check("stance macro-F1", m["stance"]["macro_f1"], m["stance"]["majority_baseline"]["macro_f1"])
        for name, r in (m.get("stance_sets") or {}).items():
            check(f"stance macro-F1 on {name}", r["macro_f1"], r["majority_baseline"]["macro_f1"])
        if "yesno" in m:
            b = m["yesno"]["bioasq"]
            check("BioASQ yes/no macro-F1", b["macro_f1"], b["always_yes"]["macro_f1"])
            if "pubmedqa" in m["yesno"]:
                p = m["yesno"]["pubmedqa"]
                # every item answered yes or no ("maybe" items count as wrong), against always yes (the prior an
                # unsure reader falls back to); a reader whose answers equal always-yes is not below it
                base = p.get("always_yes_accuracy", p["majority_accuracy"])
                if p["accuracy_yes_no"] < base:
                    worse.append(f"PubMedQA accuracy {p['accuracy_yes_no']:.4f} is below always yes {base:.4f}")
        if "span" in m:  # the answer spans against naming the most frequent entity of the snippets
            sp, base = m["span"], m["span"]["baseline_entity_frequency"]
            check("factoid MRR", sp["factoid_mrr"], base["factoid_mrr"])
            check("list F1", sp["list_f1"], base["list_f1"])
    elif kind == "stance":
        check("macro-F1", m["held_back"]["macro_f1"], m["majority_baseline"]["macro_f1"])
    elif kind == "yesno":
        b = m["held_back"]["bioasq"]
        check("BioASQ macro-F1", b["macro_f1"], b["always_yes"]["macro_f1"])
        if "pubmedqa" in m["held_back"]:
            p = m["held_back"]["pubmedqa"]
            check("PubMedQA accuracy", p["accuracy"], p["majority_accuracy"])
    return worse


def measure(kind: str, report: dict) -> str:
    """The held-back measure of a shipped model's training.json, with its trivial baseline."""
    m = report["metrics"]
    if kind == "reader":
        s, b = m["stance"], m["yesno"]["bioasq"]
        p, sp, r = m["yesno"].get("pubmedqa"), m["span"], m["relevance"]
        text = (f"stance macro-F1 {s['macro_f1']:.4f} on {s['claims']} held-back HealthVer claims (majority "
                f"{s['majority_baseline']['macro_f1']:.4f})")
        for name, v in (m.get("stance_sets") or {}).items():
            text += f", {v['macro_f1']:.4f} on {name} ({v['majority_baseline']['macro_f1']:.4f})"
        text += (f"; BioASQ yes/no macro-F1 {b['macro_f1']:.4f}, no recall {b.get('no_recall', 0):.4f} on "
                 f"{b['questions']} questions, gold snippets (always yes {b['always_yes']['macro_f1']:.4f})")
        if p:
            text += (f"; PubMedQA accuracy {p['accuracy_yes_no']:.4f} answering yes/no (always yes "
                     f"{p.get('always_yes_accuracy', p['majority_accuracy']):.4f}), AUC of P(yes) "
                     f"{p.get('auc_yes_vs_no') or 0:.4f}, on {p['items']} held-back items")
        e = sp["baseline_entity_frequency"]
        text += (f"; factoid MRR {sp['factoid_mrr']:.4f}, list F1 {sp['list_f1']:.4f} (entity frequency "
                 f"{e['factoid_mrr']:.4f}, {e['list_f1']:.4f}); snippet relevance AUC {r['auc']:.4f} (word "
                 f"overlap {r['baseline_word_overlap']['auc']:.4f})")
        old = (report.get("replaces") or {}).get("figures")
        if old:
            text += "; the reader it replaced: " + ", ".join(f"{k} {v:.4f}" for k, v in old.items())
        return text
    if kind == "stance":
        return (f"macro-F1 {m['held_back']['macro_f1']:.4f} on {report['claims']['held_back']} held-back claims "
                f"(majority class {m['majority_baseline']['macro_f1']:.4f})")
    if kind == "yesno":
        b = m["held_back"]["bioasq"]
        text = (f"BioASQ macro-F1 {b['macro_f1']:.4f} on {b['questions']} held-back questions, gold snippets "
                f"(always yes {b['always_yes']['macro_f1']:.4f})")
        if "pubmedqa" in m["held_back"]:
            p = m["held_back"]["pubmedqa"]
            text += f"; PubMedQA accuracy {p['accuracy']:.4f} (majority {p['majority_accuracy']:.4f})"
        return text
    if kind == "ideal":
        h = m["held_back"]
        return (f"ROUGE-2 F1 of the top snippet {h['rouge2_f1_top_candidate']:.4f} on "
                f"{report['questions']['held_back']} held-back questions (first snippet "
                f"{h['rouge2_f1_first_candidate']:.4f}, best possible {h['oracle_best_candidate']:.4f})")
    if kind == "answer":
        h = m["held_back"]
        return (f"ROUGE-2 F1 of the top sentence {h['rouge2_f1_top_sentence']:.4f} on "
                f"{report['questions']['held_back']} held-back questions, {report['documents']} (first "
                f"sentence {h['rouge2_f1_first_sentence']:.4f}, most question-like by TF-IDF "
                f"{h['rouge2_f1_tfidf_top_sentence']:.4f}, best possible {h['oracle_best_sentence']:.4f})")
    return (f"MAP@10 {m['map@10_after']:.4f} on {report['questions']['dev_evaluated']} held-back questions in the "
            f"snippet store (its first stage {m['map@10_before']:.4f})")


def write_docs() -> None:
    """The shipped-models table of docs/MODELS.md, between its markers, from the shipped training.json files."""
    from medcite.trained_models import CATALOGUE, SHIPPED_DIR

    rows = ["| model | what | size | held-back measure (trivial baseline) | rebuilt by |", "|---|---|---|---|---|"]
    for name, spec in CATALOGUE.items():
        if not spec.shipped:
            continue
        folder = SHIPPED_DIR / name
        report = json.loads((folder / "training.json").read_text(encoding="utf-8"))
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        shortfalls = "".join(f"; **below its baseline, shipped knowingly**: {s['figure']} ({s['why']})"
                             for s in report.get("accepted_shortfalls", []))
        rows.append(f"| `{name}` | {spec.description} | {size:.2f} MB | {measure(spec.kind, report)}{shortfalls} | "
                    f"`{report['command']}` (~{spec.minutes} min) |")
    doc = Path(__file__).resolve().parents[1] / "docs" / "MODELS.md"
    text = doc.read_text(encoding="utf-8")
    start, end = "<!-- shipped-models:start -->", "<!-- shipped-models:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"{doc} has no {start} ... {end} section")
    head, rest = text.split(start, 1)
    doc.write_text(head + start + "\n" + "\n".join(rows) + "\n" + end + rest.split(end, 1)[1], encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
