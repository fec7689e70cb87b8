"""Choose the ``offline`` preset (no LLM, no reranker): known-item answers on PubMedQA dev.

PubMedQA PQA-L dev (``shared/data/pubmedqa``) holds a question per abstract; the corpus is the abstracts
without their conclusions (``LONG_ANSWER`` withheld, so an answer must come from the findings). For each
candidate no-LLM configuration every question is answered over that corpus and we count how often the
answer cites the source PMID at all and in its first sentence, with the mean answer length.

    python benchmarks/bench_offline_choice.py --n 80
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from medcite.config import load_settings  # noqa: E402
from medcite.corpus.store import DocumentStore, FileStats  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.pipeline import Pipeline  # noqa: E402
from medcite.types import Article, Topic  # noqa: E402

CONFIGS = {
    "offline (bm25, 10 docs, 2/doc, 5 sentences)": [],
    "narrow retrieval (question + keywords, RRF)": ['retrieve.queries=["original","keywords"]'],
    "bm25+rocchio": ['retrieve.branches=[{"backend":"bm25+rocchio"}]'],
    "1 sentence per doc": ["evidence.per_doc=1"],
}


def evaluate(store: Path, items: list[tuple[str, dict[str, Any]]], sets: list[str]) -> dict[str, Any]:
    pipeline = Pipeline(load_settings("offline", sets), store)
    start = time.perf_counter()
    cited = first = words = 0
    try:
        for pmid, item in items:
            answer = pipeline.answer(Topic(pmid, item["QUESTION"])).answer
            cited += pmid in answer.pmids
            first += bool(answer.sentences) and pmid in answer.sentences[0].pmids
            words += len(answer.text.split())
    finally:
        pipeline.close()
    n = len(items)
    return {"n": n, "source_cited": round(cited / n, 3), "source_in_first_sentence": round(first / n, 3),
            "mean_words": round(words / n, 1), "s_per_question": round((time.perf_counter() - start) / n, 3),
            "sets": sets}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=80, help="First N dev questions.")
    args = ap.parse_args()
    data = json.loads((shared_data_dir() / "pubmedqa" / "pqal_dev.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        s = DocumentStore.create(store)
        with s.transaction() as tx:
            tx.upsert([Article(p, "", " ".join(v["CONTEXTS"])) for p, v in data.items()], FileStats("pqal_dev"))
        s.close()
        items = list(data.items())[: args.n]
        results = {name: evaluate(store, items, sets) for name, sets in CONFIGS.items()}
    common.write_result("task_b_offline_choice", {"configs": results})
    for name, r in results.items():
        print(name, r)


if __name__ == "__main__":
    main()
