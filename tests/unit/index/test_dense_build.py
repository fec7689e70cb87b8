"""Dense builds from the document store: chunked, resumable, following updates and deletions."""

from __future__ import annotations

import pytest
from _dense_fakes import HashEncoder, fill_store, make_articles

from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import IndexMismatchError, InputError
from medcite.index.dense import folder as fo
from medcite.index.dense.build import build_dense_index
from medcite.index.dense.faiss_backend import FaissConfig, FaissIndex
from medcite.types import Article


def settings(**kw: object) -> FaissConfig:
    return FaissConfig(chunk_size=10, threads=1, **kw)  # type: ignore[arg-type]


def top(index_dir, encoder, query: str, k: int = 3) -> list[str]:
    return [h.pmid for h in FaissIndex(index_dir, encoder).search(query, k)]


def test_build_finds_each_article_by_its_own_text(tmp_path) -> None:
    arts = make_articles(35)
    store = fill_store(tmp_path / "store", arts)
    enc = HashEncoder()
    manifest = build_dense_index(store, tmp_path / "dense", settings(), encoder=enc)
    assert manifest["counts"] == {"rows": 35, "live": 35, "dim": 16}
    assert manifest["corpus"]["store_id"] == store.store_id and manifest["corpus"]["seq"] == store.seq
    assert manifest["encoder"]["fingerprint"] == enc.fingerprint
    assert not (tmp_path / "dense" / "chunks").exists()
    r = FaissIndex(tmp_path / "dense", enc)
    for a in (arts[0], arts[17], arts[34]):
        assert r.search(a.text, 1)[0].pmid == a.pmid
    assert enc.documents_encoded == 35


def test_an_interrupted_build_resumes_after_the_last_finished_chunk(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(35))
    out = tmp_path / "dense"
    with pytest.raises(KeyboardInterrupt):
        build_dense_index(store, out, settings(), encoder=HashEncoder(fail_after_calls=1))
    assert sorted(p.name for p in (out / "chunks").glob("*_chunk_*")) == ["embeds_chunk_0.npy", "pmids_chunk_0.json"]
    assert not fo.has_index(out)
    again = HashEncoder()
    manifest = build_dense_index(store, out, settings(), encoder=again)
    assert again.documents_encoded == 25 and again.calls == 3  # chunks 1, 2, 3 (10 + 10 + 5)
    assert manifest["counts"]["live"] == 35
    fresh = tmp_path / "fresh"
    build_dense_index(store, fresh, settings(), encoder=HashEncoder())
    for q in ("insulin diabetes", "malaria parasite study 35", "sleep apnea"):
        assert top(out, again, q, 5) == top(fresh, again, q, 5)


def test_resuming_with_another_encoder_is_refused_unless_rebuilt(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(25))
    out = tmp_path / "dense"
    with pytest.raises(KeyboardInterrupt):
        build_dense_index(store, out, settings(), encoder=HashEncoder(fail_after_calls=1))
    with pytest.raises(IndexMismatchError, match="unfinished build"):
        build_dense_index(store, out, settings(), encoder=HashEncoder(name="other"))
    other = HashEncoder(name="other")
    build_dense_index(store, out, settings(), encoder=other, rebuild=True)
    assert other.documents_encoded == 25


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivfpq"])
def test_updates_add_replace_and_delete(tmp_path, kind: str) -> None:
    arts = make_articles(30)
    store = fill_store(tmp_path / "store", arts)
    out, enc = tmp_path / "dense", HashEncoder()
    build_dense_index(store, out, settings(index_type=kind), encoder=enc)
    new = Article("500", "zebrafish regeneration fins", "zebrafish regrow fins")
    replaced = Article(arts[3].pmid, "octopus cognition", "octopus arms think", version=2)
    with store.transaction() as tx:
        tx.upsert([new, replaced], FileStats(path="update"))
        tx.delete([arts[7].pmid], FileStats(path="update"))
    enc.documents_encoded = 0
    manifest = build_dense_index(store, out, settings(index_type=kind), encoder=enc)
    assert enc.documents_encoded == 2  # only the new and the replaced article
    assert manifest["counts"] == {"rows": 32, "live": 30, "dim": 16}
    assert manifest["corpus"]["seq"] == store.seq
    r = FaissIndex(out, enc)
    assert r.search("zebrafish regeneration fins zebrafish regrow fins", 1)[0].pmid == "500"
    assert r.search(replaced.text, 1)[0].pmid == arts[3].pmid
    found = {h.pmid for h in r.search(arts[7].text, 30)}
    assert arts[7].pmid not in found and len(found) == 30
    old_hits = r.search(arts[3].text, 30)
    assert [h.pmid for h in old_hits].count(arts[3].pmid) == 1  # no stale duplicate row
    # nothing changed: nothing encoded, manifest unchanged
    enc.documents_encoded = 0
    assert build_dense_index(store, out, settings(index_type=kind), encoder=enc)["counts"]["rows"] == 32
    assert enc.documents_encoded == 0


