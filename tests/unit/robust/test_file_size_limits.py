"""Issue 42, items 3, 4 and 7: every writer under a file-size limit (``ulimit -f``: RLIMIT_FSIZE in a subprocess).

Each writer (the store, the tantivy BM25 index, the dense FAISS index, a run folder, a BioASQ run folder, the LLM
cache, a trained model) ends in one ``error:`` line that names the file, says "file too large" and that nothing
already written was lost; never a traceback, never an error without a path. What was there before is still there:
the store holds its earlier files, an index its last commit, a run folder its finished topics, and the same command
run again without the limit ends where an uninterrupted one ends.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from robust_helpers import corpus_lines, phase_b_questions, store_state

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")]

SRC = str(Path(__file__).resolve().parents[3] / "src")
TESTS = str(Path(__file__).resolve().parents[2])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, TESTS, os.environ.get("PYTHONPATH", "")])}


def medcite(*args: str, limit: int | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``medcite ARGS`` in a subprocess whose files may grow to ``limit`` bytes at most."""
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "medcite", "-q", *args], preexec_fn=cap, env=ENV, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def assert_refused_write(proc: subprocess.CompletedProcess[str], path: Path | str) -> str:
    """One clean error line naming ``path``, the reason and what was kept; returns it."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out
    line = errors[0]
    assert "file too large" in line and str(path) in line and "nothing already written was lost" in line, line
    return line


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("limits")
    (folder / "small.jsonl").write_text(corpus_lines(30))
    (folder / "medium.jsonl").write_text(corpus_lines(100))
    (folder / "big.jsonl").write_text(corpus_lines(8000))
    return folder


def test_ingest_under_a_file_size_limit(files: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert medcite("ingest", str(files / "small.jsonl"), "--store", str(store)).returncode == 0
    before = store_state(store)
    proc = medcite("ingest", str(files / "big.jsonl"), "--store", str(store), limit=200_000)
    assert_refused_write(proc, store / "store.sqlite")
    assert "cannot rollback" not in proc.stderr
    assert store_state(store) == before  # the earlier file is committed, the failed one rolled back
    assert medcite("ingest", str(files / "big.jsonl"), "--store", str(store)).returncode == 0  # then it goes on
    assert len(store_state(store)[0]) == 8000


def test_bm25_index_under_a_file_size_limit(files: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert medcite("ingest", str(files / "big.jsonl"), "--store", str(store)).returncode == 0
    before = store_state(store)
    proc = medcite("index", "bm25", "--store", str(store), limit=40_000)
    assert_refused_write(proc, store / "indexes")
    assert "ValueError" not in proc.stderr and store_state(store) == before
    again = medcite("search", "statins LDL", "--corpus", str(store), "-k", "3")  # builds it, as if never tried
    assert again.returncode == 0 and again.stdout.count("Statins and LDL study") == 3, again.stderr


def test_bm25_index_update_under_a_file_size_limit_keeps_the_last_commit(files: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert medcite("ingest", str(files / "small.jsonl"), "--store", str(store)).returncode == 0
    assert medcite("index", "bm25", "--store", str(store)).returncode == 0
    (index,) = (p for p in (store / "indexes").iterdir() if not p.name.startswith("."))
    searched = medcite("search", "statins LDL", "--index", str(index), "-k", "5")
    assert medcite("ingest", str(files / "big.jsonl"), "--store", str(store)).returncode == 0
    proc = medcite("index", "bm25", "--store", str(store), limit=40_000)
    assert_refused_write(proc, index)
    assert "keeps its last commit" in proc.stderr
    assert medcite("search", "statins LDL", "--index", str(index), "-k", "5").stdout == searched.stdout


def test_dense_index_under_a_file_size_limit(files: Path, tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "dense"
    assert medcite("ingest", str(files / "medium.jsonl"), "--store", str(store)).returncode == 0
    # 100 abstracts, 384-d: a chunk of 25 is 38 kB (float32), the row file 77 kB (float16 on disk), the FAISS file
    # 154 kB (float32)
    args = ["index", "dense", "--store", str(store), "--out", str(out), "--chunk-size", "25", "--encoder",
            "minilm-onnx", "--set", "indexes.dense.vector_dtype=float16"]
    for limit, which in ((25_000, "chunks/embeds_chunk_0.npy"), (60_000, "vectors.1.bin"),
                         (120_000, "index.1.faiss")):
        proc = medcite(*args, limit=limit)
        line = assert_refused_write(proc, out / which)
        assert "requested and" not in line and "RuntimeError" not in proc.stderr, line
        assert not list(out.rglob(".*.tmp"))  # no temporary file left behind
    assert medcite(*args).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["rows"] == 100


def _topics(folder: Path) -> Path:
    path = folder / "topics.json"
    path.write_text(json.dumps([{"id": f"t{i}", "question": q} for i, q in enumerate(
        ["Do statins lower LDL?", "Does exercise raise HDL?", "What treats scurvy?"] * 3, 1)]))
    return path


def _rows(run: Path) -> dict[str, list[str]]:
    """A run folder's per-topic rows, timings aside (they differ from run to run)."""
    return {p.name: sorted(p.read_text().splitlines()) for p in sorted(run.iterdir())
            if p.suffix in (".jsonl", ".trec") and p.name != "timings.jsonl"}


