"""Recall@k curves, the plot and the ``retrieval`` section of docs/BENCHMARKS.md for bench_retrieval.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from common import markdown_table

from medcite.types import Hit

KS = list(range(1, 101))


def recall_curve(run: Mapping[str, Sequence[Hit]], qrels: Mapping[str, Mapping[str, int]]) -> list[float]:
    """Mean recall@k for k = 1..100 (trec_eval's R@k: |relevant in top k| / |relevant|), queries with
    relevant documents only, a query missing from the run scoring 0."""
    qids = [q for q, docs in qrels.items() if any(r > 0 for r in docs.values())]
    totals = [0.0] * len(KS)
    for q in qids:
        rel = {d for d, r in qrels[q].items() if r > 0}
        seen: set[str] = set()
        found = 0
        ranking = [h.pmid for h in sorted(run.get(q, []), key=lambda h: h.rank)]
        for i in range(len(KS)):
            if i < len(ranking) and ranking[i] not in seen:
                seen.add(ranking[i])
                found += ranking[i] in rel
            totals[i] += found / len(rel)
    return [round(t / len(qids), 4) if qids else 0.0 for t in totals]


def plot(systems: Sequence[Mapping[str, Any]], out: Path) -> Path:
    """Recall@k (k = 1..100) of every system into a small PNG (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=90)
    for s in systems:
        style = "--" if s.get("stage") == "rerank" else ("-." if s.get("stage") == "reference" else "-")
        ax.plot(KS, s["recall_at_k"], style, linewidth=1.4, label=f"{s['name']} (n={s['questions']})")
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k")
    ax.set_xscale("log")
    ax.set_xlim(1, 100)
    ax.set_ylim(0, 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Recall@k on held-back BioASQ dev questions (snippet sub-corpus)", fontsize=10)
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def _ms(lat: Mapping[str, Any]) -> str:
    return f"{lat['p50_ms'] / 1000:.2f} s" if lat.get("p50_ms") is not None else "–"


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("met" if ok else "**missed**")


def targets(result: Mapping[str, Any]) -> list[list[str]]:
    """The issue's targets with the measured numbers."""
    systems = result["systems"]
    by = {s["name"]: s for s in systems}
    bm25 = by["BM25"]
    rerank_q = result["rerank"]["questions"]
    hyb = next(s for s in systems if s["name"].startswith("Hybrid RRF (BM25 + MiniLM)") and s["stage"] == "first")
    best = max((s for s in systems if s.get("stage") != "reference"), key=lambda s: s["MAP@10"])
    rows = []
    # compare on the same questions: rerankers ran on the first N held-back questions
    if best["questions"] != bm25["questions"]:
        bm25 = by["BM25 (the reranked questions only)"]
    bm25_map = bm25["MAP@10"]
    ratio = best["MAP@10"] / bm25_map if bm25_map else None
    rows.append(["best MAP@10 ≥ 1.25 × BM25's", f"{best['name']}: {best['MAP@10']:.4f} vs BM25 {bm25_map:.4f} "
                 f"= {ratio:.2f}× ({best['questions']} questions)" if ratio else "–", _verdict(
                     ratio >= 1.25 if ratio else None)])
    rows.append(["hybrid R@100 ≥ 0.95", f"{hyb['R@100_findable']:.4f} against the findable gold, "
                 f"{hyb['R@100']:.4f} against all gold (ceiling {result['ceiling']['R@100']:.4f}); "
                 f"{hyb['questions']} questions", _verdict(hyb["R@100_findable"] >= 0.95)])
    ivf = result["ivfpq"]["layouts"]
    best_ivf = max((r for lay in ivf for r in lay["results"] if r["rerank"]
                    and lay["bytes_per_doc_marginal"] <= 100), key=lambda r: r["recall@10"], default=None)
    if best_ivf:
        rows.append(["IVF-PQ + re-rank recall@10 ≥ 0.95 of exact", f"{best_ivf['recall@10']:.4f} (nprobe "
                     f"{best_ivf['nprobe']}, shortlist {best_ivf['rerank']})", _verdict(best_ivf["recall@10"] >= 0.95)])
    small = min(lay["bytes_per_doc_marginal"] for lay in ivf)
    rows.append(["dense memory ≤ 100 bytes/document with PQ", f"{small} bytes (PQ code + 8-byte id)",
                 _verdict(small <= 100)])
    for label in ("trained cross-encoder", "trained cross-encoder, int8"):
        ce = by.get(f"{result['rerank']['pool']} → {label}")
        if ce:
            p50 = ce["rerank_latency_s"]["p50_ms"] / 1000
            rows.append([f"rerank top 100 with a MiniLM-sized cross-encoder ≤ 3 s/question (2 cores): {label}",
                         f"p50 {p50:.2f} s over {rerank_q} questions (MAP@10 {ce['MAP@10']:.4f}) in this run, load "
                         f"average {result['machine'].get('load_avg_1m_at_start', '?')} at start; the speed on a "
                         "quiet machine is in the cross-encoder rerank speed section", _verdict(p50 <= 3)])
    speed = Path(__file__).resolve().parent / "results" / "rerank.json"
    if speed.is_file():
        sp = json.loads(speed.read_text(encoding="utf-8"))
        res = list(sp["results"].values())

        def fastest(length: int, int8: bool) -> float:
            return min(r["wall_s_median"] for r in res if r["max_length"] == length and r["int8"] == int8)

        lengths = sorted({r["max_length"] for r in res}, reverse=True)
        text = "; ".join(f"max_length {n}: fp32 {fastest(n, False):.2f} s, int8 {fastest(n, True):.2f} s"
                         for n in lengths)
        ok = [n for n in lengths if min(fastest(n, False), fastest(n, True)) <= 3]
        rows.append(["rerank top 100 with a MiniLM-sized cross-encoder ≤ 3 s/question (2 cores), quiet machine",
                     f"bench_rerank.py, {sp['docs_per_question']} real abstracts (mean {sp['doc_words_mean']} words), "
                     f"median wall: {text}", f"met at max_length {max(ok)}" if ok else _verdict(False)])
    return rows


def _train_store(result: Mapping[str, Any], kind: str = "cross-encoder") -> str:
    """The document store a model was trained from (its BM25 negatives come from there)."""
    store = next((t.get("store") for t in result.get("training", []) if t.get("kind") == kind), None)
    return str(store or "benchmarks/work/store")


def _train_options(result: Mapping[str, Any], kind: str = "cross-encoder") -> str:
    """A training run's options as ``medcite train reranker|encoder`` flags."""
    opts = next((t.get("options") or {} for t in result.get("training", []) if t.get("kind") == kind), {})
    return _flags(opts)


def _pairs(pairs: Mapping[str, Any]) -> str:
    if pairs.get("hard_negatives"):
        per = pairs["hard_negatives"] // max(1, pairs.get("positive") or 1)
        return f"{pairs.get('positive')} gold pairs, each with {per} BM25 hard negative(s)"
    return f"{pairs.get('total')} pairs"


def _ce_base_commands(result: Mapping[str, Any]) -> tuple[list[str], str]:
    """The cross-encoder's ``--base`` and, when it was another adapted encoder than the one measured above
    (its ``training.json`` differs), the command that trains that base first."""
    ce = next((t for t in result.get("training", []) if t.get("kind") == "cross-encoder"), {})
    bi = next((t for t in result.get("training", []) if t.get("kind") == "bi-encoder"), {})
    base = ce.get("base_training")
    if not base or base.get("options") == bi.get("options"):
        return [], "$MEDCITE_MODELS_DIR/medcite-minilm-bi-bioasq"
    folder = "$MEDCITE_MODELS_DIR/medcite-minilm-bi-bioasq-ce-base"
    return ["# the cross-encoder's base: an earlier adapted encoder (other options than the one above)",
            f"medcite train encoder --data $D --corpus {base.get('store')} --base minilm \\",
            f"  --out {folder} {_flags(base.get('options') or {})}"], folder


def _flags(opts: Mapping[str, Any]) -> str:
    flags = [("epochs", "--epochs"), ("batch_size", "--batch-size"), ("lr", "--lr"), ("max_pairs", "--max-pairs"),
             ("negatives", "--negatives"), ("max_dev", "--max-dev"), ("seed", "--seed"),
             ("dev_fraction", "--dev-fraction"), ("max_length", "--max-length"), ("threads", "--threads")]
    return " ".join(f"{flag} {opts[key]}" for key, flag in flags if opts.get(key) is not None)


def markdown(result: Mapping[str, Any]) -> str:
    """The retrieval section of docs/BENCHMARKS.md."""
    sp, corpus, rr = result["split"], result["corpus"], result["rerank"]
    rows = [[s["name"], s["questions"], f"{s['MAP@10']:.4f}", f"{s['R@100']:.4f}", f"{s['R@100_findable']:.4f}",
             f"{s['nDCG@10']:.4f}", _ms(s["latency_s"]), s.get("preset") or "–"] for s in result["systems"]]
    ceiling = result["ceiling"]
    lines = [
        "## Retrieval: BM25, dense, hybrid and rerankers (issue 3)",
        "",
        f"Measured {result['measured_at']} at `{result['git_commit']}` with `{result['command']}` "
        f"({result['wall_s']:.0f} s; {result['machine'].get('cpus')} shared cores, load average "
        f"{result['machine'].get('load_avg_1m_at_start')} at start: latencies are inflated by other jobs).",
        "",
        f"**Questions.** The BioASQ dev questions that `medcite train` held back: `split_questions(dev_fraction="
        f"{sp['dev_fraction']}, seed={sp['seed']})`, the most recent batches (10B4–11B4), "
        f"**{sp['held_back_questions']} questions**, none seen in training. First stages run on all of them; "
        f"rerankers on the first **{rr['questions']}** (split order) over the top 100 of {rr['pool']}. Qrels: each "
        "question's official gold documents; MAP@10 uses BioASQ's denominator min(|gold|, 10).",
        "",
        f"**Corpus (a documented subset).** Encoding the whole ~60k-document snippet corpus with MiniLM did not "
        "fit the budget on the shared 2-core machine, so every system searches the same fixed sub-corpus of "
        f"**{corpus['documents']} documents**: the {corpus['gold_snippet_documents']} snippet documents gold for "
        f"a held-back question, plus seeded samples of {corpus['snippet_distractors']} other snippet documents "
        f"(gold for training questions: hard, on-topic distractors), {corpus['pubmedqa_distractors']} PubMedQA "
        f"and {corpus['pubmed_distractors']} PubMed demo-file abstracts "
        f"({corpus['held_back_gold_pmids_without_document']} of {corpus['held_back_gold_pmids']} gold PMIDs "
        "have no snippet document: the same ceiling for every system). Absolute numbers are therefore higher "
        "than on the full corpus; the comparison is fair.",
        "",
        markdown_table(["system", "questions", "MAP@10", "R@100", "R@100 (findable gold)", "nDCG@10",
                        "latency p50 / question", "preset"], rows),
        "",
        f"Ceiling (every findable gold document ranked first): MAP@10 {ceiling['MAP@10']:.4f}, R@100 "
        f"{ceiling['R@100']:.4f}, nDCG@10 {ceiling['nDCG@10']:.4f} on the {result['split']['held_back_questions']} "
        "questions. *R@100 (findable gold)* counts only the gold PMIDs that have a document in the corpus.",
        "",
        "Latency is wall time per question of the whole pipeline (first stage, plus reranking for the "
        "rerankers); the ensembles' latency is timed on the uncached ensemble over a few questions. Union "
        "ensemble: at most 10 hits by construction, so its R@100 is not comparable.",
        "",
    ]
    names = {s["name"] for s in result["systems"]}
    if "Dense (MiniLM adapted)" not in names:
        lines += ["**MiniLM adapted: not measured in this run.** No adapted bi-encoder "
                  "(`models:medcite-minilm-bi-bioasq`, made by `medcite train encoder`) existed when the benchmark "
                  "ran: training it and re-encoding the sub-corpus (the MiniLM encoding alone took "
                  f"{result.get('dense_build_s', '~1,750')} s here) did not fit the time budget on the shared "
                  "machine. The `hybrid-adapted` preset and this script are ready: with the model under "
                  "`$MEDCITE_MODELS_DIR` the script adds both adapted rows.", ""]
    if not any(s.get("stage") == "rerank" for s in result["systems"]):
        lines += ["**Rerankers: not measured in this run** (no trained cross-encoder under `$MEDCITE_MODELS_DIR`).",
                  ""]
    ce = next((s for s in result["systems"] if s["name"].endswith("→ trained cross-encoder")), None)
    ref = next((s for s in result["systems"] if s.get("stage") == "reference"
                and s["name"].startswith(rr["pool"])), None)
    if ce and ref and ce["MAP@10"] < ref["MAP@10"]:
        lines += [f"**The trained cross-encoder is worse than the ranking it reorders** (MAP@10 {ce['MAP@10']:.4f} "
                  f"against {ref['MAP@10']:.4f}), and the cross-validated ensemble weights give it little weight. "
                  "Until a trained reranker beats the first stage, `best` is a first-stage preset.", ""]
    lines += [f"**Note.** {note}" for note in result.get("notes", [])] + ([""] if result.get("notes") else [])
    if "weighted_cv" in rr:
        cv = rr["weighted_cv"]
        folds = "; ".join(f"{f['weights']} (tuned on {f['tuned_on']}, MAP@10 {f['tune_map@10']})" for f in cv["folds"])
        enc = "adapted MiniLM" if "adapted" in rr["pool"] else "MiniLM"
        lines += [f"**Ensemble weights** [trained CE, {enc} cosine], grid 1/8 (DS@GT), min-max normalised: "
                  f"2-fold cross-validation over the reranked questions (seeded halves; each half scored with "
                  f"the weights tuned on the other): {folds}. The `trained-ensemble` preset carries the weights "
                  f"tuned on all of them: {cv['weights_all_questions']}.", ""]
    for t in result.get("training", []):
        sec, opts = t.get("seconds") or {}, t.get("options") or {}
        lines.append(f"**Training ({t.get('kind')})**: {sec.get('train')} s training, {sec.get('total')} s in all "
                     f"({_pairs(t.get('pairs') or {})}, {opts.get('epochs')} epoch, batch "
                     f"{opts.get('batch_size')}, {opts.get('threads')} threads, seed {opts.get('seed')}).")
    base_commands, ce_base = _ce_base_commands(result)
    lines += ["", "**Reproduce** (the trained models' folders are what `models:medcite-minilm-bi-bioasq` and "
              "`models:medcite-minilm-ce-bioasq` in the `hybrid-adapted`, `trained-*` and `best` presets resolve "
              "to: `$MEDCITE_MODELS_DIR/...`, default `~/.cache/medcite/models/...`; the cross-encoder starts from "
              "the adapted encoder's body with a fresh one-logit head):", "", "```sh",
              ".venv/bin/python benchmarks/bench_bm25.py        # the snippet corpus and the full store",
              "export MEDCITE_MODELS_DIR=~/.cache/medcite/models",
              "D=../shared/data/bioasq/bioasq_taskb_golden_7b-11b_dev.json.gz",
              f"medcite train encoder --data $D --corpus {_train_store(result, 'bi-encoder')} --base minilm \\",
              f"  --out $MEDCITE_MODELS_DIR/medcite-minilm-bi-bioasq {_train_options(result, 'bi-encoder')}",
              *base_commands,
              f"medcite train reranker --data $D --corpus {_train_store(result)} \\",
              f"  --base {ce_base} \\",
              f"  --out $MEDCITE_MODELS_DIR/medcite-minilm-ce-bioasq {_train_options(result)}",
              f".venv/bin/python benchmarks/bench_retrieval.py --rerank-questions {rr['questions']} \\",
              "  --training-report $MEDCITE_MODELS_DIR/medcite-minilm-bi-bioasq/training.json \\",
              "  --training-report $MEDCITE_MODELS_DIR/medcite-minilm-ce-bioasq/training.json",
              "medcite search --preset best --corpus benchmarks/work/retrieval/store --topics TOPICS \\",
              "  --output RUN.trec -k 100", "```",
              "", "![recall@k](img/recall_at_k.png)", "", "**IVF-PQ on real MiniLM embeddings** (the dense "
              f"index's stored vectors of the {result['ivfpq']['documents']} documents; the "
              f"{result['ivfpq']['queries']} held-back questions as queries; recall@10 against exact search):", ""]
    ivf_rows = []
    for lay in result["ivfpq"]["layouts"]:
        for r in lay["results"]:
            ivf_rows.append([f"nlist {lay['nlist']}, m {lay['pq_m']} × {lay['pq_nbits']} bits", r["nprobe"],
                             r["rerank"] or "none", f"{r['recall@10']:.4f}", lay["bytes_per_doc_marginal"]])
    lines += [markdown_table(["layout", "nprobe", "exact re-rank shortlist", "recall@10", "RAM bytes/doc"],
                             ivf_rows), "",
              "RAM bytes/doc: PQ code plus the 8-byte id in the inverted list (the codebooks and centroids are "
              "a fixed cost); the re-rank reads float16 vectors memory-mapped from disk.", "",
              "**Targets**", "", markdown_table(["target", "measured", "verdict"], targets(result)), ""]
    return "\n".join(lines)


def markdown_full(result: Mapping[str, Any]) -> str:
    """The ``retrieval_full`` section: the first stages on the whole snippet-level corpus."""
    systems = result["systems"]
    bm25 = next(s["MAP@10"] for s in systems if s["preset"] == "bm25" and not s.get("overrides"))
    rows = [[s["name"], s["questions"], f"{s['MAP@10']:.4f}", f"{s['MAP@10'] / bm25:.2f}×", f"{s['R@100']:.4f}",
             f"{s['R@100_findable']:.4f}", f"{s['nDCG@10']:.4f}", _ms(s["latency_s"]), s.get("preset") or "–"]
            for s in systems]
    best = max((s for s in systems if not s.get("overrides")), key=lambda s: s["MAP@10"])
    ceiling, corpus = result["ceiling"], result["corpus"]
    return "\n".join([
        "## Retrieval on the whole snippet-level corpus (first stages)",
        "",
        f"Measured {result['measured_at']} at `{result['git_commit']}` with `{result['command']}` "
        f"({result['wall_s']:.0f} s, first stages already cached are reused; {result['machine'].get('cpus')} shared "
        f"cores, load average {result['machine'].get('load_avg_1m_at_start')} at start).",
        "",
        f"The same {result['split']['held_back_questions']} held-back questions as above, searched in the whole "
        f"foundation store (`{corpus['store']}`, **{corpus['documents']:,} documents**: every BioASQ dev gold "
        "snippet document plus the PubMed baseline and update files and the PubMedQA abstracts, see the BM25 "
        "section). Rerankers are not repeated here: they reorder a first stage's top 100, whose cost does "
        "not depend on the corpus size."
        + ("" if any(s["name"] == "Dense (MiniLM)" for s in systems) else
           " The packaged MiniLM's dense and hybrid runs are in the sub-corpus table only (`--full-corpus-plain` "
           "adds them here at the cost of a second encoding of the corpus)."),
        "",
        markdown_table(["system", "questions", "MAP@10", "× BM25", "R@100", "R@100 (findable gold)", "nDCG@10",
                        "latency p50 / question", "preset"], rows),
        "",
        f"Ceiling (every findable gold document ranked first): MAP@10 {ceiling['MAP@10']:.4f}, R@100 "
        f"{ceiling['R@100']:.4f}. Best: {best['name']}, MAP@10 {best['MAP@10']:.4f} = "
        f"{best['MAP@10'] / bm25:.2f}× BM25's {bm25:.4f}.",
        *[f"\n**Note.** {note}" for note in result.get("notes", [])],
    ])
