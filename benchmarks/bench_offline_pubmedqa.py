"""The offline answer on real abstracts: held-back PubMedQA questions asked with retrieval.

The store (built once under ``benchmarks/work/offline_pubmedqa/``, gitignored) holds the shared NLM baseline
file's 30,000 abstracts and update file, and every PubMedQA dev item as an untitled article whose abstract is
the item's real text (its contexts, then its conclusion: :func:`bioasq_corpus.pubmedqa_documents`). Each
held-back PubMedQA item (the reader's test side, :func:`medcite.train.reader_data.build_data`: never trained on,
never used to choose a threshold) is asked with its question only, through the ``offline`` preset as it ships
(its own BM25 retrieval, evidence selection, sentence reader and verdict rules).

Measures, on the items whose gold answer is yes or no: verdict coverage (the share answered "Yes." or "No."),
precision of the stated verdicts and of "No." alone, the share of stated verdicts that cite the item's own
abstract, false abstention (every item's abstract is in the store, so any abstention is false), the share of
leads "The retrieved abstracts do not settle this." and "... not sure enough to say yes or no."; beside them
the trivial baseline always-yes (coverage 1, precision the share of yes). The "maybe" items are reported apart:
a verdict on one of them states more than its abstract settles.

The held-back items are halved by question (the parity of a hash of the PMID): the verdict settings of the
``offline`` preset are chosen on the ``tune`` half (``--half tune``, with ``--set generate.yes_from=...``); the
figures reported in docs/BENCHMARKS.md are the ``test`` half's, which no setting was chosen on.

    python benchmarks/bench_offline_pubmedqa.py                    # the test half (reported)
    python benchmarks/bench_offline_pubmedqa.py --half tune --set generate.no_below=0.25   # choosing a setting
    python benchmarks/bench_offline_pubmedqa.py --half all --n 40  # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bioasq_corpus  # noqa: E402
import common  # noqa: E402
from bench_offline_answer import (  # noqa: E402
    AGREE,
    NO_BELOW,
    PRECISION,
    PREDICATE_COVER,
    YES_FROM,
    Memo,
    precise,
    tally,
)

from medcite.config import load_settings  # noqa: E402
from medcite.corpus.ingest import ingest  # noqa: E402
from medcite.corpus.store import DocumentStore  # noqa: E402
from medcite.io import write_jsonl  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import Pipeline  # noqa: E402
from medcite.train.reader_data import DataOptions, build_data  # noqa: E402
from medcite.types import Topic  # noqa: E402

NAME = "offline_pubmedqa"
WORK = Path(__file__).resolve().parent / "work" / NAME
PUBMED_FILES = ("pubmed_xml/pubmed20n0014.xml.gz", "pubmed_xml/pubmed21n1298_first300_plus_deletecitation.xml.gz")
PUBMEDQA = "pubmedqa/pqal_dev.json"
#: the verdict settings shipped before this benchmark chose them (on the BioASQ store's snippet collages)
PREVIOUS = ["generate.yes_from=0.65", "generate.no_below=0.3", "generate.predicate_cover=0.5",
            "generate.cue_no=true", "evidence.cover_whole=1.01"]
HALVES = {"test": ", no setting chosen on it", "tune": ", the verdict settings were chosen on it"}
TARGETS = {"verdict_coverage": 0.60, "verdict_precision": 0.90, "own_abstract_cited": 0.80}


def build_store(data_dir: Path) -> tuple[Path, dict[str, Any]]:
    store = WORK / "store"
    stats_file = WORK / "store_stats.json"
    if store.exists() and stats_file.exists():
        return store, json.loads(stats_file.read_text(encoding="utf-8"))
    WORK.mkdir(parents=True, exist_ok=True)
    docs = list(bioasq_corpus.pubmedqa_documents(data_dir / PUBMEDQA))
    write_jsonl(WORK / "pubmedqa_docs.jsonl", docs)
    with DocumentStore.create(store) as s:
        ingest([data_dir / f for f in PUBMED_FILES], s, on_error="skip")
        ingest([WORK / "pubmedqa_docs.jsonl"], s, on_error="skip")
        n = s.count()
    stats = {"pubmedqa_articles": len(docs), "pubmed_xml_files": list(PUBMED_FILES), "documents": n}
    stats_file.write_text(json.dumps(stats), encoding="utf-8")
    return store, stats


def half_of(pmid: str) -> str:
    """``tune`` or ``test``: a fixed split of the held-back items by question."""
    return "tune" if hashlib.sha256(pmid.encode()).digest()[0] % 2 == 0 else "test"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    yn = [r for r in rows if r["gold"] in ("yes", "no")]
    stated = [r for r in yn if r["verdict"] in ("yes", "no")]
    right = [r for r in stated if r["verdict"] == r["gold"]]
    said_no = [r for r in stated if r["verdict"] == "no"]
    maybe = [r for r in rows if r["gold"] == "maybe"]

    def share(part: list[Any], whole: list[Any]) -> float | None:
        return round(len(part) / len(whole), 4) if whole else None

    return {
        "items": len(rows), "yes_no_items": len(yn), "maybe_items": len(maybe),
        "verdict_coverage": share(stated, yn), "verdict_stated": len(stated),
        "verdict_precision": share(right, stated), "verdict_right": len(right),
        "no_stated": len(said_no), "no_precision": share([r for r in said_no if r["gold"] == "no"], said_no),
        "no_recall": share([r for r in said_no if r["gold"] == "no"], [r for r in yn if r["gold"] == "no"]),
        "own_abstract_cited": share([r for r in stated if r["own_cited"]], stated),
        "own_abstract_in_evidence": share([r for r in yn if r["own_in_evidence"]], yn),
        "false_abstention": share([r for r in rows if r["abstained"]], rows),
        "unsettled": share([r for r in yn if r["verdict"] == "unsettled"], yn),
        "undecided": share([r for r in yn if r["verdict"] == "undecided"], yn),
        "mixed": share([r for r in yn if r["verdict"] == "mixed"], yn),
        "maybe_items_given_a_verdict": share([r for r in maybe if r["verdict"] in ("yes", "no")], maybe),
        "always_yes": {"verdict_coverage": 1.0, "verdict_precision": share([r for r in yn if r["gold"] == "yes"], yn)},
        "seconds_per_question": round(sum(r["seconds"] for r in rows) / max(1, len(rows)), 3),
    }


def choose(pipe: Pipeline, items: list[Any]) -> dict[str, Any]:
    """The verdict settings chosen on ``items`` (the tune half): each item asked once, its evidence kept, then every
    setting of the grid decides its verdict; chosen: the most right verdicts with "Yes." and "No." each right
    :data:`PRECISION` of the time (a side never stated passes), ties to the stricter setting."""
    gen = pipe.generator
    memo = Memo(gen.answerer)
    gen.answerer = memo
    keys = ("yes_from", "no_below", "sentence_agree", "predicate_cover", "cue_no")
    saved = {k: getattr(gen, k) for k in keys}
    cases = []
    try:
        for it in items:
            r = pipe.answer(Topic(f"pq{int(it.pmid)}", it.question))
            if it.label in ("yes", "no") and r.evidence and not r.answer.abstained:
                cases.append((it, list(r.evidence)))
        grid = []
        for setting in itertools.product(YES_FROM, NO_BELOW, AGREE, PREDICATE_COVER, (True, False)):
            for k, v in zip(keys, setting, strict=True):
                setattr(gen, k, v)
            said = [(it.label, gen.verdict(it.question, ev)[1]) for it, ev in cases]
            grid.append(dict(zip(keys, setting, strict=True)) | tally(said))
    finally:
        gen.answerer = memo.inner
        for k, v in saved.items():
            setattr(gen, k, v)
    ok = [g for g in grid if precise(g)]
    chosen = max(ok, key=lambda g: (g["right"], g["yes_from"], -g["no_below"], g["sentence_agree"],
                                    g["predicate_cover"], not g["cue_no"]))
    shipped = next((g for g in grid if all(g[k] == saved[k] for k in keys)), None)
    best = sorted(grid, key=lambda g: (-g["right"], -g["stated"]))
    frontier = {str(pr): max((g for g in grid if g["stated"] and g["right"] >= pr * g["stated"]),
                             key=lambda g: g["right"], default=None) for pr in (0.7, 0.8, 0.85, 0.9, 0.95)}
    return {"tuning_items": len(cases), "always_yes_precision": round(
                sum(it.label == "yes" for it, _ in cases) / max(1, len(cases)), 4),
            "precision_required": PRECISION, "chosen": chosen, "shipped": shipped,
            "frontier_by_precision": frontier, "most_right": best[:10], "grid": grid}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="only the first N held-back items")
    parser.add_argument("--half", choices=("test", "tune", "all"), default="test",
                        help="the held-back half asked: test (reported), tune (settings are chosen on it) or all")
    parser.add_argument("--out", default=None, help="a tuning run: write the result as "
                        "benchmarks/work/offline_pubmedqa/OUT.json and leave the reported results alone")
    parser.add_argument("--choose", action="store_true", help="choose the verdict settings on the tune half "
                        "(writes benchmarks/results/offline_pubmedqa_choice.json)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="a settings override")
    args = parser.parse_args()
    data_dir = shared_data_dir()
    store, stats = build_store(data_dir)
    held_back = build_data(None, data_dir / PUBMEDQA, None, DataOptions()).test.pubmedqa
    items = [it for it in held_back if args.half == "all" or half_of(str(int(it.pmid))) == args.half][: args.n]
    settings = load_settings("offline", args.overrides)
    if args.choose:
        tune = [it for it in held_back if half_of(str(int(it.pmid))) == "tune"]
        with Pipeline(settings, store) as pipe:
            choice = choose(pipe, tune)
        common.write_result(f"{NAME}_choice_grid", {"grid": choice.pop("grid")}, WORK)
        common.write_result(f"{NAME}_choice", {"overrides": args.overrides} | choice)
        print(json.dumps({k: choice[k] for k in ("tuning_items", "always_yes_precision", "chosen", "shipped",
                                                  "frontier_by_precision")}, indent=1))
        return 0
    rows = ask(settings, store, items)
    result = {"store": stats, "half": args.half, "overrides": args.overrides, "summary": summarise(rows),
              "targets": TARGETS, "rows": rows, "machine": common.machine_info(), "commit": common.git_commit()}
    if args.out:  # a tuning run: kept beside the store, not among the reported results
        common.write_result(args.out, result, folder=WORK)
        print(json.dumps(result["summary"], indent=2))
        return 0
    # the same items with the verdict settings shipped before they were chosen on real abstracts
    before = summarise(ask(load_settings("offline", PREVIOUS + args.overrides), store, items))
    result["previous_settings"] = {"overrides": PREVIOUS, "summary": before}
    choice_file = common.RESULTS_DIR / f"{NAME}_choice.json"
    choice = json.loads(choice_file.read_text(encoding="utf-8")) if choice_file.exists() else None
    common.write_result(NAME, result)
    report(result, choice, args)
    print(json.dumps(result["summary"], indent=2))
    return 0


def ask(settings: Any, store: Path, items: list[Any]) -> list[dict[str, Any]]:
    """Each item's question through the pipeline: what its answer says, cites and whether it abstained."""
    rows = []
    with Pipeline(settings, store) as pipe:
        pipe.answer(Topic("warm", "Is pembrolizumab effective against melanoma?"))
        for it in items:
            pmid = str(int(it.pmid))
            t0 = time.perf_counter()
            result = pipe.answer(Topic(f"pq{pmid}", it.question))
            seconds = time.perf_counter() - t0
            a = result.answer
            lead = next((s for s in a.sentences if s.kind == "verdict"), None)
            rows.append({"pmid": pmid, "question": it.question, "gold": it.label, "verdict": a.verdict,
                         "abstained": a.abstained, "own_cited": bool(lead and pmid in lead.pmids),
                         "own_in_evidence": any(e.pmid == pmid for e in result.evidence),
                         "cited": a.pmids, "seconds": round(seconds, 3),
                         "answer": [[s.kind, s.text, list(s.pmids)] for s in a.sentences]})
    return rows