def test_many_deletions_compact_the_index_without_re_encoding(tmp_path) -> None:
    arts = make_articles(40)
    store = fill_store(tmp_path / "store", arts)
    out, enc = tmp_path / "dense", HashEncoder()
    build_dense_index(store, out, settings(), encoder=enc)
    with store.transaction() as tx:
        tx.delete([a.pmid for a in arts[:15]], FileStats(path="deletions"))
    enc.documents_encoded = 0
    manifest = build_dense_index(store, out, settings(), encoder=enc)
    assert enc.documents_encoded == 0
    assert manifest["counts"] == {"rows": 25, "live": 25, "dim": 16}
    assert manifest["files"]["vectors"] != "vectors.1.bin"
    assert sorted(p.name for p in out.glob("vectors.*.bin")) == [manifest["files"]["vectors"]]
    assert FaissIndex(out, enc).search(arts[20].text, 1)[0].pmid == arts[20].pmid


def test_changing_the_layout_reuses_stored_vectors(tmp_path) -> None:
    arts = make_articles(30)
    store = fill_store(tmp_path / "store", arts)
    out, enc = tmp_path / "dense", HashEncoder()
    build_dense_index(store, out, settings(), encoder=enc)
    enc.documents_encoded = 0
    manifest = build_dense_index(store, out, settings(index_type="hnsw"), encoder=enc, relayout=True)
    assert manifest["index"]["type"] == "hnsw" and enc.documents_encoded == 0
    assert FaissIndex(out, enc).search(arts[9].text, 1)[0].pmid == arts[9].pmid
    # without relayout an update keeps the layout the index has
    kept = build_dense_index(store, out, settings(index_type="flat"), encoder=enc)
    assert kept["index"]["type"] == "hnsw"
    # a pure re-layout needs no encoder model at all (the manifest's 'minilm' is never loaded); the on-disk
    # precision is part of the layout: the stored vectors are converted, not encoded again
    ivf = build_dense_index(store, out, settings(index_type="ivfpq", vector_dtype="float32"), relayout=True)
    assert ivf["index"]["type"] == "ivfpq" and ivf["vector_dtype"] == "float32"
    assert (out / ivf["files"]["vectors"]).stat().st_size == 30 * 16 * 4
    assert FaissIndex(out, enc).search(arts[9].text, 1)[0].pmid == arts[9].pmid
    # nothing changed: a second call re-lays out nothing
    assert build_dense_index(store, out, settings(index_type="ivfpq", vector_dtype="float32"),
                             relayout=True)["files"] == ivf["files"]


def test_query_encoder_must_match_the_index(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(12))
    build_dense_index(store, tmp_path / "dense", settings(), encoder=HashEncoder())
    with pytest.raises(IndexMismatchError, match="built with encoder 'hash'"):
        FaissIndex(tmp_path / "dense", HashEncoder(name="other"))
    with pytest.raises(IndexMismatchError, match="16-d"):
        FaissIndex(tmp_path / "dense", HashEncoder(dim=8))
    r = FaissIndex(tmp_path / "dense", HashEncoder())
    with pytest.raises(IndexMismatchError, match="8-d"):
        r.search_vectors(HashEncoder(dim=8).encode_queries(["x"]), 3)


def test_an_index_follows_only_its_own_store(tmp_path) -> None:
    store = fill_store(tmp_path / "a", make_articles(12))
    other = fill_store(tmp_path / "b", make_articles(12))
    build_dense_index(store, tmp_path / "dense", settings(), encoder=HashEncoder())
    with pytest.raises(IndexMismatchError, match="does not follow the store"):
        build_dense_index(other, tmp_path / "dense", settings(), encoder=HashEncoder())


def test_an_empty_store_is_a_clear_error(tmp_path) -> None:
    store = DocumentStore.create(tmp_path / "store")
    with pytest.raises(InputError, match="empty") as err:
        build_dense_index(store, tmp_path / "dense", settings(), encoder=HashEncoder())
    assert "medcite ingest" in (err.value.hint or "")
    assert not fo.has_index(tmp_path / "dense")


def test_search_many_and_k_larger_than_the_corpus(tmp_path) -> None:
    arts = make_articles(8)
    store = fill_store(tmp_path / "store", arts)
    build_dense_index(store, tmp_path / "dense", settings(), encoder=HashEncoder())
    r = FaissIndex(tmp_path / "dense", HashEncoder())
    results = r.search_many([arts[0].text, arts[5].text], 50)
    assert [res[0].pmid for res in results] == [arts[0].pmid, arts[5].pmid]
    assert all(len(res) == 8 for res in results)
    assert [h.rank for h in results[0]] == list(range(1, 9))
    assert all(a.score >= b.score for a, b in zip(results[0], results[0][1:], strict=False))
