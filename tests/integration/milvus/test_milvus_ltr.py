"""The ``best`` preset (hybrid BM25 + MiniLM first stage, then the LTR reranker) on a real loopback Milvus server
(``milvus_server`` fixture), with a tiny LTR model trained here into a temporary models folder.

The LTR features read the sparse index's term statistics (document count and document frequencies); on Milvus
they come from an embedded index of the store with the same analysis (``MilvusBM25Index.term_statistics``).
Checked here: they equal a brute-force count over the store with the features' own analyzer; every feature
that reads statistics and texts is equal on Milvus and on tantivy for the same candidates; the features that
read the engine's own BM25 search (``bm25_index``, its rank, and the feedback documents of ``bm25_rocchio`` and
``bm25_rm3``) agree within a stated tolerance where the two engines analyse alike (stemmer ``none``: Milvus
Lite has no stemmer); the statistics follow the store's additions, replacements and deletions.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.context import ModelCache
from medcite.corpus.store import DocumentStore, FileStats
from medcite.index.milvus.collection import MilvusCollection
from medcite.pipeline.context import Context
from medcite.retrieve.expansion import analyzer_for
from medcite.types import Article, Hit
from tiny_models import build_tiny_bioasq

pytestmark = [pytest.mark.milvus, pytest.mark.slow]
pytest.importorskip("lightgbm")
pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")

MODEL = "medcite-ltr-bioasq"
QUESTIONS = ("Which drug treats gout?", "Patients with malaria improved on artemisinin", "asthma burden in cities")
#: features read from the engine's own BM25 search, not from the statistics (see the module docstring)
SEARCHED = ("bm25_index", "bm25_index_rank", "bm25_rocchio", "bm25_rm3")


def _sets(uri: str, *more: str) -> list[str]:
    return ["index.backend=milvus", f"index.milvus.uri={uri}", *more]


def _flags(sets: list[str]) -> list[str]:
    return [x for s in sets for x in ("--set", s)]


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_bioasq(tmp_path_factory.mktemp("milvus-ltr"))


@pytest.fixture(scope="module")
def models_dir(corpus: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding ``medcite-ltr-bioasq`` trained as `medcite models build best` trains it (hybrid
    first stage, every default feature group, the MiniLM cosine), on the tiny corpus in seconds."""
    data, store = corpus
    folder = tmp_path_factory.mktemp("models")
    _invoke(["--quiet", "train", "ltr", "--data", str(data), "--corpus", str(store), "--out", str(folder / MODEL),
             "--min-questions", "3", "--trees", "30"])
    return folder


@pytest.fixture
def models(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(models_dir))  # never the user's ~/.cache/medcite/models
    yield models_dir


@pytest.fixture(scope="module")
def cache() -> Iterator[ModelCache]:
    """One model cache for the module's contexts (MiniLM loads once)."""
    shared = ModelCache()
    yield shared
    shared.close()


def _milvus(settings: Any, store: DocumentStore, cache: ModelCache) -> Context:
    """A context over ``store`` whose Milvus collection exists (made as `medcite index milvus` makes it)."""
    ctx = Context(settings, store, models=cache)
    MilvusCollection.open(ctx, create=True)
    return ctx


def _candidates(ref: Context, question: str, articles: dict[str, Article]) -> list[Hit]:
    """Every article as a candidate, in the order of the embedded BM25 (then by PMID)."""
    first = ref.index("bm25").search(question, len(articles))
    rest = [p for p in sorted(articles) if p not in {h.pmid for h in first}]
    return [*first, *(Hit(p, 0.0, len(first) + i + 1) for i, p in enumerate(rest))]


def test_best_runs_on_milvus_end_to_end(corpus: tuple[Path, Path], milvus_server: str, models: Path,
                                        cache: ModelCache, tmp_path: Path) -> None:
    _, store = corpus
    sets = _sets(milvus_server)
    _invoke(["--quiet", "index", "milvus", "--store", str(store), "--preset", "best", *_flags(sets)])
    run = tmp_path / "best.trec"
    _invoke(["--quiet", "search", "--preset", "best", "--corpus", str(store), "--output", str(run), "-k", "10",
             *_flags(sets), "Which drug treats gout?"])
    ranked = [line.split() for line in run.read_text(encoding="utf-8").splitlines()]
    assert len(ranked) == 10 and [int(r[3]) for r in ranked] == list(range(1, 11))
    scores = [float(r[4]) for r in ranked]
    assert all(np.isfinite(scores)) and scores == sorted(scores, reverse=True)
    assert {r[2] for r in ranked[:2]} == {"1009", "1010"}  # the two gout trials (gold) first
    with DocumentStore.open(store) as docs, Context(load_settings("best", sets), docs, models=cache) as ctx:
        reranker = ctx.build("rerank", ctx.settings.rerank)
        assert type(reranker).__name__ == "LTRReranker" and type(ctx.index("bm25")).__name__ == "MilvusBM25Index"
        articles = {a.pmid: a for a in docs.iter_articles()}
        for question in QUESTIONS:
            hits = ctx.index("bm25").search(question, 20)
            _, x = reranker.matrix(question, hits, articles)
            assert x.shape == (len(hits), len(reranker.features.names)) and np.isfinite(x).all()


