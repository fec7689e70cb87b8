"""Task B presets scored the way the track scores them (BioACE), on BioASQ questions with their ideal answers.

Topics: the first N held-back BioASQ dev questions (`retrieval_corpus.held_back`, never trained on) that have an
ideal answer, asked as Task B topics (question only, no narrative). Corpus: the Task A benchmark's sub-corpus store
(`benchmarks/work/task_a/store`: every snippet document gold for a held-back question plus distractors, with its
BM25 and FAISS indexes; `python benchmarks/bench_task_a.py` builds it). Every Task B preset runs offline with its
documented swaps (`offline_settings(settings, "none")`: no LLM, so LLM stages take their no-LLM path and
generation is extractive; rerankers run through their stand-ins), like `benchmarks/bench_task_b.py`.

Measures (`medcite.evaluate.biogen_b`, what `medcite eval biogen-b` reports): citation coverage and
support / contradiction rates judged by medcite's stance model (`models:medcite-reader`, the offline
judge; three labels), nugget precision / recall / F1 against the question's first ideal answer (sentences aligned by
packaged-MiniLM cosine >= the threshold). Completeness needs an LLM judge and is not measured here.

Trivial baselines in the same table: `gold-snippet` answers with the question's first gold snippet (citing its
document: an upper-bound-like reference point drawn from the gold annotations), `bm25-top-sentence` with the
sentence of BM25's top document sharing most words with the question.

Threshold calibration (`--calibrate`): for held-back questions with two or more ideal answers, each sentence of the
second answer against the first answer of the same question (positives: the same content written by another
expert) and of another question (negatives); reports both distributions and the F1-best cut.

    python benchmarks/bench_task_b_measures.py --questions 20
    python benchmarks/bench_task_b_measures.py --report-only
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_task_b  # noqa: E402
import bioasq_corpus  # noqa: E402
import common  # noqa: E402
import numpy as np  # noqa: E402
import retrieval_corpus  # noqa: E402

from medcite.config import load_settings  # noqa: E402
from medcite.corpus.store import DocumentStore  # noqa: E402
from medcite.evaluate.biogen_b import Embed, judge_citations, nugget_scores  # noqa: E402
from medcite.evaluate.nuggets import DEFAULT_THRESHOLD  # noqa: E402
from medcite.evidence.sentences import sentence_texts  # noqa: E402
from medcite.index.dense.encoders import load_encoder, unit_embedder  # noqa: E402
from medcite.io import open_maybe_gz  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import RetrievalPipeline, build_stage  # noqa: E402
from medcite.rundir import read_answers, read_articles  # noqa: E402
from medcite.types import Answer, AnswerSentence, Article, Topic  # noqa: E402

NAME = "task_b_measures"
WORK = common.REPO / "benchmarks" / "work" / NAME
PRESETS = ["offline", "clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e", "dal25-rrf", "clac24-simpleqa",
           "clac24-simpleqa-hybrid"]
JUDGE = "models:medcite-reader"


def dev_questions(data_dir: Path, n: int) -> list[dict[str, Any]]:
    """The first ``n`` held-back dev questions with an ideal answer and a gold snippet, raw BioASQ records."""
    with open_maybe_gz(data_dir / bioasq_corpus.BIOASQ_FILE) as f:
        raw = {q["id"]: q for q in json.load(f)["questions"]}
    out = []
    for q in retrieval_corpus.held_back(data_dir):
        r = raw.get(q.id)
        if r and r.get("ideal_answer") and r.get("snippets"):
            out.append(r)
        if len(out) == n:
            break
    return out


def first_ideal(q: dict[str, Any]) -> str:
    ideal = q["ideal_answer"]
    return ideal[0] if isinstance(ideal, list) else str(ideal)


def baseline_answers(questions: list[dict[str, Any]], store: Path) -> dict[str, list[Answer]]:
    """The two trivial baselines' answers (see the module docstring)."""
    gold = [Answer(q["id"], [AnswerSentence(s, (bioasq_corpus.pmid_of(q["snippets"][0]["document"]),))
                             for s in sentence_texts(q["snippets"][0]["text"])], generator="gold-snippet")
            for q in questions]
    pipe = RetrievalPipeline.from_settings(load_settings("bm25"), store)
    top: list[Answer] = []
    try:
        with DocumentStore.open(store) as docs:
            for q in questions:
                hits = pipe.retrieve(Topic(q["id"], q["body"])).final
                art = docs.get(hits[0].pmid) if hits else None
                want = set(re.findall(r"\w{3,}", q["body"].lower()))
                text = f"{art.title} {art.abstract}" if art else ""
                sents = sentence_texts(text)
                best = max(sents, key=lambda s: len(want & set(re.findall(r"\w{3,}", s.lower()))), default="")
                top.append(Answer(q["id"], [AnswerSentence(best, (art.pmid,))] if best and art else [],
                                  generator="bm25-top-sentence"))
    finally:
        pipe.close()
    return {"gold-snippet": gold, "bm25-top-sentence": top}


