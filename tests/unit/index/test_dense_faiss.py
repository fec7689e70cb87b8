"""FAISS layouts: flat, HNSW and IVF-PQ (+ exact re-rank) agree on a clustered set; deletions are skipped."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _dense_fakes import HashEncoder

from medcite.index.dense import faiss_index as fx
from medcite.index.dense.faiss_backend import FaissConfig, FaissIndex
from medcite.index.dense.importer import import_embeddings


def clustered(n: int, dim: int, clusters: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    x = centres[rng.integers(0, clusters, size=n)] + 0.35 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def write_chunks(folder, vectors: np.ndarray, pmids: list[int], size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate(range(0, len(pmids), size)):
        np.save(folder / f"embeds_chunk_{n}.npy", vectors[start : start + size])
        (folder / f"pmids_chunk_{n}.json").write_text(json.dumps([str(p) for p in pmids[start : start + size]]))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("faiss")
    vecs = clustered(3000, 32, 20)
    pmids = list(range(1000, 4000))
    write_chunks(root / "emb", vecs, pmids, 700)
    enc = HashEncoder(32)
    out = {}
    for kind in ("flat", "hnsw", "ivfpq"):
        settings = FaissConfig(index_type=kind, chunk_size=500, vector_dtype="float32", threads=1)
        import_embeddings(root / "emb", root / kind, settings, encoder=enc)
        out[kind] = FaissIndex(root / kind, enc, settings=settings)
    return {"vecs": vecs, "pmids": pmids, "queries": clustered(40, 32, 20, seed=1), **out}


def test_flat_is_exact(corpus: dict) -> None:
    hits = corpus["flat"].search_vectors(corpus["queries"][:3], 5)
    for q, row in zip(corpus["queries"][:3], hits, strict=True):
        scores = corpus["vecs"] @ q
        expected = [str(corpus["pmids"][i]) for i in np.argsort(-scores)[:5]]
        assert [h.pmid for h in row] == expected
        assert [h.rank for h in row] == [1, 2, 3, 4, 5]
        assert row[0].score == pytest.approx(float(scores.max()), abs=1e-5)


@pytest.mark.parametrize("kind", ["hnsw", "ivfpq"])
def test_approximate_layouts_agree_with_flat_on_top_results(corpus: dict, kind: str) -> None:
    exact = corpus["flat"].search_vectors(corpus["queries"], 10)
    approx = corpus[kind].search_vectors(corpus["queries"], 10)
    recall = np.mean([len({h.pmid for h in a} & {h.pmid for h in e}) / 10 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.95
    # IVF-PQ's scores come from the exact re-rank: the same numbers as flat for the same document
    same = [(a[0].pmid == e[0].pmid, a[0].score, e[0].score) for a, e in zip(approx, exact, strict=True)]
    assert all(abs(sa - se) < 1e-5 for ok, sa, se in same if ok)


def test_ivfpq_keeps_vectors_on_disk_and_few_bytes_in_ram(corpus: dict) -> None:
    ivf = corpus["ivfpq"]
    assert ivf.manifest["index"]["type"] == "ivfpq"
    assert isinstance(ivf._index.vectors, np.memmap)
    m = ivf.manifest["index"]["pq_m"]
    assert 32 % m == 0
    # codes + ids per document, plus centroids amortised over only 3,000 documents
    assert ivf.manifest["bytes_per_doc_in_ram"] < corpus["flat"].manifest["bytes_per_doc_in_ram"]


def test_exact_rerank_orders_by_full_vectors() -> None:
    vectors = np.array([[1, 0], [0.6, 0.8], [0, 1], [0.8, 0.6]], dtype=np.float32)
    q = np.array([[1, 0]], dtype=np.float32)
    scores, rows = fx.exact_rerank(q, np.array([[2, 1, 3, -1]]), vectors, 2)
    assert rows.tolist() == [[3, 1]]
    np.testing.assert_allclose(scores, [[0.8, 0.6]])


def test_dead_rows_are_skipped_in_every_layout(corpus: dict) -> None:
    q = corpus["queries"][:1]
    for kind in ("flat", "hnsw", "ivfpq"):
        r = corpus[kind]
        top = r.search_vectors(q, 3)[0]
        live = r._index.live.copy()
        dead_row = int(np.nonzero(r._index.pmids == int(top[0].pmid))[0][0])
        r._index.live[dead_row] = False
        r._index.refresh_live()
        try:
            after = r.search_vectors(q, 3)[0]
        finally:
            r._index.live[:] = live
            r._index.refresh_live()
        assert top[0].pmid not in {h.pmid for h in after}
        assert after[0].pmid == top[1].pmid


def test_automatic_parameters_suit_small_and_large_corpora() -> None:
    assert fx.auto_pq_m(384) == 64 and fx.auto_pq_m(768) == 64 and fx.auto_pq_m(32) == 8
    assert fx.auto_nlist(3000) == 76 and fx.auto_nlist(50) == 1 and fx.auto_nlist(1_000_000) == 4000
    assert fx.auto_nbits(50, 8) == 4 and fx.auto_nbits(3000, 8) == 6 and fx.auto_nbits(100_000, 8) == 8


def test_the_faiss_thread_cap_does_not_leak_into_torch(corpus: dict) -> None:
    """FAISS and torch share one OpenMP runtime: index.dense.threads=1 must not leave torch on one thread."""
    torch = pytest.importorskip("torch")
    faiss = pytest.importorskip("faiss")
    torch.set_num_threads(2)
    before = faiss.omp_get_max_threads()
    with fx.omp_threads(1):
        assert faiss.omp_get_max_threads() == 1
    assert faiss.omp_get_max_threads() == before
    for kind in ("flat", "hnsw", "ivfpq"):  # built and searched with index.dense.threads=1
        assert corpus[kind].search_vectors(corpus["queries"][:2], 5)
    assert torch.get_num_threads() == 2
