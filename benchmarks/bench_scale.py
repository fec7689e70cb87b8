"""Scale benchmark: the embedded indexes (tantivy BM25, FAISS IVF-PQ + exact re-rank, hybrid RRF) from 100k to
1M documents, and a projection to all of PubMed (36M).

What is real and what is assembled (say so wherever the numbers are quoted):
- **Text.** The first ``--n-encode`` abstracts of ``pubmed20n0014.xml.gz`` (real NLM records) are documents
  as they are. Every further document is *assembled from real abstract sentences*: the title of a real
  "primary" abstract A plus 6-10 sentences drawn (seeded RNG) from A and from a second real abstract B
  (each sentence from A with probability 0.7), in their original order. Assembled documents get PMIDs
  from 50,000,000 up, beyond any real PMID.
- **Vectors.** The same real abstracts are encoded with the packaged all-MiniLM-L6-v2 (384-d); the
  encoding speed measured there is what the projection of encoding cost uses. An assembled document's
  vector is ``normalise(w_A e_A + w_B e_B + noise)`` with ``w`` the share of its sentences taken from A and
  from B and Gaussian noise of norm ~``NOISE`` (so no two vectors coincide): vectors from real embeddings
  whose mixture follows the document's composition, not the encoder run on the assembled text.
- **Queries.** Real BioASQ questions (dev set), encoded with the same MiniLM.

Each build and each serving run is a subprocess of this script (``--phase``) so that its wall time, CPU
time and peak RSS (VmHWM) are its own (:func:`common.run_measured`). Builds use the library's own code
paths: :class:`DocumentStore` upserts, :func:`build_sparse` (tantivy), :func:`import_embeddings` (the
NCBI-chunk importer, i.e. ``medcite index dense import``) for the FAISS layouts. Intermediate data goes to
``--work-dir`` (default ``benchmarks/work/scale``, which git ignores; about 10 GiB at 1M documents).

With ``--milvus-max N``, sizes up to N are also loaded into a Milvus collection (Milvus's BM25 function, HNSW,
server-side RRF) on a loopback ``milvus-lite server`` (pymilvus + milvus-lite) and searched with the same queries.

Writes ``benchmarks/results/scale.json``, the ``scale`` section of ``docs/BENCHMARKS.md`` and the section
``## Scale: measured and projected`` of ``docs/SCALE.md``.
Usage: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scale.py --sizes 100000,300000,1000000``
(``--sizes 20000`` is a quick run).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.metadata
import json
import math
import mmap
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from medcite.corpus.pubmed_xml import iter_pubmed_xml  # noqa: E402
from medcite.corpus.store import DocumentStore, FileStats  # noqa: E402
from medcite.paths import shared_data_dir  # noqa: E402
from medcite.types import Article, Hit  # noqa: E402

SEED = 18
NOISE = 0.05  # norm of the Gaussian noise added to an assembled document's vector (unit vectors)
P_PRIMARY = 0.7  # chance that a sentence of an assembled document comes from its primary abstract
FIRST_SYNTHETIC_PMID = 50_000_000
K_BM25 = 100  # BM25 and dense shortlists fused by RRF (each top-100), as the hybrid preset does
K_EVAL = 10
FULL_PUBMED = 36_000_000
GIB = 1024**3
IVF_GRID = ((32, 256), (64, 512), (128, 1024))  # (nprobe, shortlist re-ranked exactly)
PHASES = ("store", "bm25", "ivfpq", "flat", "hnsw", "serve-embedded", "serve-flat", "serve-hnsw", "milvus")
SECTION = "## Scale: measured and projected"


# -- the pool of real abstracts ---------------------------------------------------------------------
@dataclass
class Pool:
    """Real abstracts: PMID, title, sentences, and their MiniLM vectors (row i = abstract i)."""

    pmids: list[str]
    titles: list[str]
    sentences: list[list[str]]
    vectors: np.ndarray  # float32, unit rows
    queries: list[str]
    query_vectors: np.ndarray
    encode: dict[str, Any]

    def __len__(self) -> int:
        return len(self.pmids)


def split_sentences(text: str) -> list[str]:
    from medcite.evidence.sentences import SPLITTERS

    return [text[s:e].strip() for s, e in SPLITTERS["syntok"](text) if text[s:e].strip()]


def read_abstracts(path: Path, n: int) -> list[Article]:
    out: list[Article] = []
    with open(path, "rb") as fh:
        for item in iter_pubmed_xml(fh, path.name):
            if isinstance(item, Article) and item.abstract and item.title:
                out.append(item)
                if len(out) >= n:
                    break
    return out


def read_questions(data_dir: Path, n: int) -> list[str]:
    with gzip.open(data_dir / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz", "rt", encoding="utf-8") as fh:
        return [q["body"] for q in json.load(fh)["questions"][:n]]


def load_encoder_named(name: str) -> Any:
    from medcite import registry
    from medcite.index.dense.encoders import load_encoder

    return load_encoder(registry.validate_config("encoder", name))


def build_pool(data_dir: Path, folder: Path, n_encode: int, n_queries: int, encoder: str = "minilm") -> Pool:
    """Read, split and encode ``n_encode`` real abstracts (cached in ``folder``); measure the encoding speed."""
    meta_path, vec_path, qvec_path = folder / "pool.json", folder / "pool_vectors.npy", folder / "queries.npy"
    if meta_path.exists() and vec_path.exists() and qvec_path.exists():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta["n_encode"] == n_encode and meta["n_queries"] == n_queries and meta["encoder"] == encoder:
            return Pool(meta["pmids"], meta["titles"], meta["sentences"], np.load(vec_path), meta["queries"],
                        np.load(qvec_path), meta["encode"])
    folder.mkdir(parents=True, exist_ok=True)
    articles = read_abstracts(data_dir / "pubmed_xml" / "pubmed20n0014.xml.gz", n_encode)
    enc = load_encoder_named(encoder)
    enc.encode_documents(articles[:16])  # warm-up: model load and first-call overheads are not throughput
    start, cpu0 = time.perf_counter(), time.process_time()
    vectors = np.asarray(enc.encode_documents(articles), dtype=np.float32)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    queries = read_questions(data_dir, n_queries)
    qstart = time.perf_counter()
    qvecs = np.asarray(enc.encode_queries(queries), dtype=np.float32)
    qwall = time.perf_counter() - qstart
    chars = [len(a.text) for a in articles]
    encode = {
        "encoder": enc.name, "dim": int(enc.dim), "docs": len(articles), "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1), "docs_per_s": round(len(articles) / wall, 2),
        "docs_per_cpu_s": round(len(articles) / cpu, 2), "mean_chars": round(float(np.mean(chars)), 1),
        "doc_max_length_tokens": getattr(enc, "doc_max_length", None),
        "queries": len(queries), "queries_per_s": round(len(queries) / qwall, 1),
        "threads": os.environ.get("OMP_NUM_THREADS", "unset"),
    }
    meta = {
        "n_encode": n_encode, "n_queries": n_queries, "encoder": encoder, "encode": encode,
        "pmids": [a.pmid for a in articles], "titles": [a.title for a in articles],
        "sentences": [split_sentences(a.abstract) for a in articles], "queries": queries,
    }
    np.save(vec_path, vectors)
    np.save(qvec_path, qvecs)
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    return Pool(meta["pmids"], meta["titles"], meta["sentences"], vectors, queries, qvecs, encode)


# -- assembled documents ----------------------------------------------------------------------------
@dataclass
class Composition:
    """What each assembled document is made of: primary/secondary abstract and sentences taken from each."""

    primary: np.ndarray
    secondary: np.ndarray
    from_primary: np.ndarray
    from_secondary: np.ndarray


def composition(pool: Pool, n_synthetic: int, seed: int = SEED) -> Composition:
    """Seeded draw of the parents and sentence counts of ``n_synthetic`` assembled documents."""
    rng = np.random.default_rng(seed)
    n = len(pool)
    primary = rng.integers(0, n, n_synthetic)
    secondary = (primary + rng.integers(1, max(n, 2), n_synthetic)) % n if n > 1 else primary.copy()
    total = rng.integers(6, 11, n_synthetic)
    want_a = np.maximum(1, rng.binomial(total, P_PRIMARY))
    lens = np.array([len(s) for s in pool.sentences], dtype=np.int64)
    from_a = np.minimum(want_a, lens[primary])
    from_b = np.minimum(total - want_a, lens[secondary])
    return Composition(primary, secondary, from_a, from_b)


def documents(pool: Pool, n: int, seed: int = SEED) -> Iterator[Article]:
    """The first ``n`` documents: the real abstracts as they are, then assembled ones (see module doc)."""
    n_real = min(n, len(pool))
    for i in range(n_real):
        yield Article(pool.pmids[i], pool.titles[i], " ".join(pool.sentences[i]))
    comp = composition(pool, n - n_real, seed)
    rng = np.random.default_rng([seed, 1])
    for j in range(n - n_real):
        a, b = int(comp.primary[j]), int(comp.secondary[j])
        sa, sb = pool.sentences[a], pool.sentences[b]
        pick_a = np.sort(rng.choice(len(sa), int(comp.from_primary[j]), replace=False))
        pick_b = np.sort(rng.choice(len(sb), int(comp.from_secondary[j]), replace=False))
        text = " ".join([sa[i] for i in pick_a] + [sb[i] for i in pick_b])
        yield Article(str(FIRST_SYNTHETIC_PMID + j), pool.titles[a], text)


def document_pmids(pool: Pool, n: int) -> np.ndarray:
    n_real = min(n, len(pool))
    real = np.array([int(p) for p in pool.pmids[:n_real]], dtype=np.int64)
    return np.concatenate([real, FIRST_SYNTHETIC_PMID + np.arange(n - n_real, dtype=np.int64)])


def document_vectors(pool: Pool, n: int, step: int = 100_000, seed: int = SEED) -> Iterator[np.ndarray]:
    """Vectors of the first ``n`` documents, ``step`` rows at a time (float32, unit norm)."""
    n_real = min(n, len(pool))
    for start in range(0, n_real, step):
        yield pool.vectors[start : min(start + step, n_real)]
    comp = composition(pool, n - n_real, seed)
    rng = np.random.default_rng([seed, 2])
    dim = pool.vectors.shape[1]
    for start in range(0, n - n_real, step):
        sl = slice(start, min(start + step, n - n_real))
        wa = comp.from_primary[sl].astype(np.float32)
        wb = comp.from_secondary[sl].astype(np.float32)
        tot = wa + wb
        v = (wa / tot)[:, None] * pool.vectors[comp.primary[sl]]
        v += (wb / tot)[:, None] * pool.vectors[comp.secondary[sl]]
        v += rng.standard_normal(v.shape, dtype=np.float32) * (NOISE / math.sqrt(dim))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        yield v.astype(np.float32)


def write_embedding_chunks(pool: Pool, n: int, folder: Path, step: int = 100_000) -> None:
    """The vectors as NCBI-style chunk files (``embeds_chunk_K.npy`` + ``pmids_chunk_K.json``)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pmids = document_pmids(pool, n)
    row = 0
    for k, vecs in enumerate(document_vectors(pool, n, step)):
        np.save(folder / f"embeds_chunk_{k}.npy", vecs)
        (folder / f"pmids_chunk_{k}.json").write_text(json.dumps([int(p) for p in pmids[row : row + len(vecs)]]))
        row += len(vecs)


