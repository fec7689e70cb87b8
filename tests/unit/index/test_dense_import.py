"""--from-embeddings: paired embeds_chunk_N.npy / pmids_chunk_N.json files imported without re-encoding."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _dense_fakes import HashEncoder, fill_store, make_articles

from medcite.corpus.store import FileStats
from medcite.errors import IndexMismatchError, InputError
from medcite.index.dense.build import build_dense_index
from medcite.index.dense.faiss_backend import FaissConfig, FaissIndex
from medcite.index.dense.importer import import_embeddings
from medcite.types import Article

SETTINGS = FaissConfig(chunk_size=4, threads=1)


def write_pair(folder, n: int, vectors, pmids) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"embeds_chunk_{n}.npy", np.asarray(vectors, dtype=np.float32))
    (folder / f"pmids_chunk_{n}.json").write_text(json.dumps(pmids))


def unit(i: int, dim: int = 16) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    return v


def test_import_pairs_chunks_by_number_and_searches(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(i) for i in range(6)], [str(100 + i) for i in range(6)])
    write_pair(emb, 1, [unit(i) for i in range(6, 10)], [106, 107, 108, 109])  # ints are accepted too
    enc = HashEncoder()
    manifest = import_embeddings(emb, tmp_path / "dense", SETTINGS, encoder=enc)
    assert manifest["counts"] == {"rows": 10, "live": 10, "dim": 16}
    assert manifest["corpus"]["source"] == "embeddings"
    assert enc.documents_encoded == 0
    r = FaissIndex(tmp_path / "dense", enc)
    hits = r.search_vectors(np.stack([unit(7), unit(2)]), 1)
    assert [h[0].pmid for h in hits] == ["107", "102"]
    assert hits[0][0].score == pytest.approx(1.0)


def test_a_pmid_in_two_chunks_keeps_its_last_vector(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(0), unit(1)], ["1", "2"])
    write_pair(emb, 1, [unit(5)], ["1"])
    manifest = import_embeddings(emb, tmp_path / "dense", SETTINGS, encoder=HashEncoder())
    assert manifest["counts"]["live"] == 2
    r = FaissIndex(tmp_path / "dense", HashEncoder())
    assert [h.pmid for h in r.search_vectors(unit(5)[None], 5)[0]][:1] == ["1"]
    assert r.search_vectors(unit(0)[None], 5)[0][0].score == pytest.approx(0.0)


def test_chunk_lengths_must_agree(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(0), unit(1), unit(2)], ["1", "2"])
    with pytest.raises(InputError, match="embeds_chunk_0.npy has 3 rows but pmids_chunk_0.json lists 2 PMIDs"):
        import_embeddings(emb, tmp_path / "dense", SETTINGS, encoder=HashEncoder())
    assert not (tmp_path / "dense").exists()


def test_chunks_must_share_one_embedding_size(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(0)], ["1"])
    write_pair(emb, 1, [unit(0, dim=8)], ["2"])
    with pytest.raises(InputError, match="8-d embeddings, earlier chunks 16-d"):
        import_embeddings(emb, tmp_path / "dense", SETTINGS, encoder=HashEncoder())


def test_embedding_size_must_match_the_encoder(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(0, dim=8)], ["1"])
    with pytest.raises(IndexMismatchError, match="8-d but encoder 'hash' gives 16-d") as err:
        import_embeddings(emb, tmp_path / "dense", SETTINGS, encoder=HashEncoder())
    assert "--encoder" in (err.value.hint or "")


def test_unpaired_files_nan_and_bad_pmids_are_clear_errors(tmp_path) -> None:
    emb = tmp_path / "emb"
    write_pair(emb, 0, [unit(0)], ["1"])
    np.save(emb / "embeds_chunk_1.npy", np.stack([unit(1)]))
    with pytest.raises(InputError, match="has no partner pmids_chunk_1.json"):
        import_embeddings(emb, tmp_path / "d1", SETTINGS, encoder=HashEncoder())
    write_pair(emb, 1, [np.full(16, np.nan)], ["2"])
    with pytest.raises(InputError, match="NaN"):
        import_embeddings(emb, tmp_path / "d2", SETTINGS, encoder=HashEncoder())
    write_pair(emb, 1, [unit(1)], ["PMC123"])
    with pytest.raises(InputError, match="not a PMID"):
        import_embeddings(emb, tmp_path / "d3", SETTINGS, encoder=HashEncoder())
    with pytest.raises(InputError, match="no embeds_chunk_N.npy"):
        import_embeddings(tmp_path, tmp_path / "d4", SETTINGS, encoder=HashEncoder())


def test_an_import_bound_to_a_store_follows_its_later_updates(tmp_path) -> None:
    arts = make_articles(6)
    store = fill_store(tmp_path / "store", arts)
    enc = HashEncoder()
    write_pair(tmp_path / "emb", 0, enc.encode_documents(arts), [a.pmid for a in arts])
    import_embeddings(tmp_path / "emb", tmp_path / "dense", SETTINGS, encoder=enc, store=store)
    with store.transaction() as tx:
        tx.upsert([Article("77", "zebrafish fins", "zebrafish regrow fins")], FileStats(path="u"))
        tx.delete([arts[0].pmid], FileStats(path="u"))
    enc.documents_encoded = 0
    manifest = build_dense_index(store, tmp_path / "dense", SETTINGS, encoder=enc)
    assert enc.documents_encoded == 1 and manifest["counts"]["live"] == 6
    r = FaissIndex(tmp_path / "dense", enc)
    assert r.search("zebrafish fins zebrafish regrow fins", 1)[0].pmid == "77"
    assert arts[0].pmid not in {h.pmid for h in r.search(arts[0].text, 10)}


def test_an_import_without_a_store_follows_none(tmp_path) -> None:
    write_pair(tmp_path / "emb", 0, [unit(0)], ["1"])
    import_embeddings(tmp_path / "emb", tmp_path / "dense", SETTINGS, encoder=HashEncoder())
    store = fill_store(tmp_path / "store", make_articles(3))
    with pytest.raises(IndexMismatchError, match="it was made from embeddings"):
        build_dense_index(store, tmp_path / "dense", SETTINGS, encoder=HashEncoder())
