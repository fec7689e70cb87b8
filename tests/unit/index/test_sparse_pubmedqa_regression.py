"""Regression on real data: PubMedQA dev questions find their own abstract among the 651 dev abstracts.

A known-item task (each question was written from its article's title, which is not in the corpus).
Pinned values were measured when the backends were written (both k1=1.2, b=0.75); tolerance 0.005.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore, FileStats
from medcite.evaluate.retrieval import evaluate_retrieval
from medcite.index.sparse.base import build_sparse, open_sparse
from medcite.registry import default_config
from medcite.types import Article


def SparseSettings(**values: object):  # noqa: N802 - reads like the config it builds
    """The sparse index config of ``backend`` (default tantivy) with ``values`` set."""
    return default_config("index", **{"backend": "tantivy", **values})



@pytest.mark.slow
@pytest.mark.parametrize(("backend", "expected"), [("tantivy", 0.9840), ("bm25s", 0.9842)])
def test_pubmedqa_known_item_map(shared_data: Path, tmp_path: Path, backend: str, expected: float) -> None:
    data = json.loads((shared_data / "pubmedqa" / "pqal_dev.json").read_text(encoding="utf-8"))
    store = DocumentStore.create(tmp_path / "store")
    with store.transaction() as tx:
        tx.upsert([Article(p, "", " ".join([*v["CONTEXTS"], v["LONG_ANSWER"]])) for p, v in data.items()],
                  FileStats("pubmedqa"))
    build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend))
    index = open_sparse(tmp_path / "idx", store)
    pmids = list(data)
    results = index.search_many([data[p]["QUESTION"] for p in pmids], 100)
    run = dict(zip(pmids, results, strict=True))
    report = evaluate_retrieval(run, {p: {p: 1} for p in pmids}, ["MAP@10", "R@100"])
    assert report.aggregate["MAP@10"] == pytest.approx(expected, abs=0.005)
    assert report.aggregate["R@100"] > 0.99
