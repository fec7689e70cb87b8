"""BM25 indexes on a tiny store: build, search, incremental update, checks on load, scores by hand."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError, CorruptIndexError, IndexMismatchError
from medcite.index.sparse.base import build_sparse, open_sparse
from medcite.registry import default_config
from medcite.types import Article

BACKENDS = ["tantivy", "bm25s"]

DOCS = [
    Article("101", "Statins lower LDL cholesterol", "Statin therapy reduces cardiovascular events."),
    Article("102", "Aspirin and bleeding", "Daily aspirin increases the risk of gastrointestinal bleeding."),
    Article("103", "Sleep apnea treatment", "CPAP is the first-line therapy for obstructive sleep apnea."),
    Article("104", "Vitamin D and bone", "Vitamin D supplements and fracture risk in older adults."),
]

def SparseSettings(**values: object):  # noqa: N802 - reads like the config it builds
    """The sparse index config of ``backend`` (default tantivy) with ``values`` set."""
    return default_config("index", **{"backend": "tantivy", **values})



def make_store(path: Path, articles: list[Article] = DOCS) -> DocumentStore:
    store = DocumentStore.create(path)
    with store.transaction() as tx:
        tx.upsert(articles, FileStats("x"))
    return store


@pytest.fixture
def store(tmp_path: Path) -> DocumentStore:
    return make_store(tmp_path / "store")


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_and_search(store: DocumentStore, tmp_path: Path, backend: str) -> None:
    report = build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend))
    assert (report.added, report.replaced, report.deleted, report.docs, report.full) == (4, 0, 0, 4, True)
    index = open_sparse(tmp_path / "idx", store)
    assert len(index) == 4
    hits = index.search("What treats obstructive sleep apnoea? CPAP", 10)
    assert hits[0].pmid == "103" and hits[0].rank == 1
    # stemming: "bleeds" finds "bleeding"; stop words alone find nothing
    assert [h.pmid for h in index.search("bleeds", 10)] == ["102"]
    assert index.search("the of and", 10) == []
    assert index.search("", 10) == []
    # special characters never raise
    for q in ['"unbalanced', "a:b (c AND) [x TO", "+-!^~*?\\/", "title:statin", "NOT", "√ ∑ 🙂"]:
        index.search(q, 5)
    many = index.search_many(["statin cholesterol", "vitamin fracture", "zzzz"], 2)
    assert [h[0].pmid if h else None for h in many] == ["101", "104", None]
    assert len(index.search("risk therapy", 1)) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_incremental_update(store: DocumentStore, tmp_path: Path, backend: str) -> None:
    settings = SparseSettings(backend=backend)
    build_sparse(store, tmp_path / "idx", settings)
    with store.transaction() as tx:
        tx.upsert(
            [
                Article("105", "Metformin in type 2 diabetes", "Metformin lowers glucose."),
                Article("102", "Aspirin and headache", "Aspirin relieves tension headache.", version=2),
            ],
            FileStats("update"),
        )
        tx.delete(["104"], FileStats("update"))
    report = build_sparse(store, tmp_path / "idx", settings)
    assert (report.added, report.replaced, report.deleted, report.docs) == (1, 1, 1, 4)
    assert report.full == (backend == "bm25s")  # bm25s rebuilds, tantivy applies only the changes
    index = open_sparse(tmp_path / "idx", store)
    assert [h.pmid for h in index.search("metformin", 10)] == ["105"]
    assert index.search("fracture vitamin", 10) == []
    assert [h.pmid for h in index.search("headache", 10)] == ["102"]
    assert index.search("gastrointestinal bleeding", 10) == []
    # nothing changed since: a no-op
    again = build_sparse(store, tmp_path / "idx", settings)
    assert (again.added, again.replaced, again.deleted, again.docs) == (0, 0, 0, 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refuses_other_store_and_settings(store: DocumentStore, tmp_path: Path, backend: str) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend))
    other = make_store(tmp_path / "other")
    with pytest.raises(IndexMismatchError, match="indexes document store"):
        build_sparse(other, tmp_path / "idx", SparseSettings(backend=backend))
    with pytest.raises(IndexMismatchError):
        open_sparse(tmp_path / "idx", other)
    with pytest.raises(IndexMismatchError, match="stopwords"):
        build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend, stopwords="none"))
    report = build_sparse(
        store, tmp_path / "idx", SparseSettings(backend=backend, stopwords="none"), rebuild=True
    )
    assert report.full and report.docs == 4
    assert open_sparse(tmp_path / "idx").search("the", 10)  # stop words are now indexed


@pytest.mark.parametrize("backend", BACKENDS)
def test_damaged_folder(store: DocumentStore, tmp_path: Path, backend: str) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend))
    sub = tmp_path / "idx" / backend
    victim = sub / ("meta.json" if backend == "tantivy" else "vocab.index.json")
    victim.unlink()
    with pytest.raises(CorruptIndexError):
        open_sparse(tmp_path / "idx")


def test_tantivy_damaged_segment(store: DocumentStore, tmp_path: Path) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings())
    for f in (tmp_path / "idx" / "tantivy").glob("*.idx"):
        f.unlink()
    with pytest.raises(CorruptIndexError):
        open_sparse(tmp_path / "idx").search("statin", 10)


def test_manifest_and_unfinished_folder(store: DocumentStore, tmp_path: Path) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings())
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["kind"] == "medcite-sparse-index" and manifest["backend"] == "tantivy"
    assert manifest["corpus"]["store_id"] == store.store_id and manifest["corpus"]["seq"] == store.seq
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "something.txt").write_text("x")
    with pytest.raises(CorruptIndexError, match="no manifest.json"):
        build_sparse(store, junk, SparseSettings())
    with pytest.raises(ConfigError, match="refusing to clear"):
        build_sparse(store, junk, SparseSettings(), rebuild=True)


def test_tantivy_rejects_other_k1_b() -> None:
    from medcite.index.sparse.tantivy_backend import TantivyIndex

    with pytest.raises(ConfigError, match="bm25s"):
        SparseSettings(k1=0.9, b=0.4)
    with pytest.raises(ConfigError):
        TantivyIndex.check_settings(SparseSettings(stemmer="porter"))


def _lucene_bm25(tf: int, df: int, n: int, dl: int, avgdl: float, k1: float, b: float) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


THREE = [
    Article("1", "cat sat", "on a mat"),
    Article("2", "dog dog", "barked"),
    Article("3", "cat", "and dog fight"),
]
# analysed (stop words "on", "a", "and" removed): [cat sat mat] [dog dog bark] [cat dog fight]; avgdl = 3


@pytest.mark.parametrize(
    ("backend", "k1", "b", "scale"),
    [("bm25s", 0.9, 0.4, 1.0), ("bm25s", 1.2, 0.75, 1.0), ("tantivy", 1.2, 0.75, 2.2)],
)
def test_scores_match_hand_computed_bm25(
    tmp_path: Path, backend: str, k1: float, b: float, scale: float
) -> None:
    """Lucene's BM25 by hand on a 3-document corpus (tantivy multiplies by k1 + 1 = 2.2)."""
    store = make_store(tmp_path / "s", THREE)
    build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend, k1=k1, b=b))
    index = open_sparse(tmp_path / "idx")
    hits = {h.pmid: h.score for h in index.search("dog", 10)}
    assert hits == pytest.approx(
        {
            "2": scale * _lucene_bm25(2, 2, 3, 3, 3.0, k1, b),
            "3": scale * _lucene_bm25(1, 2, 3, 3, 3.0, k1, b),
        },
        rel=1e-5,
    )
    # a repeated query term counts twice; two terms add up
    assert index.search("dog dog", 1)[0].score == pytest.approx(2 * hits["2"], rel=1e-5)
    both = {h.pmid: h.score for h in index.search("cat dog", 10)}
    assert both["3"] == pytest.approx(scale * 2 * _lucene_bm25(1, 2, 3, 3, 3.0, k1, b), rel=1e-5)


