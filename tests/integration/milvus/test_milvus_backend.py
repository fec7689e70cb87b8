"""The Milvus backends against a real loopback server (``milvus-lite server``, started by the ``milvus_server``
fixture in tests/conftest.py): build from a store of real PubMed records, BM25, dense and hybrid search,
an NLM update file's upserts and deletions, a preset run through the CLI, and the four errors a user meets.

The dense index uses the ``hash-bow`` test encoder (a real bag-of-words encoder, no model to load), so
Milvus's exact (flat) results can be compared with FAISS flat on the same vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.corpus.ingest import ingest
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError, IndexMismatchError, InputError
from medcite.pipeline.context import Context
from medcite.retrieve.fusion import rrf
from medcite.types import Article

pytestmark = [pytest.mark.milvus, pytest.mark.slow]

BASE = "pubmed20n0014_first200.xml.gz"
UPDATE = "pubmed21n1298_first300_plus_deletecitation.xml.gz"
#: two PMIDs the update file deletes, and one it replaces (versions 1 then 2)
DELETED, REPLACED = ("31688362", "31764432"), "30271887"
ENCODER = {"backend": "hash-bow", "dim": 64}


def _sets(uri: str, *more: str) -> list[str]:
    return ["index.backend=milvus", f"index.milvus.uri={uri}", f"indexes.dense.encoder={json.dumps(ENCODER)}",
            "indexes.dense.index_type=flat", "indexes.bm25.stemmer=none", *more]


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("milvus-store") / "store"
    with DocumentStore.create(path) as s:
        ingest([shared_data / "pubmed_xml" / BASE], s)
        with s.transaction() as tx:
            tx.upsert([Article(p, f"Placeholder record {p}", "Soon deleted or replaced by the update file.")
                       for p in (*DELETED, REPLACED)], FileStats("fixture"))
    yield path


@pytest.fixture(scope="module")
def built(store: Path, milvus_server: str) -> dict[str, Any]:
    out = _invoke(["--quiet", "index", "milvus", "--store", str(store), "--json", *_flag_sets(_sets(milvus_server))])
    return dict(json.loads(out))


def _layout(settings: Any) -> str:
    """The name of the Milvus collection that serves these settings' indexes (its layout: analysis, BM25
    parameters, vector fields)."""
    from medcite.index.milvus.layout import Layout

    return json.dumps(Layout.of(settings).identity(), sort_keys=True)


def _flag_sets(sets: list[str]) -> list[str]:
    return [x for s in sets for x in ("--set", s)]


def _overlap(a: list[Any], b: list[Any]) -> float:
    return len({h.pmid for h in a} & {h.pmid for h in b}) / max(len(a), 1)


def test_build_then_bm25_dense_and_hybrid_search(store: Path, milvus_server: str, built: dict[str, Any]) -> None:
    with DocumentStore.open(store) as docs:
        assert built["full"] and built["added"] == built["docs"] == len(docs) == 203
        titles = [a.title for a in list(docs.iter_articles())[:40:4]]
        settings = load_settings("hybrid", _sets(milvus_server))
        embedded = load_settings("hybrid", [f"indexes.dense.encoder={json.dumps(ENCODER)}",
                                            "indexes.bm25.stemmer=none"])
        with Context(settings, docs) as ctx, Context(embedded, docs) as ref:
            bm25, dense = ctx.index("bm25"), ctx.index("dense")
            tantivy, faiss = ref.index("bm25"), ref.index("dense")
            assert len(bm25) == len(dense) == 203
            for title in titles:
                got, want = bm25.search(title, 10), tantivy.search(title, 10)
                assert got[0].pmid == want[0].pmid  # the article whose title it is
                assert _overlap(got, want) >= 0.7, (title, got, want)
                # exact (flat) inner product: the same neighbours as FAISS flat on the same vectors
                d_got, d_want = dense.search(title, 10), faiss.search(title, 10)
                assert [round(h.score, 4) for h in d_got] == pytest.approx([round(h.score, 4) for h in d_want],
                                                                           abs=1e-3)
                assert _overlap(d_got, d_want) >= 0.9
            assert bm25.search_many(["", "the of and"], 5) == [[], []]
            hybrid = ctx.build("retriever", settings.retrieve.branches[0])
            assert type(hybrid).__name__ == "MilvusHybridRetriever"
            for title in titles[:4]:
                server = hybrid.search(title, 20)
                client = rrf([bm25.search(title, 20), dense.search(title, 20)], k=60)[:20]
                fused = {h.pmid: h.score for h in client}
                # RRF on the server = medcite's RRF of the two runs (same k, ranks from 1); ties may swap
                assert [h.pmid for h in server][:3] == [h.pmid for h in client][:3] or \
                    [round(h.score, 6) for h in server[:3]] == [round(fused[h.pmid], 6) for h in server[:3]]
                for h in server:
                    if h.pmid in fused:
                        assert h.score == pytest.approx(fused[h.pmid], rel=1e-5)
            vectors = dense.get_vectors([next(iter(docs.iter_articles())).pmid, "1"])
            assert len(vectors) == 1 and next(iter(vectors.values())).shape == (64,)


def test_update_file_upserts_and_deletes(store: Path, milvus_server: str, built: dict[str, Any],
                                          shared_data: Path, tmp_path: Path) -> None:
    with DocumentStore.create(store) as docs:
        (stats,) = ingest([shared_data / "pubmed_xml" / UPDATE], docs)
        assert stats.deleted == 2
    out = _invoke(["--quiet", "index", "milvus", "--store", str(store), "--json", *_flag_sets(_sets(milvus_server))])
    report = json.loads(out)
    assert (report["full"], report["added"], report["replaced"], report["deleted"]) == (False, 298, 1, 2)
    with DocumentStore.open(store) as docs:
        assert report["docs"] == len(docs) == 203 - 2 + 298
        newest = docs.get(REPLACED)
        assert newest is not None
        with Context(load_settings("hybrid", _sets(milvus_server)), docs) as ctx:
            bm25 = ctx.index("bm25")
            for pmid in DELETED:
                assert all(h.pmid != pmid for h in bm25.search(f"Placeholder record {pmid}", 50))
            assert bm25.search(newest.title, 1)[0].pmid == REPLACED
            assert ctx.index("dense").get_vectors(list(DELETED)) == {}
    again = json.loads(_invoke(["--quiet", "index", "milvus", "--store", str(store), "--json",
                                *_flag_sets(_sets(milvus_server))]))
    assert (again["added"], again["replaced"], again["deleted"]) == (0, 0, 0)


def test_hybrid_preset_runs_on_milvus_through_the_cli(store: Path, milvus_server: str, built: dict[str, Any],
                                                      tmp_path: Path) -> None:
    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\tpineal body melatonin\nt2\tcancer therapy\n", encoding="utf-8")
    for preset in ("hybrid", "bm25", "dal25-rrf"):
        out = tmp_path / f"{preset}.trec"
        _invoke(["--quiet", "search", "--preset", preset, "--corpus", str(store), "--topics", str(topics),
                 "--output", str(out), "-k", "10",
                 *_flag_sets(_sets(milvus_server, "llm.backend=rules", "llms.deepseek.backend=rules",
                                   "rerank.backend=none"))])
        lines = out.read_text(encoding="utf-8").splitlines()
        assert {ln.split()[0] for ln in lines} == {"t1", "t2"}, preset


def test_unreachable_server_names_the_uri_and_how_to_start_one(store: Path) -> None:
    from milvus_server import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    with DocumentStore.open(store) as docs, Context(load_settings("bm25", _sets(uri, "index.milvus.timeout_s=2")),
                                                    docs) as ctx:
        with pytest.raises(InputError) as err:
            ctx.index("bm25")
    assert uri in err.value.message and "milvus-lite server" in (err.value.hint or "")


def test_wrong_credentials_are_refused_clearly(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from milvus_server import running

    with running(tmp_path / "auth-data", auth="root:Milvus") as uri, DocumentStore.open(store) as docs:
        settings = load_settings("bm25", _sets(uri, "index.milvus.token_env=MEDCITE_TEST_MILVUS_TOKEN"))
        monkeypatch.setenv("MEDCITE_TEST_MILVUS_TOKEN", "root:wrong")
        with Context(settings, docs) as ctx, pytest.raises(ConfigError) as err:
            ctx.index("bm25")
        assert "refused the credentials" in err.value.message and "MEDCITE_TEST_MILVUS_TOKEN" in (err.value.hint or "")
        # the right token gets through to the next check: this server has no collection for the store yet
        monkeypatch.setenv("MEDCITE_TEST_MILVUS_TOKEN", "root:Milvus")
        with Context(settings, docs) as ctx, pytest.raises(InputError, match="has no collection"):
            ctx.index("bm25")


def test_missing_collection_says_which_command_builds_it(store: Path, milvus_server: str) -> None:
    with DocumentStore.open(store) as docs:
        settings = load_settings("bm25", _sets(milvus_server, "index.milvus.collection=never_built"))
        with Context(settings, docs) as ctx, pytest.raises(InputError) as err:
            ctx.index("bm25")
    assert "never_built" in err.value.message and "medcite index milvus" in (err.value.hint or "")


def test_dimension_mismatch_is_refused(store: Path, milvus_server: str) -> None:
    sets = _sets(milvus_server, "index.milvus.collection=dims_test")
    _invoke(["--quiet", "index", "milvus", "--store", str(store), *_flag_sets(sets)])
    with DocumentStore.open(store) as docs:
        other = load_settings("hybrid", [*sets, "indexes.dense.encoder.dim=16"])
        with Context(other, docs) as ctx, pytest.raises(IndexMismatchError) as err:
            ctx.index("dense")
        assert "dimension mismatch" in err.value.message and "--rebuild" in (err.value.hint or "")
        with Context(load_settings("hybrid", sets), docs) as ctx:
            import numpy as np

            with pytest.raises(IndexMismatchError, match="dimension mismatch"):
                ctx.index("dense").search_vectors(np.ones((1, 16), dtype=np.float32), 5)


def test_interrupted_first_build_resumes_where_it_stopped(store: Path, milvus_server: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite.index.milvus.collection import MilvusCollection

    sets = _sets(milvus_server, "index.milvus.collection=resume_test", "index.milvus.batch_size=40")
    real = DocumentStore.iter_articles

    def dies_after_100(self: DocumentStore, batch: int = 5000) -> Iterator[Article]:
        for i, article in enumerate(real(self, batch)):
            if i == 100:
                raise KeyboardInterrupt  # the process is stopped in the middle of the build
            yield article

    with DocumentStore.open(store) as docs:
        monkeypatch.setattr(DocumentStore, "iter_articles", dies_after_100)
        with Context(load_settings("hybrid", sets), docs) as ctx, pytest.raises(KeyboardInterrupt):
            MilvusCollection.open(ctx, create=True)
        monkeypatch.setattr(DocumentStore, "iter_articles", real)
        with Context(load_settings("hybrid", sets), docs) as ctx:
            coll = MilvusCollection.open(ctx, create=True)
            report = coll.last_report
            last = max(int(a.pmid) for a in docs.iter_articles())
            assert coll.properties()["medcite.build_after"] == str(last)
        # two batches of 40 were upserted before the stop: the second run sends only the rest
        assert report["full"] and report["added"] == len(docs) - 80 and report["docs"] == len(docs)


def test_every_preset_retrieves_from_milvus(store: Path, milvus_server: str, built: dict[str, Any]) -> None:
    """Each shipped preset (with its no-LLM swaps, no reranker) retrieves with every index on the server."""
    from medcite.config import preset_names, with_overrides
    from medcite.pipeline.retrieval import RetrievalPipeline
    from medcite.presets.offline import offline_settings
    from medcite.types import Topic

    topic = Topic("t1", "Does the pineal body produce melatonin?", "melatonin and the pineal gland", "pineal")
    failures = []
    layouts = {_layout(load_settings("offline", _sets(milvus_server)))}  # the collection `built` made
    with DocumentStore.open(store) as docs:
        for preset in preset_names():
            settings = with_overrides(offline_settings(load_settings(preset), "none"),
                                      _sets(milvus_server, "rerank.backend=none"))
            assert all(c.backend.startswith("milvus") for c in settings.indexes.values()), preset
            if _layout(settings) not in layouts:  # a preset's own BM25 parameters (CLaC 2025: Pyserini's k1/b)
                _invoke(["--quiet", "index", "milvus", "--store", str(store), "--preset", preset,
                         *_flag_sets(_sets(milvus_server))])
                layouts.add(_layout(settings))
            pipeline = RetrievalPipeline.from_settings(settings, store=docs)
            try:
                hits = pipeline.retrieve(topic).final
            finally:
                pipeline.close()
            if not hits:
                failures.append(preset)
    assert not failures, failures
