"""Every LLM stage against a capable model: the oracle server (tests/oracle) plays one from held-out gold data.

What a user with a vLLM server and a strong model would get, measured here without one (issue 23). The oracle
answers each prompt medcite sends right (the question's human ideal answer, each sentence citing the evidence
item it shares most words with; gold-first rerank orders; HealthVer labels; gold exact answers), written in
five styles real models use (plain, markdown, fenced, ``<think>`` first, chatter after), and can plant one
fault class at a set rate. Non-LLM models get the offline swaps (``offline_settings(..., "local")``). The
questions are BioASQ's held-back questions (``medcite.train.qa_data.held_out_ids``) whose ideal answer has 2-5
sentences; the corpus is the articles of their gold snippets.

Parts (``--part``):

- ``task_b``: every Task B LLM preset as its paper post-processes, and with medcite's safety nets set
  (:data:`SAFETY`: overlap gate, 3 constraint retries, the extractive fallback for any invalid answer):
  sentences the oracle wrote (first attempt) and how many reached the final answers, answers replaced by the
  extractive fallback, and requests no prompt file explains (must be 0).
- ``faults``: each fault class planted in every first answer (content faults) or 30 % of requests (reply
  faults), on the runs of :data:`FAULT_RUNS`: planted sentences that reach a final answer, cited PMIDs outside
  the evidence, sentences over 3 PMIDs, uncited sentences, PMIDs in the prose, answers over 250 words, topics
  left unanswered.
- ``bioasq``: Phase B of :data:`BIOASQ_PRESETS` from the gold snippets: yes/no macro-F1, factoid strict
  accuracy, list F1 and ROUGE-2 against what the gold exact answers themselves score.
- ``rerank``: the listwise LLM reranker over each question's BM25 top 30: MAP@10 against the oracle ordering of
  the same pool (gold passages first).
- ``task_a``: the Task A presets of :data:`TASK_A` grounding the questions' ideal-answer sentences (``medcite
  ground``): the share of supported citations that are gold evidence of the sentence's question (the oracle's
  stance judge supports only those: ceiling 1.0), beside BM25's top 3 cited blindly, and contradicted citations.

    python benchmarks/bench_llm_oracle.py [--part task_b faults bioasq rerank task_a] [--questions 30]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import common  # noqa: E402

from oracle.faults import CONTENT, REPLY  # noqa: E402
from oracle.gold import held_out_questions  # noqa: E402
from oracle.harness import (  # noqa: E402
    gold_answers,
    listwise_map,
    questions,
    run_grounding,
    run_phase_b,
    run_preset,
    snippet_store,
)

NAME = "llm_oracle"
WORK = common.REPO / "benchmarks" / "work" / "llm_oracle"
TASK_B = ["clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e", "dal25-rrf", "dal25-rmmln", "dal25-rmmdn",
          "dal25-rfr_monot5-msmarco_llama70b", "dal25-rfr_monot5-msmarco_deepseek-r1", "clac24-simpleqa",
          "clac24-simpleqa-hybrid", "clac24-medhopqa-bm25", "clac24-medhopqa-hybrid"]
#: medcite's safety nets, --set on a paper run (the paper presets post-process as their papers did)
SAFETY = ("verify.gate=overlap", "generate.max_attempts=3", "generate.fallback_when=invalid")
#: (row name, preset, --set values): faults against a paper run with medcite's safety nets, against Dalhousie's
#: own citation validation (Mistral judges every citation, up to 20 revisions), and against CLaC's paper run
FAULT_RUNS = [("clac25-a + safety nets", "clac25-a", SAFETY),
              ("dal25-rfr_monot5-msmarco_llama70b", "dal25-rfr_monot5-msmarco_llama70b", ()),
              ("clac25-a as the paper", "clac25-a", ())]
BIOASQ_PRESETS = ["dsgt-b3", "pjs-config-4", "pjs-config-5", "pjs-qwen-lora"]
#: Task A presets (the trained offline classifier first: no LLM, the comparison)
TASK_A = ["offline-grounding", "dal25-expert", "dal25-emotional", "clac24-llm", "clac24-llm-nli"]
log = logging.getLogger("bench_llm_oracle")


def part_task_b(qs: list[Any], store: Path, results: dict[str, Any]) -> None:
    from medcite.config import load_settings

    for preset in TASK_B:
        variants = [("", ())]
        if load_settings(preset).generate.backend == "llm":
            variants.append((" + safety nets", SAFETY))
        for tag, sets in variants:
            row = run_preset(preset, qs, store, WORK / "runs" / f"{preset}{'-safety' if sets else ''}", sets=sets)
            log.info("%s%s: %d of %d sentences kept, %d fallbacks", preset, tag, row["kept"], row["written"],
                     row["fallbacks"])
            results.setdefault("task_b", {})[f"{preset}{tag}"] = row
            save(results)


def part_faults(qs: list[Any], store: Path, results: dict[str, Any]) -> None:
    for name, preset, sets in FAULT_RUNS:
        faults = (*CONTENT, *REPLY) if "as the paper" not in name else ("unsupported", "contradicted", "outside")
        for fault in faults:
            rate = 1.0 if fault in CONTENT else 0.3
            row = run_preset(preset, qs, store, WORK / "runs" / f"{preset}-{len(sets)}-{fault}", fault=fault,
                             rate=rate, sets=sets)
            log.info("%s %s: %d planted, %d in answers", name, fault, row["planted"], row["planted_in_answers"])
            results.setdefault("faults", {})[f"{name} / {fault}"] = row
            save(results)


def part_bioasq(n: int, results: dict[str, Any]) -> None:
    from medcite.evaluate.bioasq import evaluate_phase_b

    qs = [q for q in held_out_questions() if q.snippets][:n]
    ceiling = _phase_b_measures(evaluate_phase_b(qs, gold_answers(qs)))
    results.setdefault("bioasq", {})["gold"] = ceiling
    for preset in BIOASQ_PRESETS:
        answers, server, seconds = run_phase_b(preset, qs, WORK / "runs" / f"bioasq-{preset}")
        measures = _phase_b_measures(evaluate_phase_b(qs, answers))
        measures["seconds"] = round(seconds, 1)
        measures["unrecognised"] = server.counts().get("UNRECOGNISED", 0)
        measures["calls"] = dict(server.counts())
        results["bioasq"][preset] = measures
        log.info("%s: %s (gold %s)", preset, measures, ceiling)
        save(results)


def _phase_b_measures(ev: Any) -> dict[str, Any]:
    m = ev.measures
    return {"yesno_macro_f1": round(m.get("yesno", {}).get("macro_f1", 0.0), 4),
            "factoid_strict": round(m.get("factoid", {}).get("strict_accuracy", 0.0), 4),
            "list_f1": round(m.get("list", {}).get("F1", 0.0), 4),
            "rouge2_f1": round(m.get("ideal", {}).get("rouge2_f1", 0.0), 4), "counts": ev.counts}


def part_rerank(qs: list[Any], store: Path, results: dict[str, Any]) -> None:
    """The listwise reranker (RankGPT window 20, step 10) over each question's BM25 top 30."""
    results["rerank"] = listwise_map(qs, store)
    log.info("rerank: %s", results["rerank"])
    save(results)