def test_run_under_a_file_size_limit(files: Path, tmp_path: Path) -> None:
    store, topics = tmp_path / "store", _topics(tmp_path)
    assert medcite("ingest", str(files / "small.jsonl"), "--store", str(store)).returncode == 0
    assert medcite("index", "bm25", "--store", str(store)).returncode == 0
    args = ["run", "--topics", str(topics), "--corpus", str(store), "--preset", "bm25", "--run-id", "r"]
    proc = medcite(*args, "--out", str(tmp_path / "run"), limit=9_000)
    line = assert_refused_write(proc, tmp_path / "run")
    assert "the run folder keeps every finished topic" in line
    assert "not a medcite document store" not in proc.stderr  # the store is read; only the run folder is refused
    assert medcite(*args, "--out", str(tmp_path / "run")).returncode == 0  # goes on from there
    assert medcite(*args, "--out", str(tmp_path / "whole")).returncode == 0
    assert _rows(tmp_path / "run") == _rows(tmp_path / "whole")


def test_bioasq_phase_b_under_a_file_size_limit_names_the_file(tmp_path: Path) -> None:
    questions = tmp_path / "b.json"
    questions.write_text(phase_b_questions())
    run = tmp_path / "run"
    proc = medcite("bioasq", "phase-b", "--questions", str(questions), "--run-dir", str(run), "--output",
                   str(tmp_path / "sub.json"), "--set", "qa.backend=extractive", limit=8_000)
    line = assert_refused_write(proc, run)
    assert line != "error: File too large"
    assert not (tmp_path / "sub.json").exists()


def test_llm_cache_under_a_file_size_limit(tmp_path: Path) -> None:
    code = """
import sys
from medcite.errors import WriteError
from medcite.llm.cache import LLMCache
from medcite.llm.completion import Completion
cache = LLMCache(sys.argv[1])
try:
    for i in range(10_000):
        cache.put(f"k{i}", "local", "m", [{"role": "user", "content": "q" * 500}], {}, Completion("a" * 2000, "m"))
except WriteError as exc:
    print(exc.message)
    print(len(cache))
"""
    path = tmp_path / "llm-cache.sqlite"

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    proc = subprocess.run([sys.executable, "-c", code, str(path)], preexec_fn=cap, env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    message, kept = proc.stdout.splitlines()
    assert message.startswith("file too large") and str(path) in message
    assert "the cache keeps every reply stored before" in message
    from medcite.llm.cache import LLMCache

    cache = LLMCache(path)  # without the limit: every reply stored before the refused one is there
    assert len(cache) == int(kept) > 0
    cache.close()


def test_training_a_model_under_a_file_size_limit(tmp_path: Path) -> None:
    import csv

    data = tmp_path / "hv.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["claim", "evidence", "label"])
        writer.writeheader()
        for i in range(45):
            label = ("Supports", "Refutes", "Neutral")[i % 3]
            verb = {"Supports": "lowered", "Refutes": "did not lower", "Neutral": "were given with"}[label]
            writer.writerow({"claim": f"Statins lower LDL {i}", "evidence": f"In trial {i}, statins {verb} LDL.",
                             "label": label})
    out = tmp_path / "model"
    proc = medcite("train", "stance", "--data", str(data), "--out", str(out), "--c", "1.0", limit=3_000)
    assert_refused_write(proc, out)