def report(result: dict[str, Any], choice: dict[str, Any] | None, args: argparse.Namespace) -> None:
    """The docs/BENCHMARKS.md section: the shipped settings beside the previous ones and always-yes."""
    now, before, stats = result["summary"], result["previous_settings"]["summary"], result["store"]

    def row(label: str, key: str, trivial: Any, target: str) -> list[Any]:
        return [label, now[key], before[key], trivial, target]

    table = common.markdown_table(
        ["measure", "offline (shipped settings)", "previous settings", "always yes", "target"],
        [row("verdict coverage (yes/no items answered Yes./No.)", "verdict_coverage", 1.0,
             f">= {TARGETS['verdict_coverage']}"),
         row("verdicts stated", "verdict_stated", now["yes_no_items"], "-"),
         row("stated verdicts right", "verdict_precision", now["always_yes"]["verdict_precision"],
             f">= {TARGETS['verdict_precision']}"),
         row('"No." stated', "no_stated", 0, "-"),
         row('"No." right', "no_precision", "-", "-"),
         row("stated verdicts citing the item's own abstract", "own_abstract_cited", "-",
             f">= {TARGETS['own_abstract_cited']}"),
         row("item's own abstract in the evidence", "own_abstract_in_evidence", "-", "-"),
         row("false abstention", "false_abstention", 0.0, "<= 0.03"),
         ['"do not settle" / "not sure enough" leads', f"{now['unsettled']} / {now['undecided']}",
          f"{before['unsettled']} / {before['undecided']}", "-", "-"],
         row('"maybe" items given a verdict', "maybe_items_given_a_verdict", 1.0, "-")])
    chosen = ""
    if choice:
        c, f = choice["chosen"], choice["frontier_by_precision"]
        settings = ", ".join(f"{k} {c[k]}" for k in ("yes_from", "no_below", "sentence_agree", "predicate_cover",
                                                     "cue_no"))
        chosen = (f"\n\nThe verdict settings were chosen on the tune half ({choice['tuning_items']} yes/no items "
                  f"with evidence; always-yes {choice['always_yes_precision']}), `--choose`: the most right verdicts "
                  f"with \"Yes.\" and \"No.\" each right {choice['precision_required']} of the time there: "
                  f"{settings} ({c['right']} right of {c['stated']} stated). The tune half's frontier (most right at "
                  f"a precision): " + "; ".join(f"{p}: {g['right']}/{g['stated']}" for p, g in f.items() if g)
                  + f". Previous settings ({', '.join(PREVIOUS)}) were chosen on the BioASQ store's snippet "
                  "collages.")
    common.update_markdown_section(NAME, f"{now['yes_no_items']} held-back PubMedQA yes/no items "
                                         f"(the {args.half} half{HALVES.get(args.half, '')}) "
                                         f"({now['maybe_items']} maybe apart) asked with retrieval over "
                                         f"{stats['documents']:,} real abstracts; preset offline"
                                         f"{' with ' + ', '.join(args.overrides) if args.overrides else ''}."
                                         f"\n\n" + table + chosen)


if __name__ == "__main__":
    sys.exit(main())
