"""benchmarks/bench_scale.py: assembled documents and vectors, growth fits, the SCALE.md section, and a tiny
end-to-end run of its measured phases (store, tantivy, FAISS IVF-PQ/flat, serving) on real abstracts."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from bench_modules import load_bench

scale = load_bench("bench_scale")


def toy_pool(n: int = 20, dim: int = 8) -> object:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    sentences = [[f"abstract{i} sentence{j} ." for j in range(3 + i % 8)] for i in range(n)]
    return scale.Pool([str(1000 + i) for i in range(n)], [f"title {i}" for i in range(n)], sentences, vecs,
                      ["q"], vecs[:1], {"dim": dim})


def test_assembled_documents_follow_their_composition_and_are_reproducible() -> None:
    pool = toy_pool()
    docs = list(scale.documents(pool, 120))
    assert [d.pmid for d in docs[:20]] == pool.pmids  # the real abstracts come first, as they are
    assert docs[20].pmid == str(scale.FIRST_SYNTHETIC_PMID)
    assert [d.pmid for d in docs] == [str(p) for p in scale.document_pmids(pool, 120)]
    comp = scale.composition(pool, 100)
    for j, doc in enumerate(docs[20:]):
        a, b = int(comp.primary[j]), int(comp.secondary[j])
        assert a != b and doc.title == pool.titles[a]
        assert doc.abstract.count(f"abstract{a} ") == comp.from_primary[j] >= 1
        assert doc.abstract.count(f"abstract{b} ") == comp.from_secondary[j]
        assert 1 <= comp.from_primary[j] + comp.from_secondary[j] <= 10
    assert [d.abstract for d in scale.documents(pool, 120)] == [d.abstract for d in docs]
    vecs = np.concatenate(list(scale.document_vectors(pool, 120, step=33)))
    assert vecs.shape == (120, 8)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vecs[:20], pool.vectors)
    # an assembled vector is closest to its primary abstract's (70 % of its sentences, little noise)
    sims = vecs[20:] @ pool.vectors.T
    assert np.mean(np.argmax(sims, axis=1) == comp.primary) > 0.6


def test_exact_top_matches_brute_force() -> None:
    pool = toy_pool()
    vecs = np.concatenate(list(scale.document_vectors(pool, 90)))
    q = vecs[[3, 40]]
    top = scale.exact_top(pool, 90, q, 5)
    want = np.argsort(-(q @ vecs.T), axis=1)[:, :5]
    pmids = scale.document_pmids(pool, 90)
    assert top == [[str(int(pmids[r])) for r in row] for row in want]


def test_growth_fits_recover_known_laws() -> None:
    ns = [100_000, 300_000, 1_000_000]
    a, b = scale.fit_linear(ns, [5 + 2 * n for n in ns])
    assert a == pytest.approx(5, abs=1e-3) and b == pytest.approx(2)
    c, e = scale.fit_power(ns, [3 * n**0.5 for n in ns])
    assert c == pytest.approx(3) and e == pytest.approx(0.5)


def test_milvus_plan_needs_more_nodes_for_hnsw_than_ivf_pq() -> None:
    plan = {row["index"].split()[0]: row for row in scale.milvus_plan(36_000_000, 768, 80.0)}
    assert plan["HNSW"]["query_nodes"] > plan["IVF_PQ"]["query_nodes"] >= 2
    assert plan["HNSW"]["dense_gib"] == pytest.approx(36e6 * (4 * 768 + 128) / 2**30, rel=1e-2)


def test_scale_section_replaces_only_its_own_section(tmp_path: Path) -> None:
    md = tmp_path / "SCALE.md"
    md.write_text("# Scale\n\n## Sync\nkeep me\n\n## Scale: measured and projected\nold\n\n### sub\nold too\n\n"
                  "## Milvus\nkeep me too\n")
    scale.write_scale_section(md, "## Scale: measured and projected\nnew\n\n### sub\nnew too\n")
    assert md.read_text() == ("# Scale\n\n## Sync\nkeep me\n\n## Scale: measured and projected\nnew\n\n### sub\n"
                              "new too\n\n## Milvus\nkeep me too\n")
    fresh = tmp_path / "NEW.md"
    scale.write_scale_section(fresh, "## Scale: measured and projected\nbody\n")
    assert fresh.read_text() == "# Scale\n\n## Scale: measured and projected\nbody\n"


@pytest.mark.slow
def test_tiny_scale_run_measures_every_phase(shared_data: Path, tmp_path: Path) -> None:
    """Two tiny sizes through the real phases (each its own measured process) and the projection."""
    args = argparse.Namespace(work_dir=tmp_path, data_dir=shared_data, n_encode=40, n_queries=25, threads=1,
                              flat_max=200, hnsw_max=0, reuse=False, milvus="not measured", no_write=True,
                              milvus_max=200)
    pool = scale.build_pool(shared_data, tmp_path / "pool", args.n_encode, args.n_queries)
    assert len(pool) == 40 and pool.vectors.shape == (40, 384) and pool.encode["docs_per_cpu_s"] > 0
    results = [scale.measure_size(args, pool, n) for n in (200, 400)]
    for res in results:
        se = res["serve_embedded"]
        assert res["store"]["docs"] == res["bm25_build"]["docs"] == res["ivfpq_build"]["rows"] == res["docs"]
        assert se["bm25"]["latency"]["n"] == se["dense"]["latency"]["n"] == se["hybrid"]["latency"]["n"] == 25
        assert se["dense"]["recall@10"] > 0.5 and res["ivfpq_build"]["peak_rss_mib"] > 0
        assert se["memory_after_queries"]["RssAnon"] > 0
    # flat is exact: it must agree with the brute-force truth the recall is measured against
    assert results[0]["serve_flat"]["dense"]["recall@10"] == pytest.approx(1.0, abs=0.01)
    assert "serve_flat" not in results[1]  # above --flat-max
    milvus = results[0]["milvus"]  # a loopback milvus-lite server, where the [milvus] extra is installed
    if importlib.util.find_spec("milvus_lite") and importlib.util.find_spec("pymilvus"):
        assert milvus["bm25"]["n"] == milvus["hybrid"]["n"] == 25 and milvus["dense_recall@10"] > 0.5
        assert milvus["disk_bytes"] > 0 and milvus["server_rss_mib"] > 0
    else:
        assert "not installed" in milvus["skipped"]
    assert "milvus" not in results[1]  # above --milvus-max
    assert not (tmp_path / "n400" / "emb").exists()
    assert json.loads((tmp_path / "n400" / "result.json").read_text())["docs"] == 400
    out = scale.finish(args, pool, results)
    assert out["projection"]["target_docs"] == 36_000_000
    assert out["projection"]["bm25_disk"]["per_doc"] > 0
    bench_md, scale_md = scale.report(out)
    assert scale_md.startswith(scale.SECTION) and "| 400 |" in bench_md