def articles_of(answers: list[Answer], store: Path) -> dict[str, dict[str, Article]]:
    with DocumentStore.open(store) as docs:
        return {a.topic_id: {p: art for p in a.pmids if (art := docs.get(p)) is not None} for a in answers}


def measure(answers: list[Answer], articles: dict[str, dict[str, Article]], refs: dict[str, str], embed: Embed,
            judge: Any, threshold: float) -> dict[str, Any]:
    cites = judge_citations(answers, articles, judge)
    nug = nugget_scores(answers, refs, embed, sentence_texts, threshold)
    return {"topics": len(answers), "sentences": cites.counts.sentences, "citations": cites.counts.citations,
            "coverage": round(cites.micro["coverage"], 4), "support_rate": round(cites.micro["support_rate"], 4),
            "contradiction_rate": round(cites.micro["contradiction_rate"], 4),
            **{f"nugget_{k}": round(v, 4) for k, v in nug.micro.items()},
            **{f"nugget_{k}_macro": round(v, 4) for k, v in nug.macro.items()},
            "mean_words": round(sum(len(a.text.split()) for a in answers) / max(len(answers), 1), 1)}


def calibrate(data_dir: Path, embed: Embed, n: int = 200, seed: int = 13) -> dict[str, Any]:
    """Cosine of a second ideal answer's sentences to the first ideal answer of the same / another question."""
    with open_maybe_gz(data_dir / bioasq_corpus.BIOASQ_FILE) as f:
        raw = {q["id"]: q for q in json.load(f)["questions"]}
    qs = [raw[q.id] for q in retrieval_corpus.held_back(data_dir)
          if q.id in raw and isinstance(raw[q.id].get("ideal_answer"), list) and len(raw[q.id]["ideal_answer"]) > 1]
    qs = qs[:n]
    rng = random.Random(seed)

    def best(sents: list[str], ref: list[str]) -> list[float]:
        if not sents or not ref:
            return []
        v = embed([*sents, *ref])
        return [float(x) for x in (v[: len(sents)] @ v[len(sents):].T).max(axis=1)]

    pos, neg = [], []
    for i, q in enumerate(qs):
        second = sentence_texts(q["ideal_answer"][1])
        pos += best(second, sentence_texts(q["ideal_answer"][0]))
        other = qs[rng.choice([j for j in range(len(qs)) if j != i])]
        neg += best(second, sentence_texts(other["ideal_answer"][0]))
    cuts = [round(0.3 + 0.05 * k, 2) for k in range(11)]
    rows = []
    for c in cuts:
        tp, fp = sum(x >= c for x in pos), sum(x >= c for x in neg)
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / len(pos) if pos else 0.0
        rows.append({"threshold": c, "precision": round(p, 4), "recall": round(r, 4),
                     "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0})
    return {"questions": len(qs), "positives": len(pos), "negatives": len(neg),
            "positive_median": round(float(np.median(pos)), 4) if pos else None,
            "negative_median": round(float(np.median(neg)), 4) if neg else None,
            "cuts": rows, "best": max(rows, key=lambda r: r["f1"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--store", type=Path, default=common.REPO / "benchmarks" / "work" / "task_a" / "store")
    ap.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    ap.add_argument("--calibrate", action="store_true", help="Also calibrate the nugget threshold (see docstring).")
    ap.add_argument("--rescore", action="store_true",
                    help="Score the run directories already written (benchmarks/work/task_b_measures) again, e.g. "
                    "at another --threshold, without running the presets.")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        common.update_markdown_section(NAME, markdown(json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text())))
        return
    if not (args.store / "manifest.json").exists():
        raise SystemExit(f"no store at {args.store}: build it with `python benchmarks/bench_task_a.py` "
                         "(or pass --store)")
    data_dir = shared_data_dir()
    questions = dev_questions(data_dir, args.questions)
    refs = {q["id"]: first_ideal(q) for q in questions}
    topics = [Topic(q["id"], q["body"]) for q in questions]
    embed = unit_embedder(load_encoder("minilm"))
    judge = build_stage("stance", {"backend": "classifier", "model": JUDGE})
    result: dict[str, Any] = {"questions": len(questions), "store": str(args.store), "judge": JUDGE,
                              "threshold": args.threshold, "rows": {}, "machine": common.machine_info(),
                              "commit": common.git_commit()}
    if args.rescore:
        old = json.loads((common.RESULTS_DIR / f"{NAME}.json").read_text())
        result["calibration"] = old.get("calibration")
    if args.calibrate:
        result["calibration"] = calibrate(data_dir, embed)
        print(json.dumps({"calibration": result["calibration"]["best"]}), flush=True)
    for name, answers in baseline_answers(questions, args.store).items():
        result["rows"][name] = measure(answers, articles_of(answers, args.store), refs, embed, judge,
                                       args.threshold)
        print(json.dumps({name: result["rows"][name]}), flush=True)
    for preset in args.presets.split(","):
        out = WORK / f"{preset}-none"
        t0 = time.perf_counter()
        if args.rescore:
            if (out / "answers.jsonl").exists():
                row = measure(read_answers(out), read_articles(out), refs, embed, judge, args.threshold)
                prev = old["rows"].get(preset, {})
                row.update({k: prev[k] for k in ("valid", "seconds", "generators") if k in prev})
                result["rows"][preset] = row
            elif preset in old["rows"]:
                result["rows"][preset] = old["rows"][preset]
            continue
        try:
            run = bench_task_b.run_one(preset, "none", topics, args.store, out, [])
        except Exception as e:  # one preset's failure is a row of the table, not the end of the benchmark
            result["rows"][preset] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(json.dumps({preset: result["rows"][preset]}), flush=True)
            continue
        row = measure(read_answers(out), read_articles(out), refs, embed, judge, args.threshold)
        row.update(valid=run["valid"], seconds=round(time.perf_counter() - t0, 1),
                   generators=run["generators"])
        result["rows"][preset] = row
        print(json.dumps({preset: row}), flush=True)
        common.write_result(NAME, result)
    common.write_result(NAME, result)
    common.update_markdown_section(NAME, markdown(result))


def markdown(result: dict[str, Any]) -> str:
    cols = ["coverage", "support_rate", "contradiction_rate", "nugget_precision", "nugget_recall", "nugget_f1",
            "mean_words"]
    rows = []
    for name, r in result["rows"].items():
        if "error" in r:
            rows.append([name, "error: " + r["error"][:120], *[""] * (len(cols) + 1)])
            continue
        rows.append([name, str(r["citations"]), *[f"{r[c]:.3f}" if c != "mean_words" else str(r[c]) for c in cols],
                     "yes" if r.get("valid", True) else "NO"])
    lines = [
        "## Task B presets by BioACE's measures on BioASQ questions (`benchmarks/bench_task_b_measures.py`)",
        "",
        f"{result['questions']} held-back BioASQ dev questions as Task B topics (question only), the Task A "
        f"benchmark's sub-corpus store, every preset offline (`offline_settings(settings, 'none')`: extractive "
        f"answers, rerank stand-ins). Citations judged by `{result['judge']}` (three labels); nuggets against "
        f"each question's first ideal answer, MiniLM cosine >= {result['threshold']}, micro over sentences. "
        "Baselines: `gold-snippet` (the first gold snippet as the answer) and `bm25-top-sentence`. Completeness "
        "needs an LLM judge: not measured here.",
        "",
        common.markdown_table(["system", "citations", *cols, "valid"], rows),
        "",
        "Reading: 20 questions hold 27 reference sentences, so one matched sentence moves recall by 0.037; the "
        "presets differ mostly in length (longer answers: higher recall, lower precision), and no preset beats "
        "the `offline` preset's short answers on F1. The offline judge labelled every citation supports or "
        "contradicts (never neutral), so here the contradiction rate is 1 - support rate: it says how often the "
        "classifier leans against, not how often an abstract refutes the sentence.",
    ]
    cal = result.get("calibration")
    if cal:
        lines += ["", f"Threshold calibration: {cal['questions']} held-back questions with two ideal answers, "
                  f"{cal['positives']} sentences of the second answer; best-match cosine to the same question's "
                  f"first answer median {cal['positive_median']}, to another question's {cal['negative_median']}. "
                  f"F1-best cut {cal['best']['threshold']} (P {cal['best']['precision']}, R {cal['best']['recall']}).",
                  "", common.markdown_table(["cosine >=", "precision", "recall", "F1"],
                                            [[str(c["threshold"]), str(c["precision"]), str(c["recall"]),
                                              str(c["f1"])] for c in cal["cuts"]])]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
