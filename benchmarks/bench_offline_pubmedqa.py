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

    python benchmarks/bench_offline_pubmedqa.py            # the 299 held-back items
    python benchmarks/bench_offline_pubmedqa.py --n 40     # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bioasq_corpus  # noqa: E402
import common  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="only the first N held-back items")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="a settings override")
    args = parser.parse_args()
    data_dir = shared_data_dir()
    store, stats = build_store(data_dir)
    items = build_data(None, data_dir / PUBMEDQA, None, DataOptions()).test.pubmedqa[: args.n]
    settings = load_settings("offline", args.overrides)
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
    summary = summarise(rows)
    result = {"store": stats, "overrides": args.overrides, "summary": summary, "targets": TARGETS, "rows": rows,
              "machine": common.machine_info(), "commit": common.git_commit()}
    common.write_result(NAME, result)
    table = common.markdown_table(
        ["measure", "offline", "always yes", "target"],
        [["verdict coverage (yes/no items answered Yes./No.)", summary["verdict_coverage"], 1.0,
          f">= {TARGETS['verdict_coverage']}"],
         ["stated verdicts right", summary["verdict_precision"], summary["always_yes"]["verdict_precision"],
          f">= {TARGETS['verdict_precision']}"],
         ['"No." right', summary["no_precision"], "-", "-"],
         ["stated verdicts citing the item's own abstract", summary["own_abstract_cited"], "-",
          f">= {TARGETS['own_abstract_cited']}"],
         ["item's own abstract in the evidence", summary["own_abstract_in_evidence"], "-", "-"],
         ["false abstention", summary["false_abstention"], 0.0, "<= 0.03"],
         ['"do not settle" / "not sure enough" leads', f"{summary['unsettled']} / {summary['undecided']}", "-", "-"],
         ['"maybe" items given a verdict', summary["maybe_items_given_a_verdict"], 1.0, "-"]])
    common.update_markdown_section(NAME, f"{summary['yes_no_items']} held-back PubMedQA yes/no items "
                                         f"({summary['maybe_items']} maybe apart) asked with retrieval over "
                                         f"{stats['documents']:,} real abstracts; preset offline"
                                         f"{' with ' + ', '.join(args.overrides) if args.overrides else ''}.\n\n"
                                         + table)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
