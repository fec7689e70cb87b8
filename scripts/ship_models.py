"""Rebuild the models medcite ships (src/medcite/shipped_models/) with `medcite models build`.

    .venv/bin/python scripts/ship_models.py                 # all shipped models (~25 min on 2 cores)
    .venv/bin/python scripts/ship_models.py medcite-ideal   # one

Each model is built by the same code path a user's `medcite models build NAME` takes, into a temporary models
folder, from the shared evaluation data (../shared/data, or $MEDCITE_DATA_DIR); then its files replace the
shipped copy. Its training.json keeps the command (data paths relative to the repository) and the held-back
measures; docs/MODELS.md lists them. Run it whenever a shipped model's feature code changes (its
FEATURE_VERSION is bumped): tests/unit/test_shipped_models.py fails until then.
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
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="medcite-ship-") as tmp:
        os.environ["MEDCITE_MODELS_DIR"] = str(Path(tmp) / "models")
        from medcite.io import write_json
        from medcite.paths import shared_data_dir
        from medcite.trained_models import CATALOGUE, DATA, SHIPPED_DIR, folder
        from medcite.workflows.model_builds import BuildData, build_models

        names = args.names or [n for n, m in CATALOGUE.items() if m.shipped]
        bad = [n for n in names if n not in CATALOGUE or not CATALOGUE[n].shipped]
        if bad:
            parser.error(f"not shipped models: {', '.join(bad)}")
        shared = shared_data_dir()
        files = {kind: shared / rel for kind, (rel, _) in DATA.items() if (shared / rel).is_file()}
        for name in names:
            build_models([name], BuildData(files), echo=lambda m: print(m, file=sys.stderr), force=True)
            built = folder(name)
            report_path = built / "training.json"
            # data paths as the repository sees them: ../shared/data (where CI and the README put the data)
            text = report_path.read_text(encoding="utf-8").replace(str(shared.resolve()), "../shared/data")
            text = text.replace(str(Path(tmp) / "training"), "$MEDCITE_MODELS_DIR/../training")  # the snippet store
            write_json(report_path, json.loads(text.replace(str(shared), "../shared/data")))
            target = SHIPPED_DIR / name
            staging = SHIPPED_DIR / f".{name}.new"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(built, staging)
            for path in staging.iterdir():
                path.chmod(0o644)  # the atomic writer's temporary files are private; package data is readable
            shutil.rmtree(target, ignore_errors=True)
            os.replace(staging, target)
            size = sum(p.stat().st_size for p in target.iterdir())
            print(f"shipped {name}: {size / 1e6:.2f} MB at {target}", file=sys.stderr)
    write_docs()
    return 0


def measure(kind: str, report: dict) -> str:
    """The held-back measure of a shipped model's training.json, with its trivial baseline."""
    m = report["metrics"]
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
        rows.append(f"| `{name}` | {spec.description} | {size:.2f} MB | {measure(spec.kind, report)} | "
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
