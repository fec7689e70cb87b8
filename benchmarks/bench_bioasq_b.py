"""BioASQ Task b, Phase B offline (qa backend ``extractive``): answer quality on held-back dev questions and
speed.

The held-back questions are :func:`medcite.train.qa_data.held_out_ids` of the dev file, the same split the
trainers (``medcite train reader`` / ``ideal``) keep out of training. Every system answers from the gold
snippets; measures are :func:`medcite.evaluate.bioasq.evaluate_phase_b` (ROUGE-2 F1 by rouge-score with its
stemmer, best over the gold ideal answers). Baselines from the same run: the first gold snippet as the ideal
answer, always "yes", and factoid / list entities in order of first occurrence; the frozen-feature answerer
medcite shipped before the reader (entities ranked by how many snippets name them) when ``--entities``.
Ablation: the ideal answer with followers by MMR (``keep_ratio`` 0.8) instead of the lead alone. PubMedQA:
accuracy of the reader on the items its training held back (:mod:`medcite.train.reader_data`'s split), beside
the majority class. Speed: wall time of the backend over the held-back
questions, scaled to 400.

    python benchmarks/bench_bioasq_b.py   # models:medcite-reader and models:medcite-ideal (both shipped)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import plot_results  # noqa: E402

NAME = "bioasq_b"
DEV = common.REPO.parent / "shared" / "data" / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
PUBMEDQA = common.REPO.parent / "shared" / "data" / "pubmedqa" / "pqal_dev.json"
TARGETS = {"ideal_ratio": 1.2, "yesno_macro_f1": 0.80, "seconds_per_400": 120.0}


def _measures(gold: list[Any], answers: list[Any]) -> dict[str, Any]:
    from medcite.evaluate.bioasq import evaluate_phase_b

    ev = evaluate_phase_b(gold, answers)
    return {k: {m: round(v, 4) for m, v in d.items()} for k, d in ev.measures.items()} | {"counts": ev.counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--pubmedqa", type=Path, default=PUBMEDQA)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--render", action="store_true", help="Only rewrite the docs section from the saved JSON.")
    args = ap.parse_args()
    if args.render:
        saved = json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text(encoding="utf-8"))
        common.update_markdown_section(NAME, markdown(saved))
        plot_results.main([NAME])
        return

    import torch

    torch.set_num_threads(args.threads)
    from medcite.qa import entities as ent
    from medcite.qa.extractive import ExtractiveQA, ExtractiveQAConfig
    from medcite.tasks.bioasq_format import read_questions
    from medcite.train.qa_data import held_out_ids
    from medcite.types import QAAnswer

    held = held_out_ids(args.data)
    gold = [q for q in read_questions(args.data) if q.id in held]
    t0 = time.perf_counter()
    qa = ExtractiveQA.from_config(ExtractiveQAConfig(), None)
    load_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    answers = [qa.answer(q, q.snippets) for q in gold]
    seconds = time.perf_counter() - t0
    systems: dict[str, list[QAAnswer]] = {"extractive": answers}

    def first_snippet(q: Any) -> QAAnswer:
        first = [e.text for e in ent.extract(q.body, q.snippets)]
        exact = "yes" if q.type == "yesno" else tuple(first[:5 if q.type == "factoid" else 10]) \
            if q.type in ("factoid", "list") else None
        return QAAnswer(q.id, exact, q.snippets[0].text if q.snippets else "")

    systems["baseline: first snippet, always yes, first-seen entities"] = [first_snippet(q) for q in gold]

    def by_frequency(q: Any, a: QAAnswer) -> QAAnswer:
        found = ent.extract(q.body, q.snippets)
        names = ent.ranked(found, ent.frequency_scores(found), 5 if q.type == "factoid" else 10)
        return QAAnswer(q.id, tuple(names) if q.type in ("factoid", "list") else a.exact, a.ideal)

    systems["baseline: entities by snippet frequency (the answerer before the reader)"] = [
        by_frequency(q, a) for q, a in zip(gold, answers, strict=True)]
    mmr = ExtractiveQA(qa.reader, qa.scorer, ExtractiveQAConfig(keep_ratio=0.8))
    systems["ablation: ideal lead + MMR followers (keep_ratio 0.8)"] = [
        QAAnswer(q.id, a.exact, mmr.ideal_answer(q, q.snippets)[0]) for q, a in zip(gold, answers, strict=True)]
    results = {name: _measures(gold, ans) for name, ans in systems.items()}

    pq: dict[str, Any] = {}
    if args.pubmedqa.is_file():
        from medcite.reader.verdict import yes_probability
        from medcite.train.reader_data import DataOptions, build_data

        labels = ("yes", "no", "maybe")
        split = build_data(None, args.pubmedqa, None, DataOptions())  # the reader's own held-back items
        held_pq, train = split.test.pubmedqa, split.train.pubmedqa
        # judged as a BioASQ question is: one (question, context) pair per context
        probs, p_yes = [], []
        for item in held_pq:
            per = qa.yesno_probabilities(item.question, list(item.contexts) or [""])
            probs.append(per.mean(0))
            p_yes.append(yes_probability(per))
        threshold = float(qa.reader.spec.thresholds.get("yesno", 0.5))
        majority = max(labels, key=lambda lab: sum(i.label == lab for i in train))
        pq = {"items": len(held_pq),
              "accuracy": round(float(np.mean([labels[int(np.argmax(p))] == i.label
                                               for p, i in zip(probs, held_pq, strict=True)])), 4),
              # BioASQ's decision (never "maybe"): the reader's P(yes) against its threshold
              "accuracy_yes_no_by_threshold": round(float(np.mean([
                  ("yes" if p >= threshold else "no") == i.label for p, i in zip(p_yes, held_pq, strict=True)])), 4),
              "majority_class": majority,
              "majority_accuracy": round(float(np.mean([i.label == majority for i in held_pq])), 4)}
    result = {"data": str(args.data), "held_back_questions": len(gold), "threads": args.threads,
              "load_average_at_end": round(os.getloadavg()[0], 2),
              "targets": TARGETS, "systems": results, "pubmedqa": pq,
              "speed": {"questions": len(gold), "seconds": round(seconds, 2),
                  "model_load_seconds": round(load_seconds, 2),
                        "seconds_per_400": round(seconds * 400 / max(1, len(gold)), 2)}}
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))
    plot_results.main([NAME])
    print(markdown(result))


def markdown(r: dict[str, Any]) -> str:
    rows = []
    for name, m in r["systems"].items():
        rows.append([name, f"{m['ideal']['rouge2_f1']:.4f}", f"{m['ideal']['rougesu4_f1']:.4f}",
                     f"{m['yesno']['macro_f1']:.4f}", f"{m['factoid']['MRR']:.4f}",
                     f"{m['factoid']['strict_accuracy']:.4f}", f"{m['factoid']['lenient_accuracy']:.4f}",
                     f"{m['list']['F1']:.4f}"])
    sys_m = r["systems"]["extractive"]
    base = next(v for k, v in r["systems"].items() if k.startswith("baseline"))
    ratio = sys_m["ideal"]["rouge2_f1"] / max(1e-9, base["ideal"]["rouge2_f1"])
    pq = r.get("pubmedqa") or {}
    lines = [
        "## BioASQ Task b, Phase B offline (`bench_bioasq_b.py`)",
        f"{r['held_back_questions']} held-back dev questions (`medcite.train.qa_data.held_out_ids`, never trained "
        f"on), gold snippets in, qa backend `extractive`. Counts: {sys_m['counts']}.",
        "",
        common.markdown_table(["system", "ideal ROUGE-2 F1", "ideal ROUGE-SU4 F1", "yes/no macro-F1", "factoid MRR",
                               "factoid strict", "factoid lenient", "list F1"], rows),
        "",
        f"- Ideal answer: {ratio:.2f}x the first-gold-snippet baseline (target {TARGETS['ideal_ratio']}x).",
        f"- Yes/no macro-F1 {sys_m['yesno']['macro_f1']:.4f} (target {TARGETS['yesno_macro_f1']}; always-yes "
        f"{base['yesno']['macro_f1']:.4f}).",
        "- Factoid / list: the reader's answer spans (synonyms merged, noisy-or over snippets), against the "
        "chunked entities in order of first occurrence and ranked by how many snippets name them.",
    ]
    if pq:
        lines.append(f"- PubMedQA held-back ({pq['items']} items, yes/no/maybe): accuracy {pq['accuracy']:.4f} "
                     f"(3-way argmax), {pq.get('accuracy_yes_no_by_threshold', float('nan')):.4f} (yes/no by the "
                     f"BioASQ threshold, never 'maybe'); majority class '{pq['majority_class']}' "
                     f"{pq['majority_accuracy']:.4f}.")
    s = r["speed"]
    lines.append(f"- Speed: {s['questions']} questions in {s['seconds']} s on {r['threads']} threads "
                 f"({s['seconds_per_400']} s per 400; target {TARGETS['seconds_per_400']:.0f} s), plus "
                 f"{s['model_load_seconds']} s loading the models; shared cores, load average "
                 f"{r.get('load_average_at_end', '?')}.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
