"""The benchmark helpers: docs section rewriting, subprocess measurement, the snippet-level BioASQ corpus."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from bench_modules import load_bench

common = load_bench("common")
corpus = load_bench("bioasq_corpus")


def test_markdown_section_created_then_replaced_without_touching_others(tmp_path: Path) -> None:
    md = tmp_path / "docs" / "BENCHMARKS.md"
    md.parent.mkdir()
    common.update_markdown_section("bm25", "first", path=md)
    common.update_markdown_section("dense", "other", path=md)
    common.update_markdown_section("bm25", "second\n", path=md)
    text = md.read_text()
    assert text == ("# Benchmarks\n\n<!-- bm25:start -->\nsecond\n<!-- bm25:end -->\n\n"
                    "<!-- dense:start -->\nother\n<!-- dense:end -->\n")


def test_markdown_section_body_with_backslashes_is_kept_verbatim(tmp_path: Path) -> None:
    md = tmp_path / "B.md"
    common.update_markdown_section("x", "a", path=md)
    common.update_markdown_section("x", r"C:\new \1 \g<0>", path=md)
    assert r"C:\new \1 \g<0>" in md.read_text()


def test_markdown_section_rejects_names_that_break_markers(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        common.update_markdown_section("a b", "x", path=tmp_path / "B.md")


def test_run_measured_reports_exit_code_output_and_peak_memory() -> None:
    # the child allocates ~200 MiB and holds it, so its peak RSS must exceed that
    # (held for 0.5 s: the sampler polls every 50 ms, and a loaded machine can delay a poll)
    hold = "import time; b = b'x' * (200 * 2**20); time.sleep(0.5); print('ok')"
    m = common.run_measured([sys.executable, "-c", hold])
    assert m.returncode == 0 and m.stdout.strip() == "ok"
    assert m.peak_rss_mib > 200
    assert 0 < m.cpu_s and m.wall_s > 0
    busy = common.run_measured([sys.executable, "-c", "import time; t = time.process_time()\n"
                                "while time.process_time() - t < 0.3: pass"])
    assert busy.cpu_s >= 0.3
    # a tiny child of a large parent is small: the parent's memory must not leak into the measure
    ballast = b"y" * (300 * 2**20)
    tiny = common.run_measured([sys.executable, "-c", "pass"])
    assert len(ballast) and tiny.peak_rss_mib < 100
    failed = common.run_measured([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert failed.returncode == 3
    with pytest.raises(RuntimeError, match="exit code 3"):
        failed.check()


def test_latency_summary_in_milliseconds() -> None:
    s = common.latency_summary([0.001, 0.002, 0.003, 0.004, 0.010])
    assert s["n"] == 5 and s["p50_ms"] == 3.0 and s["max_ms"] == 10.0 and s["mean_ms"] == 4.0


def _snip(pmid: str, text: str, section: str = "abstract", start: int = 0) -> dict[str, object]:
    return {"document": f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}", "text": text, "beginSection": section,
            "endSection": section, "offsetInBeginSection": start, "offsetInEndSection": start + len(text)}


def test_snippet_documents_are_medcites_own() -> None:
    """The benchmark corpus rebuilds documents with the code `medcite models build` trains on (tested in
    tests/unit/train/test_snippet_store.py)."""
    from medcite.train import bioasq_docs

    assert corpus.snippet_documents is bioasq_docs.snippet_documents and corpus.pmid_of is bioasq_docs.pmid_of


def test_build_writes_topics_qrels_and_checks_the_dev_list(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "bioasq").mkdir(parents=True)
    (data / "pubmedqa").mkdir()
    questions = [
        {"id": "q1", "body": "What\tis X?\n", "type": "factoid",
         "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/7", "http://www.ncbi.nlm.nih.gov/pubmed/9"],
         "snippets": [_snip("7", "X is a gene.")]},
        {"id": "q2", "body": "Is Y good?", "type": "yesno", "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/8"],
         "snippets": [_snip("8", "Y is good.")]},
    ]
    with gzip.open(data / corpus.BIOASQ_FILE, "wt") as fh:
        json.dump({"questions": questions}, fh)
    (data / corpus.DEV_IDS_FILE).write_text("q1\nq2\n")
    (data / corpus.PUBMEDQA_FILE).write_text(json.dumps(
        {"5": {"CONTEXTS": ["Background.", "Methods."], "LONG_ANSWER": "Conclusion."}}))
    files = corpus.build(data, tmp_path / "out", max_questions=1)
    assert files.topics_tsv.read_text() == "q1\tWhat is X?\n"
    assert files.qrels.read_text() == "q1 0 7 1\nq1 0 9 1\n"
    assert [json.loads(x)["pmid"] for x in files.snippet_docs.read_text().splitlines()] == ["7", "8"]
    assert json.loads(files.pubmedqa_docs.read_text()) == {
        "pmid": "5", "title": "", "abstract": "Background. Methods. Conclusion."}
    assert files.stats["qrels_pairs"] == 2 and files.stats["qrels_pairs_without_snippet_document"] == 1

    (data / corpus.DEV_IDS_FILE).write_text("q1\n")
    with pytest.raises(ValueError, match="1 questions not in the dev list"):
        corpus.build(data, tmp_path / "out2")


def test_full_corpus_section_gives_ratios_to_bm25_and_the_best_system() -> None:
    report = load_bench("retrieval_report")
    lat = {"p50_ms": 12.0}

    def row(name: str, preset: str, map10: float, *over: str) -> dict[str, object]:
        return {"name": name, "preset": preset, "overrides": list(over), "questions": 300, "MAP@10": map10,
                "R@100": 0.8, "R@100_findable": 0.9, "nDCG@10": 0.7, "latency_s": lat}

    result = {"measured_at": "T", "git_commit": "abc", "command": "python bench_retrieval.py --full-corpus",
              "wall_s": 10.0, "machine": {"cpus": 2, "load_avg_1m_at_start": 0.1},
              "split": {"held_back_questions": 300}, "corpus": {"documents": 59837, "store": "benchmarks/work/store"},
              "ceiling": {"MAP@10": 0.95, "R@100": 0.9},
              "systems": [row("BM25", "bm25", 0.5), row("Dense", "hybrid", 0.9, "dense only"),
                          row("Hybrid", "hybrid", 0.6)]}
    text = report.markdown_full(result)
    assert "59,837 documents" in text
    assert "| Dense | 300 | 0.9000 | 1.80× |" in text and "| Hybrid | 300 | 0.6000 | 1.20× |" in text
    # the best is chosen among runnable presets (no overrides): the dense-only row is not a preset
    assert text.rstrip().endswith("Best: Hybrid, MAP@10 0.6000 = 1.20× BM25's 0.5000.")
