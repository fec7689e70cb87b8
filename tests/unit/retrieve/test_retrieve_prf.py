"""Rocchio and RM3 expansion: hand-computed weights on a tiny store, and PRF over a real BM25 index."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore, FileStats
from medcite.registry import default_config
from medcite.retrieve.prf import RM3, PRFRetriever, Rocchio, TermFilter, WeightedQuery, analyzer_for
from medcite.types import Article, Hit

DOCS = [
    Article("1", "Statins reduce LDL cholesterol in adults"),
    Article("2", "Statins lower cholesterol and reduce cardiovascular events"),
    Article("3", "Aspirin for tension headache"),
    Article("4", "Dietary fibre to reduce cholesterol"),
]
FEEDBACK = [(DOCS[0].text, 2.0), (DOCS[1].text, 1.0)]


def SparseSettings(**values: object):  # noqa: N802 - reads like the config it builds
    return default_config("index", **{"backend": "tantivy", **values})



class FixedRetriever:
    """Returns the same ranked hits for any query, and records the queries it was asked."""

    name = "fixed"

    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits
        self.asked: list[str] = []

    def search(self, query: str, k: int) -> list[Hit]:
        self.asked.append(query)
        return self.hits[:k]


@pytest.fixture()
def store(tmp_path: Path) -> DocumentStore:
    s = DocumentStore.create(tmp_path / "store")
    with s.transaction() as tx:
        tx.upsert(DOCS, FileStats("x"))
    return s


def test_analyzer_matches_bm25_analysis() -> None:
    analyze = analyzer_for(SparseSettings())
    assert analyze("The patients\u2019 Statins lowered LDL-cholesterol in 2020") == [
        "patient", "statin", "lower", "ldl", "cholesterol", "2020"
    ]
    assert analyzer_for(SparseSettings(stemmer="none", stopwords="none"))("The statins") == ["the", "statins"]


def test_rocchio_by_hand() -> None:
    # doc 1 has 5 index terms ("in" is a stop word), doc 2 has 6 ("and"): L2-normalised tf is 1/sqrt(5)
    # and 1/sqrt(6); statins, reduce and cholesterol occur in both, so their mean is the largest
    rocchio = Rocchio(analyzer_for(SparseSettings(stemmer="none")), fb_terms=3, alpha=1.0, beta=0.75)
    out = rocchio.expand("statins", FEEDBACK)
    shared = (1 / math.sqrt(5) + 1 / math.sqrt(6)) / 2
    assert list(out.weights) == ["statins", "cholesterol", "reduce"]
    assert out.weights["statins"] == pytest.approx(1 + 0.75 * shared)
    assert out.weights["cholesterol"] == pytest.approx(0.75 * shared)
    assert out.as_text(5) == "statins statins statins statins statins cholesterol reduce"


def test_rm3_by_hand() -> None:
    # P(w|d1) = 1/5, P(w|d2) = 1/6; scores 2 and 1: shared terms get 2/5 + 1/6, the top 3 renormalise to 1/3
    rm3 = RM3(analyzer_for(SparseSettings(stemmer="none")), fb_terms=3, original_weight=0.5)
    out = rm3.expand("statins", FEEDBACK)
    assert out.weights == pytest.approx({"statins": 0.5 + 0.5 / 3, "cholesterol": 0.5 / 3, "reduce": 0.5 / 3})
    # with more terms the doc-1-only terms (weighted by its higher score) come before doc-2-only terms
    wide = RM3(analyzer_for(SparseSettings(stemmer="none")), fb_terms=5).expand("statins", FEEDBACK)
    assert set(wide.weights) == {"statins", "cholesterol", "reduce", "adults", "ldl"}


def test_stemmed_terms_render_as_surface_words() -> None:
    rocchio = Rocchio(analyzer_for(SparseSettings()), fb_terms=2)
    out = rocchio.expand("statin", [("Statins statins reduce", 1.0), ("statins lowered", 1.0)])
    assert list(out.weights)[0] == "statins"  # the index term "statin" is written as its commonest word


def test_as_text_quantises_weights() -> None:
    q = WeightedQuery({"a": 1.0, "b": 0.5, "c": 0.01, "d": 0.0})
    assert q.as_text(4) == "a a a a b b c"
    assert WeightedQuery({}).as_text() == ""


def test_prf_retriever_uses_store_texts(store: DocumentStore) -> None:
    base = FixedRetriever([Hit("1", 2.0, 1), Hit("2", 1.0, 2), Hit("999", 0.5, 3)])
    rocchio = Rocchio(analyzer_for(SparseSettings(stemmer="none")), fb_terms=3)
    prf = PRFRetriever(base, store, rocchio, fb_docs=3)
    assert prf.name == "fixed+rocchio"
    prf.search("statins", 10)
    assert base.asked == ["statins", "statins statins statins statins statins cholesterol reduce"]


def test_prf_over_bm25_finds_documents_without_the_query_word(store: DocumentStore, tmp_path: Path) -> None:
    from medcite.index.sparse.base import build_sparse, open_sparse

    settings = SparseSettings()
    build_sparse(store, tmp_path / "bm25", settings)
    index = open_sparse(tmp_path / "bm25", store)
    plain = [h.pmid for h in index.search("statins", 10)]
    assert sorted(plain) == ["1", "2"]
    prf = PRFRetriever(index, store, RM3(analyzer_for(settings), fb_terms=3), fb_docs=2)
    expanded = [h.pmid for h in prf.search("statins", 10)]
    assert set(expanded[:2]) == {"1", "2"}
    assert "4" in expanded and "3" not in expanded


def test_term_filter_drops_common_short_and_numeric_terms() -> None:
    df = {"cholesterol": 30, "reduce": 5, "statins": 90}.get
    legal = TermFilter(lambda t: df(t, 0), num_docs=100, max_df=0.1)
    assert [t for t in ["cholesterol", "reduce", "x", "2020", "a" * 21, "ldl"] if legal(t)] == ["reduce", "ldl"]
    assert TermFilter()("cholesterol")  # without document frequencies only the form rules apply
    rocchio = Rocchio(analyzer_for(SparseSettings(stemmer="none")), fb_terms=3, term_filter=legal)
    out = rocchio.expand("statins", FEEDBACK)
    # statins stays (query terms are never filtered) but gets no feedback weight; cholesterol is too common
    assert list(out.weights) == ["statins", "reduce", "adults", "ldl"]
    assert out.weights["statins"] == pytest.approx(1.0)