def test_tantivy_fielded_search(store: DocumentStore, tmp_path: Path) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings(fields=["title"]))
    index = open_sparse(tmp_path / "idx")
    # "therapy" is in the abstracts of 101 and 103 only, never in a title
    assert index.search("therapy", 10) == []
    assert [h.pmid for h in index.search("statins", 10)] == ["101"]


class _NoFullScan(DocumentStore):
    """A store whose full scan fails: an incremental update must read only the changes."""

    def iter_articles(self, batch: int = 5000) -> Iterator[Article]:
        raise AssertionError("incremental update read the whole store")


def test_tantivy_update_reads_only_changes(
    store: DocumentStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings())
    with store.transaction() as tx:
        tx.upsert([Article("101", "Statins again", "Statins and muscle pain.", version=2)], FileStats("u"))
    spy = _NoFullScan.open(store.path)
    report = build_sparse(spy, tmp_path / "idx", SparseSettings())
    assert (report.added, report.replaced, report.deleted, report.full) == (0, 1, 0, False)
    index = open_sparse(tmp_path / "idx")
    # the replaced document is there once, with its new text; the unchanged ones are not duplicated
    assert [h.pmid for h in index.search("statins", 10)] == ["101"]
    assert [h.pmid for h in index.search("muscle", 10)] == ["101"]
    assert len(index) == 4 and [h.pmid for h in index.search("aspirin", 10)] == ["102"]
    with store.transaction() as tx:
        tx.delete(["103"], FileStats("d"))
    open_sparse(tmp_path / "idx", store)
    assert "behind its store" in caplog.text


def test_bm25s_without_pystemmer(monkeypatch: pytest.MonkeyPatch, store: DocumentStore, tmp_path: Path) -> None:
    import sys

    from medcite.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "Stemmer", None)  # makes `import Stemmer` fail
    with pytest.raises(MissingExtraError, match="PyStemmer") as err:
        build_sparse(store, tmp_path / "idx", SparseSettings(backend="bm25s"))
    assert err.value.hint == "pip install 'medcite[bm25s]'"
    report = build_sparse(store, tmp_path / "idx", SparseSettings(backend="bm25s", stemmer="none"))
    assert report.docs == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_doc_freq_counts_documents_per_index_term(store: DocumentStore, tmp_path: Path, backend: str) -> None:
    build_sparse(store, tmp_path / "idx", SparseSettings(backend=backend))
    index = open_sparse(tmp_path / "idx", store)
    assert index.doc_freq("therapi") == 2  # "therapy" in 101 and 103, stemmed as the index stores it
    assert index.doc_freq("risk") == 2
    assert index.doc_freq("aspirin") == 1
    assert index.doc_freq("absent") == 0