def test_term_statistics_count_the_store_with_the_features_analyzer(corpus: tuple[Path, Path], milvus_server: str,
                                                                   cache: ModelCache) -> None:
    _, store = corpus
    for stemmer in ("english", "none"):
        settings = load_settings("best", _sets(milvus_server, f"indexes.bm25.stemmer={stemmer}"))
        with DocumentStore.open(store) as docs, _milvus(settings, docs, cache) as ctx:
            index = ctx.index("bm25")
            stats = index.term_statistics()
            assert stats is index.term_statistics()  # opened once per index object, not per call
            analyze = analyzer_for(settings.indexes["bm25"])
            df: dict[str, int] = {}
            for article in docs.iter_articles():
                for term in set(analyze(article.text)):
                    df[term] = df.get(term, 0) + 1
            assert len(stats) == len(docs) == 48
            assert {t: stats.doc_freq(t) for t in df} == df
            assert stats.doc_freq("zzzunseen") == 0
            if stemmer == "english":
                assert df["treat"] == 24 and "treats" not in df  # stemmed, as the features analyse


@pytest.mark.parametrize("stemmer", ["english", "none"])
def test_features_on_milvus_equal_the_tantivy_ones(corpus: tuple[Path, Path], milvus_server: str, models: Path,
                                                   cache: ModelCache, stemmer: str) -> None:
    _, store = corpus
    analysis = f"indexes.bm25.stemmer={stemmer}"
    settings, reference = load_settings("best", _sets(milvus_server, analysis)), load_settings("best", [analysis])
    with DocumentStore.open(store) as docs, _milvus(settings, docs, cache) as ctx, \
            Context(reference, docs, models=cache) as ref:
        milvus, tantivy = ctx.build("rerank", settings.rerank), ref.build("rerank", reference.rerank)
        assert type(milvus).__name__ == type(tantivy).__name__ == "LTRReranker"
        assert (type(ctx.index("bm25")).__name__, type(ref.index("bm25")).__name__) == ("MilvusBM25Index",
                                                                                          "TantivyIndex")
        names = milvus.features.names
        assert names == tantivy.features.names and any(n.startswith("cos_") for n in names)
        articles = {a.pmid: a for a in docs.iter_articles()}
        for question in QUESTIONS:
            hits = _candidates(ref, question, articles)
            _, got = milvus.matrix(question, hits, articles)
            _, want = tantivy.matrix(question, hits, articles)
            assert got.shape == want.shape == (48, len(names))
            assert np.isfinite(got).all() and np.isfinite(want).all()
            for j, name in enumerate(names):
                if name.startswith("cos_"):
                    # each engine stores the vectors of its own encoding run: MiniLM's floats move by ~1e-5 with
                    # the batching (the 48 articles are one batch in both here, so near-tied ranks do not flip)
                    np.testing.assert_allclose(got[:, j], want[:, j], atol=1e-4, err_msg=name)
                elif name not in SEARCHED:  # statistics and texts: the same numbers
                    np.testing.assert_allclose(got[:, j], want[:, j], rtol=1e-12, atol=1e-12, err_msg=name)
                elif stemmer == "none" and name in ("bm25_index_rank", "bm25_rocchio"):
                    # the same analysis: the two engines rank alike, so the same feedback documents
                    np.testing.assert_allclose(got[:, j], want[:, j], rtol=1e-9, atol=1e-9, err_msg=name)
                elif stemmer == "none":
                    # scores from each engine's own BM25 statistics (here within 7%: Milvus Lite's idf of rare
                    # terms is higher than tantivy's); RM3 weighs its feedback documents by those scores
                    np.testing.assert_allclose(got[:, j], want[:, j], rtol=0.1, atol=1e-6, err_msg=name)


def test_term_statistics_follow_the_store_updates(milvus_server: str, cache: ModelCache, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    _, store = build_tiny_bioasq(tmp_path)
    settings = load_settings("best", _sets(milvus_server))
    analyze = analyzer_for(settings.indexes["bm25"])
    with DocumentStore.open(store) as docs, _milvus(settings, docs, cache) as ctx:
        stats = ctx.index("bm25").term_statistics()
        assert len(stats) == 48 and stats.doc_freq(analyze("zygomycosis")[0]) == 0
    # the first count (of a whole store, maybe PubMed) is said once; later opens only apply the changes
    said = [r for r in caplog.records if "counting the term statistics" in r.getMessage()]
    assert len(said) == 1 and "48 articles" in said[0].getMessage()
    caplog.clear()
    with DocumentStore.create(store) as docs, docs.transaction() as tx:
        tx.upsert([Article("2001", "Zygomycosis after transplant", "Amphotericin treats zygomycosis."),
                   Article("2002", "Mucormycosis", "Zygomycosis is also called mucormycosis."),
                   Article("1009", "Allopurinol for gout trial 0", "Allopurinol lowered urate in gout.", version=2)],
                  FileStats("update"))
        tx.delete(["1048"], FileStats("update"))
    reference = load_settings("best")
    with DocumentStore.open(store) as docs, Context(settings, docs, models=cache) as ctx, \
            Context(reference, docs, models=cache) as ref:
        milvus, tantivy = ctx.index("bm25"), ref.index("bm25")
        stats = milvus.term_statistics()
        assert len(stats) == len(docs) == len(milvus) == 49  # + 2001, 2002, - 1048
        assert stats.doc_freq(analyze("zygomycosis")[0]) == 2 and stats.doc_freq(analyze("urate")[0]) == 1
        terms = {t for a in docs.iter_articles() for t in analyze(a.text)}
        assert {t: stats.doc_freq(t) for t in terms} == {t: tantivy.doc_freq(t) for t in terms}
        assert milvus.search("zygomycosis amphotericin", 1)[0].pmid == "2001"
    assert not [r for r in caplog.records if "counting the term statistics" in r.getMessage()]