def part_task_a(qs: list[Any], store: Path, results: dict[str, Any]) -> None:
    """Each Task A preset grounding the questions' ideal-answer sentences."""
    for preset in TASK_A:
        row = run_grounding(preset, qs, store, WORK / "ground" / preset)
        log.info("%s: precision %s (BM25 top 3 %s), %d supported citations", preset, row["precision"],
                 row["bm25_top3_precision"], row["supported_citations"])
        results.setdefault("task_a", {})[preset] = row
        save(results)


def save(results: dict[str, Any]) -> None:
    common.write_result(NAME, results)
    common.update_markdown_section(NAME, markdown(results))


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def markdown(r: dict[str, Any]) -> str:
    lines = ["## LLM stages against a capable model (the oracle server)", "",
             "`benchmarks/bench_llm_oracle.py`: an OpenAI-compatible server plays a strong model from held-out gold "
             "data (tests/oracle): each prompt answered right, in five writing styles (plain, markdown, fenced, "
             "`<think>` first, chatter after). Held-back BioASQ questions whose ideal answer has 2-5 sentences; "
             "offline swaps for the non-LLM models. Trivial baseline beside each figure: what the gold itself "
             "scores (BioASQ), BM25's own order (rerank), the oracle's own sentences (Task B).", ""]
    if r.get("task_b"):
        lines += ["### Task B presets: faithful answers kept", "",
                  "Each preset as its paper post-processes, and with medcite's safety nets (--set "
                  + " ".join(SAFETY) + ").", "",
                  "| preset | topics | sentences written | kept | kept share | extractive fallbacks | unrecognised "
                  "prompts | s |", "|---|---|---|---|---|---|---|---|"]
        for name, row in r["task_b"].items():
            lines.append(f"| {name} | {row['topics']} | {row['written']} | {row['kept']} | "
                         f"{pct(row['kept'], row['written'])} | {row['fallbacks']} | {row['unrecognised']} | "
                         f"{row['seconds']} |")
        lines.append("")
    if r.get("faults"):
        lines += ["### Planted faults", "",
                  "Content faults in every first answer (a retry gets the faithful answer), reply faults in 30 % of "
                  "requests. `in answers`: planted sentences that reached a final answer. `+ safety nets`: "
                  "--set " + " ".join(SAFETY) + ".", "",
                  "| preset / fault | planted | planted sentences | in answers | PMIDs outside evidence | "
                  "sentences > 3 PMIDs | uncited sentences | PMIDs in prose | answers > 250 words | "
                  "topics answered | fallbacks |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, row in r["faults"].items():
            lines.append(f"| {name} | {row['planted']} | {row['planted_sentences']} | {row['planted_in_answers']} | "
                         f"{row['pmids_outside_evidence']} | {row['sentences_over_3_pmids']} | "
                         f"{row.get('uncited_sentences', '-')} | {row.get('pmids_in_prose', '-')} | "
                         f"{row['answers_over_250_words']} | {row['answered']}/{row['topics']} | {row['fallbacks']} |")
        lines.append("")
    if r.get("bioasq"):
        b = r["bioasq"]
        g = b.get("gold", {})
        lines += ["### BioASQ Phase B from the gold snippets", "",
                  "The oracle writes the gold exact and ideal answers (so ROUGE-2 1.0 says the ideal answer survives "
                  "reading and normalisation intact, not how good it is); each prompt style appears.", "",
                  "| system | yes/no macro-F1 | factoid strict acc. | list F1 | ROUGE-2 F1 | unrecognised |",
                  "|---|---|---|---|---|---|"]
        for name, row in b.items():
            lines.append(f"| {name} | {row['yesno_macro_f1']} | {row['factoid_strict']} | {row['list_f1']} | "
                         f"{row['rouge2_f1']} | {row.get('unrecognised', '-')} |")
        for name, row in b.items():
            if name != "gold":
                ratios = [f"{m} {row[m] / g[m]:.3f}" for m in ("yesno_macro_f1", "factoid_strict", "list_f1")
                          if g.get(m)]
                lines.append(f"\n{name} / gold: {', '.join(ratios)}.")
        lines.append("")
    if r.get("rerank"):
        x = r["rerank"]
        lines += ["### Listwise rerank (RankGPT window 20, step 10) over the BM25 top 30", "",
                  "| questions | MAP@10 listwise | MAP@10 oracle order of the pool | ratio | MAP@10 BM25 order |",
                  "|---|---|---|---|---|",
                  f"| {x['questions']} | {x['map10_listwise']} | {x['map10_oracle_order']} | {x['ratio']} | "
                  f"{x['map10_bm25']} |", ""]
    if r.get("task_a"):
        lines += ["### Task A: grounding faithful sentences", "",
                  "Each question's ideal-answer sentences grounded by `medcite ground`. `precision`: supported "
                  "citations that hold gold evidence of the sentence's question (the oracle's stance judge says "
                  "SUPPORTS only for those: ceiling 1.0); trivial baseline: BM25's top 3 of each sentence cited "
                  "blindly. `offline-grounding` has no LLM (medcite's trained stance classifier).", "",
                  "| preset | sentences | grounded | supported citations | precision | BM25 top 3 precision | "
                  "contradicted citations | framing | unrecognised | s |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, row in r["task_a"].items():
            lines.append(f"| {name} | {row['sentences']} | {row['grounded_sentences']} | {row['supported_citations']} "
                         f"| {row['precision']} | {row['bm25_top3_precision']} | {row['contradicted_citations']} | "
                         f"{', '.join(row['framings']) or '-'} | {row['unrecognised']} | {row['seconds']} |")
        lines.append("")
    lines += [f"Measured {r.get('measured', '')}."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", nargs="+", default=["task_b", "faults", "bioasq", "rerank", "task_a"])
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--presets", nargs="*", help="Only these Task B presets (part task_b).")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("medcite", "httpx", "httpx2", "httpcore", "sentence_transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    path = common.RESULTS_DIR / f"{NAME}.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    results = {k: v for k, v in results.items() if k in ("task_b", "faults", "bioasq", "rerank", "task_a")}
    results["measured"] = time.strftime("%Y-%m-%d")
    if args.presets:
        TASK_B[:] = args.presets
    qs = questions(args.questions)
    store = snippet_store(WORK / "store")
    if "task_b" in args.part:
        part_task_b(qs, store, results)
    if "faults" in args.part:
        part_faults(qs[: max(10, args.questions // 2)], store, results)
    if "bioasq" in args.part:
        part_bioasq(args.questions * 3, results)
    if "rerank" in args.part:
        part_rerank(qs, store, results)
    if "task_a" in args.part:
        part_task_a(qs[: max(8, args.questions // 3)], store, results)
    save(results)


if __name__ == "__main__":
    main()
