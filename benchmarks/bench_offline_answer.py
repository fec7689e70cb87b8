"""The offline preset answers the question: held-out BioASQ questions with its own BM25 retrieval.

The evaluation store (built once under ``benchmarks/work/offline_answer/``, gitignored): the documents rebuilt
from the gold snippets of every *held-out* BioASQ question (:func:`medcite.train.qa_data.held_out_ids`; the
answer scorer and the yes/no head never trained on them), the PubMedQA abstracts and the PubMed XML demo files
as distractors. The first ``--n`` held-out questions (file order) are asked with the topic's question only
(no gold type: the question type comes from :func:`medcite.evidence.concepts.question_type`).

Systems, in the same run: ``offline`` (evidence ``answer-sentences``, generator ``extractive-qa``), the previous
offline configuration (evidence ``snippets``, generator ``extractive``), and a trivial baseline (the first two
sentences of the top-ranked abstract, no model). Measures: ROUGE-2 F1 (rouge-score, stemmer, best over the
ideal answers) of the answer text; on yes/no questions the share whose answer states a verdict and the
verdict's macro-F1 against always-yes; abstention on :data:`INVENTED` questions about things that do not
exist, and false abstention on the answerable held-out questions; the share of cited PMIDs that are gold
documents; the question-type rules' accuracy on all BioASQ questions; ``medcite ask`` latency (in-process per
question, warm, and one cold ``medcite ask`` command).

    python benchmarks/bench_offline_answer.py            # 150 questions
    python benchmarks/bench_offline_answer.py --n 20     # a quick look
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bioasq_corpus  # noqa: E402
import common  # noqa: E402

from medcite.config import load_settings  # noqa: E402
from medcite.corpus.ingest import ingest  # noqa: E402
from medcite.corpus.store import DocumentStore  # noqa: E402
from medcite.evidence.concepts import question_type  # noqa: E402
from medcite.evidence.sentences import article_sentences  # noqa: E402
from medcite.io import read_bioasq_questions, write_jsonl  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import Pipeline  # noqa: E402
from medcite.train.bioasq_docs import snippet_documents  # noqa: E402
from medcite.train.qa_data import held_out_ids, read_qa  # noqa: E402
from medcite.types import Topic  # noqa: E402

NAME = "offline_answer"
WARM_UP = "Is pembrolizumab effective against melanoma?"
WORK = Path(__file__).resolve().parent / "work" / NAME
BIOASQ = "bioasq/bioasq_taskb_golden_7b-11b_dev.json.gz"
PUBMED_FILES = ("pubmed_xml/pubmed20n0014.xml.gz", "pubmed_xml/pubmed21n1298_first300_plus_deletecitation.xml.gz")
PREVIOUS = ["evidence.backend=snippets", "generate.backend=extractive"]
TARGETS = {"rouge2_f1": 0.30, "verdict_stated": 0.95, "yesno_macro_f1": 0.60, "abstain_invented": 0.90,
           "false_abstention": 0.10}
#: questions about drugs, genes and diseases that do not exist (no store document mentions these names)
INVENTED = [
    "Does zorbalene infusion reverse quellitis in adults?",
    "Is the gene FRAXQ7 mutated in Pindler-Voss syndrome?",
    "Which proteins does the kinase ZMPK-44 phosphorylate?",
    "What is the first-line treatment of glomerotic vesiculosis?",
    "Can trelinomab prevent relapse of Haskell fever?",
    "Is quorvastatin effective against hyperplastic murellosis?",
    "List the side effects of daxopratide.",
    "What is the mechanism of action of velmoraxin?",
    "Does the protein Snarfin-3 regulate autophagy in neurons?",
    "Which chromosome carries the BLORP2 gene?",
    "Is ombrelisib approved for the treatment of Tarkin disease?",
    "What causes Wendell-Oakes encephalopathy?",
    "Are mutations in KRZL1 associated with brittle cornea dysplasia type 9?",
    "How many patients were enrolled in the FLORIZEL-3 trial of pembrovatin?",
    "Does xantoprazine cross the blood-brain barrier?",
    "What is the role of the lncRNA HOTWIZ in zebrafish fin regeneration?",
    "Is graniloxetine safe in pregnancy?",
    "Which virus causes Marrowick hemorrhagic fever?",
    "Can the vaccine Quellivax protect against strollitis?",
    "Does treatment with fendoquinil reduce mortality in Brevard syndrome?",
]


def build_store(data_dir: Path, held: set[str]) -> tuple[Path, dict[str, Any]]:
    """The evaluation store (see the module doc), built once."""
    store = WORK / "store"
    stats_file = WORK / "store_stats.json"
    if store.exists() and stats_file.exists():
        return store, json.loads(stats_file.read_text(encoding="utf-8"))
    WORK.mkdir(parents=True, exist_ok=True)
    raw = [q for q in read_bioasq_questions(data_dir / BIOASQ) if q["id"] in held]
    docs = snippet_documents(raw)
    write_jsonl(WORK / "gold_docs.jsonl", docs.values())
    pubmedqa = list(bioasq_corpus.pubmedqa_documents(data_dir / bioasq_corpus.PUBMEDQA_FILE))
    pubmedqa = [d for d in pubmedqa if d["pmid"] not in docs]
    write_jsonl(WORK / "pubmedqa_docs.jsonl", pubmedqa)
    with DocumentStore.create(store) as s:  # distractors first: a gold document replaces one of the same PMID
        ingest([data_dir / f for f in PUBMED_FILES], s, on_error="skip")
        ingest([WORK / "pubmedqa_docs.jsonl", WORK / "gold_docs.jsonl"], s, on_error="skip")
        n = s.count()
    stats = {"held_out_questions": len(raw), "gold_documents": len(docs), "pubmedqa_distractors": len(pubmedqa),
             "pubmed_xml_files": list(PUBMED_FILES), "documents": n}
    stats_file.write_text(json.dumps(stats), encoding="utf-8")
    return store, stats


def rouge2(scorer: Any, text: str, refs: tuple[str, ...]) -> float:
    return max((scorer.score(r, text)["rouge2"].fmeasure for r in refs), default=0.0) if text.strip() else 0.0


def macro_f1(gold: list[str], pred: list[str]) -> float:
    f1s = []
    for label in ("yes", "no"):
        tp = sum(g == p == label for g, p in zip(gold, pred, strict=True))
        fp = sum(p == label and g != label for g, p in zip(gold, pred, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold, pred, strict=True))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(f1s) / 2


def trivial(pipe: Pipeline, topic: Topic) -> tuple[str, list[str]]:
    """The first two abstract sentences of the top-ranked document."""
    hits = pipe.retrieval.retrieve(topic).final
    if not hits:
        return "", []
    article = pipe.store.get(hits[0].pmid)
    if article is None:
        return "", []
    spans = [s.text for s in article_sentences(article) if s.section == "abstract"][:2]
    return " ".join(spans), [hits[0].pmid]


def run_system(name: str, overrides: list[str], store: Path, questions: list[Any], scorer: Any,
               invented: bool) -> dict[str, Any]:
    settings = load_settings("offline", overrides)
    rows: list[dict[str, Any]] = []
    with Pipeline(settings, store) as pipe:
        pipe.answer(Topic("warm", WARM_UP))  # loads the models (the yes/no head too): latency below is warm
        for q in questions:
            t0 = time.perf_counter()
            result = pipe.answer(Topic(q.id, q.body))
            seconds = time.perf_counter() - t0
            a = result.answer
            gold = set(q.documents)
            cited = a.pmids
            rows.append({"id": q.id, "type": q.type, "rouge2": rouge2(scorer, a.text, q.ideal_answers),
                         "verdict": a.verdict, "abstained": a.abstained, "gold_yesno": q.exact_answer,
                         "cited": len(cited), "cited_gold": sum(p in gold for p in cited), "seconds": seconds,
                         "words": len(a.text.split()), "max_pmids": max((len(s.pmids) for s in a.sentences),
                                                                        default=0)})
        inv = []
        if invented:
            for i, text in enumerate(INVENTED):
                a = pipe.answer(Topic(f"inv{i}", text)).answer
                inv.append({"question": text, "abstained": a.abstained, "answer": a.text[:200]})
        trivial_rows = []
        if name == "offline":
            for q in questions:
                text, pmids = trivial(pipe, Topic(q.id, q.body))
                trivial_rows.append({"rouge2": rouge2(scorer, text, q.ideal_answers),
                                     "cited": len(pmids), "cited_gold": sum(p in set(q.documents) for p in pmids)})
    return {"rows": rows, "invented": inv, "trivial": trivial_rows}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    yn = [r for r in rows if r["type"] == "yesno" and r["gold_yesno"] in ("yes", "no")]
    cited = sum(r["cited"] for r in rows)
    out = {"questions": len(rows),
           "rouge2_f1": round(sum(r["rouge2"] for r in rows) / max(1, len(rows)), 4),
           "rouge2_f1_by_type": {t: round(sum(r["rouge2"] for r in rows if r["type"] == t)
                                          / max(1, sum(r["type"] == t for r in rows)), 4)
                                 for t in ("yesno", "factoid", "list", "summary")},
           "false_abstention": round(sum(r["abstained"] for r in rows) / max(1, len(rows)), 4),
           "cited_gold_share": round(sum(r["cited_gold"] for r in rows) / max(1, cited), 4),
           "max_words": max((r.get("words", 0) for r in rows), default=0),
           "max_pmids_per_sentence": max((r.get("max_pmids", 0) for r in rows), default=0)}
    if yn and "verdict" in rows[0]:
        pred = [r["verdict"] or "none" for r in yn]
        out |= {"yesno_questions": len(yn),
                "verdict_stated": round(sum(p in ("yes", "no", "mixed") for p in pred) / len(yn), 4),
                "verdict_mixed": round(sum(p == "mixed" for p in pred) / len(yn), 4),
                "yesno_macro_f1": round(macro_f1([r["gold_yesno"] for r in yn], pred), 4),
                "always_yes_macro_f1": round(macro_f1([r["gold_yesno"] for r in yn], ["yes"] * len(yn)), 4)}
    if rows and "seconds" in rows[0]:
        out["latency_s"] = common.latency_summary([r["seconds"] for r in rows])
    return out


def cold_ask(store: Path, question: str) -> float:
    """Seconds of one ``medcite ask`` command: process start, model loading, one answer."""
    shutil.rmtree(WORK / "ask_run", ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "medcite", "--quiet", "ask", question, "--corpus", str(store),
                    "--json", "--out", str(WORK / "ask_run")], check=True, capture_output=True)
    return round(time.perf_counter() - t0, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=150, help="held-out questions asked")
    args = parser.parse_args()
    from rouge_score import rouge_scorer

    data_dir = shared_data_dir()
    held = held_out_ids(data_dir / BIOASQ)
    all_q = read_qa(data_dir / BIOASQ)
    questions = [q for q in all_q if q.id in held and q.ideal_answers and q.documents][: args.n]
    store, store_stats = build_store(data_dir, set(held))
    scorer = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
    new = run_system("offline", [], store, questions, scorer, invented=True)
    old = run_system("previous", PREVIOUS, store, questions, scorer, invented=True)
    types = Counter((q.type, question_type(q.body)) for q in all_q)
    n_type = Counter(q.type for q in all_q)
    type_acc = {t: round(types[(t, t)] / n_type[t], 4) for t in n_type}
    type_acc["four_way"] = round(sum(types[(t, t)] for t in n_type) / len(all_q), 4)
    result = {
        "store": store_stats,
        "questions": len(questions), "types": dict(Counter(q.type for q in questions)),
        "offline": summarise(new["rows"]) | {
            "abstain_invented": round(sum(r["abstained"] for r in new["invented"]) / len(INVENTED), 4)},
        "previous_offline": summarise(old["rows"]) | {
            "abstain_invented": round(sum(r["abstained"] for r in old["invented"]) / len(INVENTED), 4)},
        "trivial_top_abstract_2_sentences": {
            "rouge2_f1": round(sum(r["rouge2"] for r in new["trivial"]) / max(1, len(new["trivial"])), 4),
            "cited_gold_share": round(sum(r["cited_gold"] for r in new["trivial"])
                                      / max(1, sum(r["cited"] for r in new["trivial"])), 4)},
        "question_type_accuracy_all_bioasq": type_acc,
        "invented": new["invented"],
        "cold_medcite_ask_s": cold_ask(store, questions[0].body),
        "targets": TARGETS,
    }
    path = common.write_result(NAME, result)
    o, p, t = result["offline"], result["previous_offline"], result["trivial_top_abstract_2_sentences"]
    body = f"""## Offline preset: answers to held-out BioASQ questions ({NAME})