def exact_top(pool: Pool, n: int, queries: np.ndarray, k: int) -> list[list[str]]:
    """Exact inner-product top ``k`` over all ``n`` document vectors (float32), streamed."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_r = np.zeros((len(queries), 0), dtype=np.int64)
    row = 0
    for vecs in document_vectors(pool, n):
        s = queries @ vecs.T
        r = np.broadcast_to(np.arange(row, row + len(vecs)), s.shape)
        s, r = np.concatenate([best_s, s], axis=1), np.concatenate([best_r, r], axis=1)
        top = np.argsort(-s, axis=1, kind="stable")[:, :k]
        best_s, best_r = np.take_along_axis(s, top, 1), np.take_along_axis(r, top, 1)
        row += len(vecs)
    pmids = document_pmids(pool, n)
    return [[str(int(pmids[r])) for r in rows] for rows in best_r]


# -- phases (each run in its own process) -----------------------------------------------------------
def size_dir(work: Path, n: int) -> Path:
    return work / f"n{n}"


def dense_settings(layout: str, threads: int, nprobe: int = 32, rerank: int = 256) -> Any:
    from medcite.index.dense.faiss_backend import FaissConfig

    return FaissConfig(
        encoder={"backend": "onnx-minilm"}, index_type=layout,
        vector_dtype="float32" if layout == "flat" else "float16", threads=threads, chunk_size=50_000,
        nprobe=nprobe, rerank=rerank,
    )  # fmt: skip


def phase_store(pool: Pool, n: int, d: Path) -> dict[str, Any]:
    shutil.rmtree(d / "store", ignore_errors=True)
    store = DocumentStore.create(d / "store")
    batch: list[Article] = []
    with store.transaction() as tx:
        for art in documents(pool, n):
            batch.append(art)
            if len(batch) == 20_000:
                tx.upsert(batch, FileStats(path="bench_scale"))
                batch = []
        if batch:
            tx.upsert(batch, FileStats(path="bench_scale"))
    count = len(store)
    store.close()
    return {"docs": count}


def phase_bm25(n: int, d: Path, threads: int) -> dict[str, Any]:
    from medcite.index.sparse.base import build_sparse
    from medcite.index.sparse.tantivy_backend import TantivyConfig

    shutil.rmtree(d / "bm25", ignore_errors=True)
    store = DocumentStore.open(d / "store")
    report = build_sparse(store, d / "bm25", TantivyConfig(threads=threads))
    store.close()
    return {"docs": report.docs}


def phase_dense(pool: Pool, n: int, d: Path, layout: str, threads: int) -> dict[str, Any]:
    from medcite.index.dense.importer import import_embeddings

    if not (d / "emb" / "embeds_chunk_0.npy").exists():
        raise RuntimeError(f"{d / 'emb'} has no embedding chunks; run the store phase first")
    shutil.rmtree(d / layout, ignore_errors=True)
    settings = dense_settings(layout, threads)
    manifest = import_embeddings(d / "emb", d / layout, settings, encoder=load_encoder_named("minilm-onnx"))
    return {"rows": manifest["counts"]["rows"], "params": manifest["index"]}


def status_memory() -> dict[str, int]:
    """This process's RssAnon/RssFile/VmHWM in bytes (Linux): anonymous memory is what serving needs in RAM;
    file-backed pages are memory-mapped index files the kernel may drop and re-read."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                key = line.split(":")[0]
                if key in ("RssAnon", "RssFile", "VmHWM", "VmRSS"):
                    out[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def evict_from_page_cache(folder: Path) -> None:
    """Ask the kernel to drop the cached pages of every file under ``folder`` (``POSIX_FADV_DONTNEED``), so
    that the next reads come from disk, as they would for a corpus larger than the page cache."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cold_row_reads(folder: Path, rows_per_query: int = 256, trials: int = 50, seed: int = SEED) -> dict[str, Any]:
    """Time reading ``rows_per_query`` random rows of the on-disk vectors after evicting them from the page cache:
    what an exact re-rank costs when the vectors file is far larger than the page cache (36M documents)."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    rows, dim = int(manifest["counts"]["rows"]), int(manifest["counts"]["dim"])
    evict_from_page_cache(folder)
    vectors = np.memmap(folder / manifest["files"]["vectors"], dtype=manifest["vector_dtype"], mode="r",
                        shape=(rows, dim))
    # no read-around: each fault reads its own page, as random reads into a file far larger than RAM do
    vectors._mmap.madvise(mmap.MADV_RANDOM)  # type: ignore[union-attr]
    rng = np.random.default_rng(seed)
    wall = []
    for _ in range(trials):
        ids = np.unique(rng.integers(0, rows, rows_per_query))
        t = time.perf_counter()
        np.asarray(vectors[ids], dtype=np.float32)
        wall.append(time.perf_counter() - t)
    del vectors
    return {**common.latency_summary(wall), "rows_per_query": rows_per_query,
            "file_mib": round(rows * dim * np.dtype(manifest["vector_dtype"]).itemsize / common.MIB, 1)}


def timed(fn: Any, items: Sequence[Any], warmup: int = 20) -> tuple[list[Any], dict[str, Any]]:
    """Run ``fn`` on each item after ``warmup`` untimed calls; returns the results and their latency summary.

    Besides wall time, the summary gives the p50/p95 of each call's CPU time (this thread's): on a busy
    machine the wall time includes waiting for a core, the CPU time does not.
    """
    for item in items[:warmup]:
        fn(item)
    results, wall, cpu = [], [], []
    for item in items:
        t, c = time.perf_counter(), time.thread_time()
        results.append(fn(item))
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    cpu_summary = common.latency_summary(cpu)
    return results, {**common.latency_summary(wall), "cpu_p50_ms": cpu_summary["p50_ms"],
                     "cpu_p95_ms": cpu_summary["p95_ms"]}


def overlap(runs: Sequence[Sequence[Hit]], truth: Sequence[Sequence[str]], k: int) -> float:
    return float(np.mean([len({h.pmid for h in r[:k]} & set(t[:k])) / k for r, t in zip(runs, truth, strict=True)]))


def phase_serve(pool: Pool, n: int, d: Path, layout: str, threads: int) -> dict[str, Any]:
    """Open the indexes as a server would, then time single queries (one at a time, warm)."""
    from medcite.index.dense.faiss_backend import FaissIndex
    from medcite.retrieve.fusion import rrf

    truth = json.loads((d / "truth.json").read_text(encoding="utf-8"))
    encoder = load_encoder_named("minilm-onnx")  # a server holds the query encoder too
    qv = pool.query_vectors
    out: dict[str, Any] = {"layout": layout}
    cold = layout == "ivfpq" and hasattr(os, "posix_fadvise")
    if cold:  # a first pass with the index files out of the page cache, before anything maps them
        out["cold_rerank_reads"] = cold_row_reads(d / layout)
        evict_from_page_cache(d / layout)
        evict_from_page_cache(d / "bm25")
    t = time.perf_counter()
    dense = FaissIndex(d / layout, encoder, settings=dense_settings(layout, threads))
    sparse = None
    if layout == "ivfpq":
        from medcite.index.sparse.base import open_sparse

        sparse = open_sparse(d / "bm25")
    out["open_s"] = round(time.perf_counter() - t, 3)
    out["memory_after_open"] = status_memory()
    rows = list(range(len(qv)))
    if cold:
        assert sparse is not None
        _, cold_dense = timed(lambda i: dense.search_vectors(qv[i], K_BM25)[0], rows, warmup=0)
        _, cold_bm25 = timed(lambda i: sparse.search(pool.queries[i], K_BM25), rows, warmup=0)
        out["cold"] = {"dense": cold_dense, "bm25": cold_bm25,
                       "note": "first pass, index files evicted from the page cache (FAISS index itself in RAM)"}
    runs, lat = timed(lambda i: dense.search_vectors(qv[i], K_BM25)[0], rows)
    out["dense"] = {"latency": lat, "recall@10": overlap(runs, truth, K_EVAL),
                    "recall@100": overlap(runs, truth, K_BM25), "nprobe": 32, "shortlist": 256}
    if layout == "ivfpq":
        grid = []
        for nprobe, shortlist in IVF_GRID:
            dense.settings = dense_settings(layout, threads, nprobe, shortlist)
            g_runs, g_lat = timed(lambda i: dense.search_vectors(qv[i], K_BM25)[0], rows)
            grid.append({"nprobe": nprobe, "shortlist": shortlist, "recall@10": overlap(g_runs, truth, K_EVAL),
                         "recall@100": overlap(g_runs, truth, K_BM25), "latency": g_lat})
        out["ivfpq_grid"] = grid
        dense.settings = dense_settings(layout, threads)
        assert sparse is not None
        _, b_lat = timed(lambda i: sparse.search(pool.queries[i], K_BM25), rows)
        out["bm25"] = {"latency": b_lat, "k": K_BM25}

        def hybrid(i: int) -> list[Hit]:
            return rrf([sparse.search(pool.queries[i], K_BM25), dense.search_vectors(qv[i], K_BM25)[0]])[:K_BM25]

        _, h_lat = timed(hybrid, rows)
        out["hybrid"] = {"latency": h_lat, "fusion": "rrf k=60 of BM25 top-100 + dense top-100"}
        _, e_lat = timed(lambda i: encoder.encode_queries([pool.queries[i]]), rows[:100])
        out["query_encode"] = {"latency": e_lat, "encoder": encoder.name}
    out["memory_after_queries"] = status_memory()
    return out


def milvus_server(data_dir: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start a loopback ``milvus-lite server`` (the Milvus gRPC protocol) on a free port; wait until it listens."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir), "--host",
                                 "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"milvus-lite server exited with {proc.returncode}: see {log_path}")
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"milvus-lite server did not listen within 120 s: see {log_path}")


def phase_milvus(pool: Pool, n: int, d: Path) -> dict[str, Any]:
    """The same documents, vectors and queries in a Milvus collection on a loopback milvus-lite server: BM25 by
    Milvus's BM25 function (same analysis as tantivy: standard tokens, lowercase, Lucene stop words, Snowball),
    the dense field in HNSW (M=16, efConstruction 80; ef 128 at search), hybrid search with RRF on the server."""
    import psutil
    import pymilvus as pm

    from medcite.index.sparse.base import open_sparse, stopword_list
    from medcite.index.sparse.tantivy_backend import TantivyConfig

    folder = d / "milvus"
    shutil.rmtree(folder, ignore_errors=True)
    proc, uri = milvus_server(folder / "data", d / "milvus-server.log")
    out: dict[str, Any] = {"server": f"milvus-lite {importlib.metadata.version('milvus-lite')}, pymilvus "
                                     f"{importlib.metadata.version('pymilvus')}, loopback, same machine"}
    try:
        client = pm.MilvusClient(uri=uri)
        dt = pm.DataType
        schema = pm.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pmid", dt.INT64, is_primary=True)
        analyzer = {"tokenizer": "standard", "filter": [
            "lowercase", {"type": "stop", "stop_words": stopword_list(TantivyConfig())},
            {"type": "stemmer", "language": "english"}]}
        schema.add_field("text", dt.VARCHAR, max_length=65_535, enable_analyzer=True, analyzer_params=analyzer)
        schema.add_field("bm25", dt.SPARSE_FLOAT_VECTOR)
        schema.add_field("vec", dt.FLOAT_VECTOR, dim=pool.vectors.shape[1])
        schema.add_function(pm.Function(name="bm25_fn", function_type=pm.FunctionType.BM25,
                                        input_field_names=["text"], output_field_names=["bm25"]))
        index = pm.MilvusClient.prepare_index_params()
        index.add_index(field_name="bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                        params={"bm25_k1": 1.2, "bm25_b": 0.75})
        index.add_index(field_name="vec", index_type="HNSW", metric_type="IP",
                        params={"M": 16, "efConstruction": 80})
        client.create_collection("scale", schema=schema, index_params=index, consistency_level="Strong")
        start = time.perf_counter()
        batch: list[dict[str, Any]] = []
        vectors = iter(document_vectors(pool, n, step=5000))
        chunk, at = next(vectors), 0
        for art in documents(pool, n):
            if at == len(chunk):
                chunk, at = next(vectors), 0
            batch.append({"pmid": int(art.pmid), "text": art.text, "vec": chunk[at].tolist()})
            at += 1
            if len(batch) == 5000:
                client.insert("scale", batch)
                batch = []
        if batch:
            client.insert("scale", batch)
        client.flush("scale")
        client.load_collection("scale")
        out["insert_and_load_s"] = round(time.perf_counter() - start, 2)
        truth = json.loads((d / "truth.json").read_text(encoding="utf-8"))
        qv, rows = pool.query_vectors, list(range(len(pool.queries)))
        dense_params = {"metric_type": "IP", "params": {"ef": 128}}

        def hits(res: Any) -> list[Hit]:
            return [Hit(str(h["id"] if "id" in h else h["pmid"]), float(h["distance"]), i + 1)
                    for i, h in enumerate(res[0])]

        def bm25(i: int) -> list[Hit]:
            return hits(client.search("scale", data=[pool.queries[i]], anns_field="bm25", limit=K_BM25,
                                      search_params={"metric_type": "BM25"}, output_fields=["pmid"]))

        def dense(i: int) -> list[Hit]:
            return hits(client.search("scale", data=[qv[i].tolist()], anns_field="vec", limit=K_BM25,
                                      search_params=dense_params, output_fields=["pmid"]))

        def hybrid(i: int) -> list[Hit]:
            reqs = [pm.AnnSearchRequest([pool.queries[i]], "bm25", {"metric_type": "BM25"}, K_BM25),
                    pm.AnnSearchRequest([qv[i].tolist()], "vec", dense_params, K_BM25)]
            return hits(client.hybrid_search("scale", reqs, pm.RRFRanker(60), limit=K_BM25, output_fields=["pmid"]))

        b_runs, out["bm25"] = timed(bm25, rows)
        d_runs, out["dense"] = timed(dense, rows)
        _, out["hybrid"] = timed(hybrid, rows)
        out["dense_recall@10"] = overlap(d_runs, truth, K_EVAL)
        sparse = open_sparse(d / "bm25")
        tantivy = [[h.pmid for h in sparse.search(q, K_EVAL)] for q in pool.queries]
        out["bm25_top10_overlap_with_tantivy"] = overlap(b_runs, tantivy, K_EVAL)
        out["server_peak_rss_mib"] = round(common._high_water_bytes(proc.pid) / common.MIB, 1)  # noqa: SLF001
        out["server_rss_mib"] = round(psutil.Process(proc.pid).memory_info().rss / common.MIB, 1)
        client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    out["disk_bytes"] = du(folder)
    return out


def run_phase(args: argparse.Namespace) -> None:
    pool = build_pool(args.data_dir, args.work_dir / "pool", args.n_encode, args.n_queries)
    n, d, phase = args.size, size_dir(args.work_dir, args.size), args.phase
    if phase == "store":
        result = phase_store(pool, n, d)
    elif phase == "bm25":
        result = phase_bm25(n, d, args.threads)
    elif phase in ("ivfpq", "flat", "hnsw"):
        result = phase_dense(pool, n, d, phase, args.threads)
    elif phase == "milvus":
        result = phase_milvus(pool, n, d)
    else:
        result = phase_serve(pool, n, d, phase.removeprefix("serve-").replace("embedded", "ivfpq"), args.threads)
    print("RESULT " + json.dumps(result))


# -- orchestration ----------------------------------------------------------------------------------
def du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measured_phase(args: argparse.Namespace, phase: str, n: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--size", str(n), "--work-dir", str(args.work_dir),
           "--data-dir", str(args.data_dir), "--n-encode", str(args.n_encode), "--n-queries", str(args.n_queries),
           "--threads", str(args.threads)]
    env = {"OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1",
           "TQDM_DISABLE": "1"}
    m = common.run_measured(cmd, env=env).check()
    line = next(ln for ln in reversed(m.stdout.splitlines()) if ln.startswith("RESULT "))
    return {"wall_s": round(m.wall_s, 2), "cpu_s": round(m.cpu_s, 2), "peak_rss_mib": round(m.peak_rss_mib, 1),
            **json.loads(line.removeprefix("RESULT "))}


def measure_size(args: argparse.Namespace, pool: Pool, n: int) -> dict[str, Any]:
    d = size_dir(args.work_dir, n)
    done = d / "result.json"
    if args.reuse and done.exists():
        print(f"[scale] {n:,} documents: reusing {done}", flush=True)
        res = json.loads(done.read_text(encoding="utf-8"))
        if n <= args.milvus_max and "milvus" not in res:
            res["milvus"] = measure_milvus(args, n)
            done.write_text(json.dumps(res), encoding="utf-8")
        return res  # type: ignore[no-any-return]
    d.mkdir(parents=True, exist_ok=True)
    print(f"[scale] {n:,} documents in {d}", flush=True)
    res: dict[str, Any] = {"docs": n, "real_docs": min(n, len(pool)), "assembled_docs": max(0, n - len(pool))}
    res["store"] = measured_phase(args, "store", n)
    res["store"]["disk_bytes"] = du(d / "store")
    print(f"[scale] {n:,}: store built in {res['store']['wall_s']} s ({res['store']['cpu_s']} CPU s)", flush=True)
    write_embedding_chunks(pool, n, d / "emb")
    (d / "truth.json").write_text(json.dumps(exact_top(pool, n, pool.query_vectors, K_BM25)))
    res["bm25_build"] = measured_phase(args, "bm25", n)
    res["bm25_build"]["disk_bytes"] = du(d / "bm25")
    bm = res["bm25_build"]
    print(f"[scale] {n:,}: bm25 built in {bm['wall_s']} s ({bm['cpu_s']} CPU s)", flush=True)
    layouts = ["ivfpq"] + (["flat"] if n <= args.flat_max else []) + (["hnsw"] if n <= args.hnsw_max else [])
    for layout in layouts:
        b = measured_phase(args, layout, n)
        manifest = json.loads((d / layout / "manifest.json").read_text(encoding="utf-8"))
        files = manifest["files"]
        b["disk_bytes"] = du(d / layout)
        b["index_file_bytes"] = (d / layout / files["index"]).stat().st_size
        b["vectors_file_bytes"] = du(d / layout) - b["index_file_bytes"]
        res[f"{layout}_build"] = b
        print(f"[scale] {n:,}: {layout} built in {b['wall_s']} s ({b['cpu_s']} CPU s)", flush=True)
    res["serve_embedded"] = measured_phase(args, "serve-embedded", n)
    for layout in layouts[1:]:
        res[f"serve_{layout}"] = measured_phase(args, f"serve-{layout}", n)
    if n <= args.milvus_max:
        res["milvus"] = measure_milvus(args, n)
    shutil.rmtree(d / "emb")  # the float32 chunks are only the importer's input
    done.write_text(json.dumps(res), encoding="utf-8")
    print(f"[scale] {n:,}: " + json.dumps({k: v for k, v in res["serve_embedded"].items() if k in ("bm25", "dense")}),
          flush=True)
    return res


def measure_milvus(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """The Milvus phase (client and loopback server: peak RSS is their sum), or why it could not run."""
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"{exc.name} is not installed (pip install pymilvus milvus-lite)"}
    res = measured_phase(args, "milvus", n)
    res["disk_bytes"] = res.get("disk_bytes", 0)
    print(f"[scale] {n:,}: milvus " + json.dumps({k: res[k] for k in ("insert_and_load_s", "bm25", "dense")}),
          flush=True)
    return res


def document_stats(pool: Pool, n: int = 2000) -> dict[str, float]:
    """Mean distinct analysed terms (tantivy analysis: the postings a document adds) and mean characters of
    ``n`` assembled documents, and the mean characters of the real abstracts they come from."""
    from medcite.index.sparse.tantivy_backend import TantivyConfig, _analyzer

    analyzer = _analyzer(TantivyConfig())
    docs = list(documents(pool, len(pool) + n))[len(pool):]
    real = list(documents(pool, len(pool)))
    return {
        "terms_per_doc": round(float(np.mean([len(set(analyzer.analyze(a.text))) for a in docs])), 1),
        "real_terms_per_doc": round(float(np.mean([len(set(analyzer.analyze(a.text))) for a in real])), 1),
        "chars_per_doc": round(float(np.mean([len(a.text) for a in docs])), 1),
        "real_chars_per_doc": round(float(np.mean([len(a.text) for a in real])), 1),
    }


def real_store_bytes_per_doc(data_dir: Path, work: Path) -> dict[str, Any]:
    """Store bytes per article of the real NLM file ingested whole (with MeSH, journal, dates...), against
    the assembled documents' title + abstract only: the store projection is scaled by the ratio."""
    from medcite.corpus.ingest import ingest

    folder = work / "real_store"
    if not (folder / "store.sqlite").exists() and folder.exists():
        shutil.rmtree(folder)
    store = DocumentStore.open(folder) if folder.exists() else DocumentStore.create(folder)
    ingest([data_dir / "pubmed_xml" / "pubmed20n0014.xml.gz"], store, on_error="skip")
    n = len(store)
    store.close()
    return {"docs": n, "bytes_per_doc": round(du(folder) / n, 1), "file": "pubmed20n0014.xml.gz"}


def dense_benchmark_recall() -> str:
    """IVF-PQ recall@10 (nprobe 32, shortlist 256, float16) on real embeddings, from benchmarks/results/dense.json."""
    path = common.RESULTS_DIR / "dense.json"
    if not path.exists():
        return "not measured"
    grid = json.loads(path.read_text(encoding="utf-8")).get("ivfpq_grid", [])
    hit = [g for g in grid if (g["vector_dtype"], g["nprobe"], g["shortlist"]) == ("float16", 32, 256)]
    return f"{hit[0]['recall@10']:.3f}" if hit else "not measured"


def query_term_coverage(pool: Pool, data_dir: Path) -> dict[str, Any]:
    """Share of the queries' analysed terms found in the documents' vocabulary (the pool's abstracts) and in
    all the abstracts of ``pubmed20n0014.xml.gz``: how much narrower the assembled corpus's vocabulary is."""
    from medcite.index.sparse.tantivy_backend import TantivyConfig, _analyzer

    analyzer = _analyzer(TantivyConfig())
    pool_vocab = {t for title, sents in zip(pool.titles, pool.sentences, strict=True)
                  for t in analyzer.analyze(title + " " + " ".join(sents))}
    all_articles = read_abstracts(data_dir / "pubmed_xml" / "pubmed20n0014.xml.gz", 10**9)
    file_vocab = {t for a in all_articles for t in analyzer.analyze(a.text)}
    terms = [t for q in pool.queries for t in set(analyzer.analyze(q))]
    return {
        "query_terms": len(terms),
        "in_pool_vocabulary": round(sum(t in pool_vocab for t in terms) / len(terms), 3),
        "pool_abstracts": len(pool),
        "in_file_vocabulary": round(sum(t in file_vocab for t in terms) / len(terms), 3),
        "file_abstracts": len(all_articles),
    }


# -- fitting and projection -------------------------------------------------------------------------
def fit_linear(ns: Sequence[int], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b * n`` (one point: through the origin)."""
    if len(ns) < 2:
        return 0.0, ys[0] / ns[0]
    b, a = np.polyfit(np.asarray(ns, float), np.asarray(ys, float), 1)
    return float(a), float(b)


def fit_power(ns: Sequence[int], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``log y = log c + e log n``: returns (c, e); one point gives e = 1 (linear growth)."""
    if len(ns) < 2:
        return ys[0] / ns[0], 1.0
    e, logc = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(ys, float)), 1)
    return float(math.exp(logc)), float(e)


def project(sizes: list[dict[str, Any]], encode: dict[str, Any], terms_per_doc: float,
            target: int = FULL_PUBMED) -> dict[str, Any]:
    """Extrapolate every measured quantity to ``target`` documents (see the docs section for the models)."""
    ns = [s["docs"] for s in sizes]

    def lin(get: Any) -> dict[str, float]:
        pts = [(s["docs"], get(s)) for s in sizes if get(s) is not None]
        a, b = fit_linear([p[0] for p in pts], [p[1] for p in pts])
        return {"fixed": a, "per_doc": b, "at_target": a + b * target}

    def power(get: Any) -> dict[str, float]:
        pts = [(s["docs"], get(s)) for s in sizes if get(s) is not None]
        c, e = fit_power([p[0] for p in pts], [p[1] for p in pts])
        # growth is never assumed slower than the sqrt(N) cells IVF adds, nor faster than linear
        return {"exponent": e, "at_target": c * target**e, "at_target_linear": pts[-1][1] * target / pts[-1][0]}

    emb = "serve_embedded"
    p: dict[str, Any] = {"target_docs": target, "fitted_on": ns}
    p["store_disk"] = lin(lambda s: s["store"]["disk_bytes"])
    p["bm25_disk"] = lin(lambda s: s["bm25_build"]["disk_bytes"])
    p["bm25_build_s"] = lin(lambda s: s["bm25_build"]["wall_s"])
    # latency growth is fitted on each query's CPU time (one thread): the wall time on this shared machine adds
    # waiting for a core, more for longer queries, which would inflate the fitted growth
    p["bm25_p50_ms"] = power(lambda s: s[emb]["bm25"]["latency"]["cpu_p50_ms"])
    p["ivfpq_index_ram"] = lin(lambda s: s["ivfpq_build"]["index_file_bytes"])
    p["ivfpq_vectors_disk"] = lin(lambda s: s["ivfpq_build"]["vectors_file_bytes"])
    p["ivfpq_build_s"] = lin(lambda s: s["ivfpq_build"]["wall_s"])
    p["dense_p50_ms"] = power(lambda s: s[emb]["dense"]["latency"]["cpu_p50_ms"])
    # hybrid = both searches + fusion: the fusion's own cost (hybrid minus BM25 minus dense at the largest size)
    # is added to the two projections
    last = sizes[-1][emb]
    fusion = max(0.0, last["hybrid"]["latency"]["cpu_p50_ms"] - last["bm25"]["latency"]["cpu_p50_ms"]
                 - last["dense"]["latency"]["cpu_p50_ms"])
    p["hybrid_p50_ms"] = {
        "fusion_ms": fusion,
        "at_target": p["bm25_p50_ms"]["at_target"] + p["dense_p50_ms"]["at_target"] + fusion,
        "at_target_linear": p["bm25_p50_ms"]["at_target_linear"] + p["dense_p50_ms"]["at_target_linear"] + fusion,
    }
    cold = sizes[-1][emb].get("cold")
    # the re-rank's disk reads at the largest size (cold minus warm p50): at 36M the vectors outgrow the page cache
    reads = sizes[-1][emb].get("cold_rerank_reads")
    if reads:  # reading 256 random rows of an evicted vectors file, timed on its own
        p["rerank_cold_extra_ms"] = reads["p50_ms"]
    else:
        p["rerank_cold_extra_ms"] = (max(0.0, cold["dense"]["p50_ms"] - sizes[-1][emb]["dense"]["latency"]["p50_ms"])
                                     if cold else 0.0)
    p["serve_rss_anon"] = lin(lambda s: s[emb]["memory_after_queries"].get("RssAnon"))
    # the serving process's own memory besides the IVF-PQ index (interpreter, encoder, tantivy, live mask): the
    # largest measured, plus its growth per document where the sizes show any (conservative)
    rest = [(s["docs"], s[emb]["memory_after_queries"].get("RssAnon", 0) - s["ivfpq_build"]["index_file_bytes"])
            for s in sizes]
    slope = max(fit_linear([x for x, _ in rest], [y for _, y in rest])[1], 0.0) if len(rest) > 1 else 0.0
    top = max(y for _, y in rest)
    p["serve_rest_anon"] = {"fixed": top, "per_doc": slope, "at_target": top + slope * (target - sizes[-1]["docs"])}
    if any("serve_flat" in s for s in sizes):
        p["flat_p50_ms"] = power(
            lambda s: s["serve_flat"]["dense"]["latency"]["cpu_p50_ms"] if "serve_flat" in s else None)
        p["flat_index_ram"] = lin(lambda s: s["flat_build"]["index_file_bytes"] if "flat_build" in s else None)
    if any("serve_hnsw" in s for s in sizes):
        p["hnsw_p50_ms"] = power(
            lambda s: s["serve_hnsw"]["dense"]["latency"]["cpu_p50_ms"] if "serve_hnsw" in s else None)
        p["hnsw_index_ram"] = lin(lambda s: s["hnsw_build"]["index_file_bytes"] if "hnsw_build" in s else None)
    dim = encode["dim"]
    p["encode"] = {
        "cpu_core_hours_minilm": round(target / encode["docs_per_cpu_s"] / 3600, 0),
        "measured_docs_per_cpu_s": encode["docs_per_cpu_s"],
        # stated assumptions, not measured here (no GPU on this machine)
        "gpu_docs_per_s_assumed_minilm": 3000,
        "gpu_hours_minilm": round(target / 3000 / 3600, 1),
        "gpu_docs_per_s_assumed_medcpt": 600,
        "gpu_hours_medcpt": round(target / 600 / 3600, 1),
    }
    # 768-d (MedCPT) variant: PQ codes keep m=64 bytes, full vectors double, centroids double
    p["dim"] = dim
    p["postings_per_doc"] = terms_per_doc
    return p


def ivfpq_formula_bytes(n: int, dim: int) -> float:
    """RAM of IVF-PQ with medcite's automatic parameters: codes + ids + live mask + centroids + codebooks."""
    from medcite.index.dense import faiss_index as fx

    settings = dense_settings("ivfpq", 1)
    prm = fx.choose_params("ivfpq", dim, n, settings)
    per_doc = math.ceil(prm.pq_m * prm.pq_nbits / 8) + 8 + 1
    fixed = 4 * (prm.nlist * dim + prm.pq_m * 2**prm.pq_nbits * (dim // prm.pq_m))
    return per_doc * n + fixed


def milvus_plan(n: int, dim: int, postings_per_doc: float, node_gib: float = 64.0,
                replicas: int = 2) -> list[dict[str, Any]]:
    """Memory a Milvus cluster needs for ``n`` documents, by dense index type (stated assumptions, not measured).

    Per document: the dense index (HNSW: float32 vector + 2*M level-0 links of 4 bytes with M=16; IVF_PQ: 64
    code bytes + 8-byte id; DISKANN: PQ codes at Milvus's default ``PQCodeBudgetGBRatio`` 0.125 of the vector
    bytes plus its search cache ``SearchCacheBudgetGBRatio`` 0.1, the Vamana graph and full vectors on local
    NVMe); the BM25 sparse field twice (the raw sparse vectors and the inverted index: ``postings_per_doc``
    entries of a 4-byte id and a 4-byte float each); the int64 primary key. Query nodes load sealed segments
    into RAM; a node is used to 70 % of its memory (headroom for growing segments and compaction); each
    replica holds one full copy. Text fields are memory-mapped (``mmap.enabled``), not counted.
    """
    sparse = n * postings_per_doc * 8 * 2
    rows = []
    for name, per_doc_dense in (("HNSW (M=16)", 4 * dim + 2 * 16 * 4), ("IVF_PQ (m=64)", 64 + 8),
                                ("DISKANN", 4 * dim * (0.125 + 0.1))):
        total = n * (per_doc_dense + 8) + sparse
        per_copy_nodes = math.ceil(total / (0.7 * node_gib * GIB))
        rows.append({"index": name, "dense_gib": round(n * per_doc_dense / GIB, 1),
                     "sparse_gib": round(sparse / GIB, 1), "total_gib_per_replica": round(total / GIB, 1),
                     "query_nodes": per_copy_nodes * replicas, "node_gib": node_gib, "replicas": replicas})
    return rows


def _ms(run: dict[str, Any] | None, recall: bool = False) -> str:
    if not run:
        return "not run"
    text = f"{run['latency']['p50_ms']:.1f}"
    return f"{text} ({run['recall@10']:.3f})" if recall else text


def gib(x: float) -> str:
    return f"{x / GIB:.2f}"


def _lat(run: dict[str, Any]) -> str:
    """``p50 / p95`` wall ms and the CPU p50 in brackets."""
    return f"{run['p50_ms']:.1f} / {run['p95_ms']:.1f} ({run['cpu_p50_ms']:.1f})"


def _measured_tables(sizes: list[dict[str, Any]]) -> list[str]:
    mib = common.MIB
    build = [
        "| documents | store: build s, disk GiB | BM25: build s, peak RSS MiB, disk GiB | "
        "IVF-PQ: build s, peak RSS MiB, codes in RAM MiB, vectors on disk GiB | serving: peak RSS MiB, anon MiB |",
        "|---|---|---|---|---|",
    ]
    for s in sizes:
        st, bm, iv, se = s["store"], s["bm25_build"], s["ivfpq_build"], s["serve_embedded"]
        build.append(
            f"| {s['docs']:,} | {st['wall_s']:.0f}, {gib(st['disk_bytes'])} | {bm['wall_s']:.0f}, "
            f"{bm['peak_rss_mib']:.0f}, {gib(bm['disk_bytes'])} | {iv['wall_s']:.0f}, {iv['peak_rss_mib']:.0f}, "
            f"{iv['index_file_bytes'] / mib:.0f}, {gib(iv['vectors_file_bytes'])} | {se['peak_rss_mib']:.0f}, "
            f"{se['memory_after_queries'].get('RssAnon', 0) / mib:.0f} |"
        )
    lat = [
        "| documents | BM25 top-100 | dense IVF-PQ + exact re-rank (top-100) | recall@10 vs exact | hybrid RRF | "
        "cold: BM25, dense p50 | flat p50 | HNSW p50 (recall@10) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        se = s["serve_embedded"]
        cold = se.get("cold")
        cold_text = f"{cold['bm25']['p50_ms']:.1f}, {cold['dense']['p50_ms']:.1f}" if cold else "–"
        lat.append(
            f"| {s['docs']:,} | {_lat(se['bm25']['latency'])} | {_lat(se['dense']['latency'])} | "
            f"{se['dense']['recall@10']:.3f} | {_lat(se['hybrid']['latency'])} | {cold_text} | "
            f"{_ms(s.get('serve_flat', {}).get('dense'))} | {_ms(s.get('serve_hnsw', {}).get('dense'), recall=True)} |"
        )
    grid = ["| documents | nlist | nprobe | shortlist | recall@10 | recall@100 | p50 / p95 ms (CPU p50) |",
            "|---|---|---|---|---|---|---|"]
    for s in sizes:
        for g in s["serve_embedded"]["ivfpq_grid"]:
            grid.append(f"| {s['docs']:,} | {s['ivfpq_build']['params']['nlist']} | {g['nprobe']} | {g['shortlist']} | "
                        f"{g['recall@10']:.3f} | {g['recall@100']:.3f} | {_lat(g['latency'])} |")
    reads = [f"{s['docs']:,} documents ({c['file_mib']:.0f} MiB file): p50 {c['p50_ms']:.1f} ms, "
             f"p95 {c['p95_ms']:.1f} ms" for s in sizes if (c := s["serve_embedded"].get("cold_rerank_reads"))]
    if reads:
        lat += ["", "Cold re-rank reads (256 random rows of the float16 vectors file after evicting it from the page "
                "cache, read-ahead off, as when the file is far larger than RAM): " + "; ".join(reads) + "."]
    return [*build, "", "Latency in ms, p50 / p95 wall clock (CPU-time p50 in brackets):", "", *lat, "",
            "IVF-PQ search settings (nlist = 4·√N grows with the corpus, so a fixed nprobe visits a shrinking share "
            "of it; the default is nprobe 32, shortlist 256):", "", *grid]


def _milvus_table(sizes: list[dict[str, Any]]) -> list[str]:
    rows = [s for s in sizes if "insert_and_load_s" in s.get("milvus", {})]
    if not rows:
        return []
    table = [
        "| documents | insert + index + load s | peak RSS MiB (client + server) | server RSS MiB | disk GiB | "
        "BM25 top-100 p50 / p95 ms | dense HNSW p50 / p95 ms (recall@10) | hybrid RRF p50 / p95 ms | "
        "BM25 top-10 overlap with tantivy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        m = s["milvus"]
        table.append(
            f"| {s['docs']:,} | {m['insert_and_load_s']:.0f} | {m['peak_rss_mib']:.0f} | {m['server_rss_mib']:.0f} | "
            f"{gib(m['disk_bytes'])} | {m['bm25']['p50_ms']:.1f} / {m['bm25']['p95_ms']:.1f} | "
            f"{m['dense']['p50_ms']:.1f} / {m['dense']['p95_ms']:.1f} ({m['dense_recall@10']:.3f}) | "
            f"{m['hybrid']['p50_ms']:.1f} / {m['hybrid']['p95_ms']:.1f} | {m['bm25_top10_overlap_with_tantivy']:.2f} |"
        )
    return [
        f"Milvus's API on the same documents, vectors and queries ({rows[0]['milvus']['server']}): BM25 by the "
        "BM25 function with tantivy's analysis settings, the dense field in HNSW (M=16, efConstruction 80, ef 128), "
        "hybrid RRF (k=60) on the server; latency is wall time per request through gRPC on 127.0.0.1. milvus-lite "
        "3.x is a Python implementation of Milvus's API (FAISS for HNSW, a Python sparse inverted index) in one "
        "process on the same 2 shared cores: these rows show the collection layout working end to end at the "
        "largest size this machine took in the time, not the speed of a Milvus server or cluster (C++ query "
        "nodes). The top-10 "
        "overlap with tantivy is low here because the assembled corpus holds many near-identical documents that "
        "tie in BM25, and the two engines break ties differently (parity on real documents is the Milvus "
        "benchmark's subject).", "", *table,
    ]


def _projection_table(r: dict[str, Any]) -> list[str]:
    p, t = r["projection"], r["projection"]["target_docs"]
    d = p["dim"]

    def growth(key: str) -> str:
        f = p[key]
        return f"{f['at_target']:.0f} (N^{f['exponent']:.2f}; linear: {f['at_target_linear']:.0f})"

    rows = [
        "| at 36M documents | RAM when serving GiB | disk GiB | p50 ms projected (CPU time; fitted growth; linear "
        "bound) | "
        "fits 16 GiB? |",
        "|---|---|---|---|---|",
        f"| document store (SQLite), at the {r['real_store']['bytes_per_doc']:.0f} bytes per record of the real NLM "
        f"file (assembled documents: {gib(p['store_disk']['at_target'])}) | page cache only | "
        f"{gib(r['real_store']['bytes_per_doc'] * t)} | – | yes (on disk) |",
        f"| BM25, tantivy (memory-mapped) | page cache only | {gib(p['bm25_disk']['at_target'])} | "
        f"{growth('bm25_p50_ms')} | yes (on disk) |",
        f"| dense IVF-PQ {d}-d: codes in RAM, float16 vectors on disk | {gib(ivfpq_formula_bytes(t, d))} | "
        f"{gib(p['ivfpq_vectors_disk']['at_target'])} | {growth('dense_p50_ms')}, + {p['rerank_cold_extra_ms']:.0f} "
        "when the re-rank reads from disk | yes |",
        f"| dense IVF-PQ 768-d (MedCPT) | {gib(ivfpq_formula_bytes(t, 768))} | {gib((2 * 768 + 8) * t)} | "
        "about the 384-d figure; the re-rank reads 2x the bytes | yes |",
    ]
    if "flat_index_ram" in p:
        rows.append(f"| dense flat {d}-d, float32 in RAM | {gib(p['flat_index_ram']['at_target'])} | "
                    f"{gib(p['flat_index_ram']['at_target'] * 2)} | {growth('flat_p50_ms')} | no |")
    if "hnsw_index_ram" in p:
        rows.append(f"| dense HNSW {d}-d (M=32), vectors + graph in RAM | {gib(p['hnsw_index_ram']['at_target'])} | "
                    f"{gib(p['hnsw_index_ram']['at_target'] + 2 * d * t)} | not fitted (one size) | no |")
    rows.append(
        f"| serving process: BM25 + IVF-PQ {d}-d + ONNX query encoder (anonymous memory) | "
        f"{gib(r['projection_serving_ram_bytes'])} | – | hybrid {p['hybrid_p50_ms']['at_target']:.0f} (BM25 + dense + "
        f"fusion; linear: {p['hybrid_p50_ms']['at_target_linear']:.0f}), + {p['rerank_cold_extra_ms']:.0f} cold | "
        f"{'yes' if r['targets']['embedded_36M_ram_le_16GiB'] else 'no'} |"
    )
    return rows


def report(r: dict[str, Any]) -> tuple[str, str]:
    """(the ``scale`` section of BENCHMARKS.md, the SCALE.md section)."""
    sizes, p, enc = r["sizes"], r["projection"], r["encode"]
    t, d = p["target_docs"], p["dim"]
    largest = sizes[-1]
    se, targets = largest["serve_embedded"], r["targets"]
    head = (
        f"Measured on {r['machine_note']}. Documents: the first {r['real_docs']:,} real abstracts of "
        "`pubmed20n0014.xml.gz`, then documents **assembled from real abstract sentences** (the title of a real "
        "abstract + 6-10 real sentences of it and of a second real abstract, seeded); their MiniLM vectors are "
        f"normalised mixtures of the two source abstracts' real embeddings (+ noise of norm {NOISE}), not "
        f"encodings of the assembled text. Queries: {r['queries']} real BioASQ questions encoded with the same "
        "MiniLM (encoding time not included; a query costs "
        f"{se['query_encode']['latency']['p50_ms']:.0f} ms p50 to encode with the ONNX MiniLM). Each build and "
        "serving run is its own process; peak RSS is its VmHWM (memory-mapped index pages count in it), anon the "
        "memory that is not file-backed. Latency: one query at a time after 20 warm-up queries; the cold column "
        "is a first pass with the index files evicted from the page cache."
    )
    verdict = (
        f"Targets at {largest['docs']:,} documents: BM25 p50 {se['bm25']['latency']['p50_ms']:.1f} ms "
        f"({'met' if targets['bm25_p50_le_50ms'] else 'missed'}: ≤ 50 ms), dense p50 "
        f"{se['dense']['latency']['p50_ms']:.1f} ms ({'met' if targets['dense_p50_le_50ms'] else 'missed'}: "
        f"≤ 50 ms); embedded serving of 36M projected at {gib(r['projection_serving_ram_bytes'])} GiB of RAM "
        f"({'met' if targets['embedded_36M_ram_le_16GiB'] else 'missed'}: ≤ 16 GiB)."
    )
    bench = "\n".join(["## Scale (embedded indexes, up to 1M documents)", "", head, "",
                       *_measured_tables(sizes), "", *_milvus_table(sizes), "", verdict,
                       "The projection to 36M and the Milvus sizing: "
                       "[SCALE.md](SCALE.md#scale-measured-and-projected)."])
    e = p["encode"]
    encoding = (
        f"**Encoding cost.** The packaged MiniLM ({enc['dim']}-d, {enc['doc_max_length_tokens']} tokens at most) "
        f"encoded {enc['docs']:,} real abstracts (mean {enc['mean_chars']:.0f} characters) at "
        f"{enc['docs_per_cpu_s']} abstracts per CPU-second ({enc['docs_per_s']}/s wall on this busy machine, "
        f"{enc['threads']} thread). All of PubMed: {e['cpu_core_hours_minilm']:,.0f} CPU core-hours, i.e. "
        f"{e['cpu_core_hours_minilm'] / 64 / 24:,.1f} days on one 64-core node. On a GPU, *assuming* (not measured "
        f"here: no GPU) {e['gpu_docs_per_s_assumed_minilm']:,} abstracts/s for MiniLM and "
        f"{e['gpu_docs_per_s_assumed_medcpt']}/s for MedCPT (BERT-base, 768-d): {e['gpu_hours_minilm']} and "
        f"{e['gpu_hours_medcpt']} GPU-hours. `medcite index dense encode --shard I/N` splits the work across "
        "machines or GPUs (a Slurm array, a Kubernetes job) and `import` merges the shards; NCBI's precomputed "
        "MedCPT embeddings (`medcite index dense import`) skip encoding altogether."
    )
    disk_total = (r["real_store"]["bytes_per_doc"] * t + p["bm25_disk"]["at_target"]
                  + p["ivfpq_vectors_disk"]["at_target"])
    mem, mem768 = gib(r["projection_serving_ram_bytes"]), gib(r["projection_serving_ram_bytes_768d"])
    conclusion = (
        "**What fits 16 GiB.** One machine serves all of PubMed with tantivy on disk (memory-mapped) + IVF-PQ "
        f"codes in RAM ({gib(ivfpq_formula_bytes(t, d))} GiB at {d}-d, {gib(ivfpq_formula_bytes(t, 768))} GiB at "
        "768-d) + float16 vectors on disk, read only for each query's shortlist: the serving process needs about "
        f"{mem} GiB of its own memory ({mem768} GiB with 768-d MedCPT vectors), and the rest of the 16 GiB is page "
        f"cache: enough for the whole BM25 index ({gib(p['bm25_disk']['at_target'])} GiB), so BM25 stays warm, but not "
        f"for the vectors ({gib(p['ivfpq_vectors_disk']['at_target'])} GiB at {d}-d). Flat (all vectors in RAM) and "
        f"HNSW (vectors + graph in RAM) do not fit. Disk: about {gib(disk_total)} GiB (store + BM25 + vectors at "
        f"{d}-d).\n\n"
        "**Latency at 36M.** IVF-PQ's scan grows about as √N (nlist = 4·√N cells, a fixed nprobe); BM25's posting "
        "lists grow with N. The exact re-rank is the part that changes in kind: at 36M the vectors file "
        f"({gib(p['ivfpq_vectors_disk']['at_target'])} GiB) is far larger than the page cache, so each query reads "
        f"its 256 shortlisted vectors from disk; 256 random page reads took {p['rerank_cold_extra_ms']:.0f} ms (p50) "
        "on this machine's virtual disk (the cold-read line of the table), and that is added to the fitted dense "
        "latency above. Keep it small with a local NVMe disk, a shorter shortlist (`--set "
        "indexes.dense.rerank=64`), or RAM to cache the vectors file too. The fits come from three sizes on a "
        "shared machine: read them as orders of magnitude."
    )
    milvus = ["| dense index | dense GiB | BM25 sparse GiB | total per replica GiB | "
              "query nodes (64 GiB, 2 replicas) |", "|---|---|---|---|---|"]
    for m in r["milvus_plan"]:
        milvus.append(f"| {m['index']} | {m['dense_gib']} | {m['sparse_gib']} | {m['total_gib_per_replica']} | "
                      f"{m['query_nodes']} |")
    cov = r["query_term_coverage"]
    caveats = (
        "**Caveats of the assembled corpus.** Its vocabulary is that of the "
        f"{cov['pool_abstracts']:,} source abstracts: {cov['in_pool_vocabulary']:.0%} of the queries' analysed terms "
        f"occur in it, against {cov['in_file_vocabulary']:.0%} in all {cov['file_abstracts']:,} abstracts of the NLM "
        "file, so a few rare query terms (short posting lists, cheap to score) find nothing; the frequent terms that "
        "dominate BM25's cost have document frequencies in proportion to the real ones. An assembled document has "
        f"{r['document_stats']['chars_per_doc']:.0f} characters and {r['document_stats']['terms_per_doc']:.0f} "
        f"distinct terms on average (the real abstracts: {r['document_stats']['real_chars_per_doc']:.0f} and "
        f"{r['document_stats']['real_terms_per_doc']:.0f}). Each source abstract "
        "recurs in about N/3,000 assembled documents, so the vectors form tight clusters of near-duplicates: "
        f"recall@10 against exact search is lower here than on real embeddings ({r['real_embedding_recall']} at "
        "nprobe 32, shortlist 256 in the dense benchmark), for HNSW as much as for IVF-PQ; the recall columns "
        "compare layouts on the same "
        "data rather than predict recall on PubMed."
    )
    scale = "\n".join([
        SECTION, "", head, "", caveats, "", "### Measured", "", *_measured_tables(sizes), "", verdict, "",
        "### Projected to all of PubMed (36M)", "",
        "Disk and RAM: linear least-squares fits over the measured sizes (IVF-PQ RAM from its formula: a 64-byte "
        "PQ code + 8-byte id + 1-byte live flag per document + the centroids, checked against the measured index "
        "files); latency: a power-law fit p50 = c·N^e of the queries' CPU-time p50 over the measured sizes (one "
        "thread per query: on an idle core the wall time is that plus disk reads; here the wall time also holds "
        "waiting for a core), with linear growth from the largest size as the pessimistic bound. The serving RAM is "
        "the measured serving process's anonymous memory besides its IVF-PQ index (largest over the sizes, plus any "
        "growth per document) + the IVF-PQ formula at 36M.", "", *_projection_table(r), "",
        conclusion, "", encoding, "",
        "### Milvus", "", *_milvus_table(sizes), "",
        f"Milvus for 36M: {r['milvus_measured']}. Sizing by stated assumptions for {t:,} documents with 768-d "
        f"MedCPT vectors and the BM25 sparse field ({p['postings_per_doc']} distinct terms per document, measured "
        "on the documents above, 8 bytes per posting, held twice: the sparse vectors and their inverted index); "
        "query nodes of 64 GiB used to 70 %, 2 replicas; HNSW with M=16 keeps float32 vectors + graph in RAM; "
        "IVF_PQ keeps 64-byte codes; DISKANN keeps PQ codes at Milvus's default budget (0.125 of the vector bytes) "
        "plus its search cache (0.1) in RAM, the graph and vectors on the query node's NVMe; text fields "
        "memory-mapped:", "", *milvus, "",
        "Index nodes need memory for one segment build at a time (segments of about 1 GiB by default), not for the "
        "whole corpus; object storage holds about the embedded disk figure above plus the raw vectors (float32: "
        f"{gib(4 * 768 * t)} GiB at 768-d).",
        "", "Reproduce: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scale.py --sizes 100000,300000,1000000` "
        "(about an hour on a busy 2-core machine, 10 GiB of work files; `--reuse` keeps sizes already measured); "
        "numbers in `benchmarks/results/scale.json`.",
    ])
    return bench + "\n", scale + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,300000,1000000", help="comma-separated corpus sizes")
    ap.add_argument("--work-dir", type=Path, default=common.REPO / "benchmarks" / "work" / "scale",
                    help="stores, indexes and vectors (about 10 GiB at 1M documents)")
    ap.add_argument("--data-dir", type=Path, default=shared_data_dir())
    ap.add_argument("--n-encode", type=int, default=3000, help="real abstracts encoded (and used as they are)")
    ap.add_argument("--n-queries", type=int, default=200)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    ap.add_argument("--flat-max", type=int, default=300_000, help="largest size with a FAISS flat index")
    ap.add_argument("--hnsw-max", type=int, default=100_000, help="largest size with an HNSW index")
    ap.add_argument("--milvus-max", type=int, default=0,
                    help="largest size also measured in Milvus (a loopback milvus-lite server; 0: none)")
    ap.add_argument("--milvus", default="not measured beyond the sizes in the table above",
                    help="what to say about Milvus at 36M")
    ap.add_argument("--no-write", action="store_true", help="do not write results/docs (smoke runs)")
    ap.add_argument("--reuse", action="store_true", help="reuse the results of sizes measured by an earlier run")
    ap.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        run_phase(args)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    pool = build_pool(args.data_dir, args.work_dir / "pool", args.n_encode, args.n_queries)
    print(f"[scale] pool: {len(pool):,} real abstracts, encoding {pool.encode}", flush=True)
    results = sorted((measure_size(args, pool, n) for n in sizes), key=lambda r: int(r["docs"]))
    finish(args, pool, results)


def finish(args: argparse.Namespace, pool: Pool, results: list[dict[str, Any]]) -> dict[str, Any]:
    stats = document_stats(pool)
    terms = stats["terms_per_doc"]
    real_store = real_store_bytes_per_doc(args.data_dir, args.work_dir)
    coverage = query_term_coverage(pool, args.data_dir)
    proj = project(results, pool.encode, terms)
    serving = proj["serve_rest_anon"]["at_target"] + ivfpq_formula_bytes(FULL_PUBMED, pool.encode["dim"])
    largest = results[-1]["serve_embedded"]
    out = {
        "sizes": results, "encode": pool.encode, "projection": proj, "projection_serving_ram_bytes": serving,
        "projection_serving_ram_bytes_768d": (proj["serve_rest_anon"]["at_target"]
                                              + ivfpq_formula_bytes(FULL_PUBMED, 768)),
        "real_docs": len(pool), "queries": len(pool.queries), "threads": args.threads,
        "query_term_coverage": coverage, "document_stats": stats, "real_store": real_store,
 "real_embedding_recall": dense_benchmark_recall(),
        "milvus_measured": args.milvus, "milvus_plan": milvus_plan(FULL_PUBMED, 768, terms),
        "machine_note": f"a shared 2-core machine with 24 GiB (other sessions running; timings are upper bounds), "
                        f"OMP_NUM_THREADS={args.threads}, one query thread",
        "targets": {
            "bm25_p50_le_50ms": largest["bm25"]["latency"]["p50_ms"] <= 50,
            "dense_p50_le_50ms": largest["dense"]["latency"]["p50_ms"] <= 50,
            "embedded_36M_ram_le_16GiB": serving <= 16 * GIB,
            "measured_at_docs": results[-1]["docs"],
        },
    }
    bench_md, scale_md = report(out)
    if not args.no_write:
        common.write_result("scale", out)
        common.update_markdown_section("scale", bench_md)
        write_scale_section(common.REPO / "docs" / "SCALE.md", scale_md)
    print(bench_md)
    return out


def write_scale_section(path: Path, body: str) -> None:
    """Replace (or add) the ``## Scale: measured and projected`` section of ``path``, keeping the others."""
    from medcite.io import atomic_write

    text = path.read_text(encoding="utf-8") if path.exists() else "# Scale\n"
    start = text.find(SECTION)
    if start >= 0:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body.rstrip("\n") + "\n" + (text[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    with atomic_write(path) as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