`python benchmarks/bench_offline_answer.py` — {len(questions)} held-out BioASQ questions (never trained on),
own BM25 retrieval over a store of the held-out questions' gold documents (rebuilt from gold snippets) plus
PubMedQA and PubMed XML distractors ({store_stats.get('documents')} documents); the question type comes from
rules, not from BioASQ. Previous offline = evidence `snippets` + generator `extractive`, measured in the same run.

{common.markdown_table(["measure", "offline (answer-sentences + extractive-qa)", "previous offline",
                        "trivial (top abstract, 2 sentences)", "target"], [
    ["ROUGE-2 F1 vs ideal answers", o["rouge2_f1"], p["rouge2_f1"], t["rouge2_f1"], ">= 0.30"],
    ["yes/no: verdict stated (of which 'mixed')", f"{o.get('verdict_stated')} ({o.get('verdict_mixed')})", "–",
     "–", ">= 0.95"],
    ["yes/no: macro-F1 (always yes: " + str(o.get("always_yes_macro_f1")) + ")", o.get("yesno_macro_f1"), "–",
     "–", ">= 0.60"],
    ["abstains on 20 invented-entity questions", o["abstain_invented"], p["abstain_invented"], "–", ">= 0.90"],
    ["false abstention on answerable questions", o["false_abstention"], p["false_abstention"], "–", "<= 0.10"],
    ["cited PMIDs that are gold documents", o["cited_gold_share"], p["cited_gold_share"], t["cited_gold_share"],
     ""],
    ["latency per question, warm, median / p95 ms", f"{o['latency_s']['p50_ms']:.0f} / {o['latency_s']['p95_ms']:.0f}",
     f"{p['latency_s']['p50_ms']:.0f} / {p['latency_s']['p95_ms']:.0f}", "–", ""],
])}

ROUGE-2 by type (offline / previous): {o["rouge2_f1_by_type"]} / {p["rouge2_f1_by_type"]}. Question-type rules on
all {len(all_q)} BioASQ questions: {type_acc}. A cold `medcite ask` (process start, model loading, one answer):
{result["cold_medcite_ask_s"]} s. Results: `benchmarks/results/{NAME}.json`.
"""
    common.update_markdown_section(NAME, body)
    print(json.dumps({k: result[k] for k in ("offline", "previous_offline", "trivial_top_abstract_2_sentences",
                                               "question_type_accuracy_all_bioasq")}, indent=1))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
