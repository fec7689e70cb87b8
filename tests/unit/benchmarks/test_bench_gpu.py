"""benchmarks/bench_gpu.py: it refuses to run without CUDA unless --cpu, and its docs section says plainly which
figures were measured where."""

from __future__ import annotations

import pytest

from bench_modules import load_bench

bench = load_bench("bench_gpu")


def test_without_cuda_it_refuses_unless_cpu_is_given(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main([]) == 2
    err = capsys.readouterr().err
    assert "no CUDA device here" in err and "--cpu" in err


CPU_RESULT = {
    "measured_at": "2025-01-01T00:00:00Z", "machine": {"cpus": 2}, "threads": 2,
    "encoding": [{"model": "bert-base", "dtype": "float32", "resolved_dtype": "float32", "n": 8, "medcite_batch": 32,
                  "medcite_per_s": 2.0, "medcite_per_cpu_s": 4.0, "st_batch32_per_s": 2.0, "st_batch32_per_cpu_s": 4.0,
                  "medcite_vs_st": 1.0}],
    "reranking": [{"model": "ce-bert-base", "dtype": "float32", "resolved_dtype": "float32", "n": 8, "batch": 32,
                   "pairs_per_s": 2.5, "pairs_per_cpu_s": 5.0}],
    "pjs": {"projected_s": {"ce-bert-base": 4000.0}, "projected_total_s": 4000.0},
}


def test_the_docs_section_names_who_measured_what() -> None:
    text = bench.docs_section(None, CPU_RESULT)
    assert "Measured by the issue's reporter on one H200 (issue 32; not measured by medcite)" in text
    assert "150 abstracts/s" in text and "2,831/s" in text and "1,251/s in fp32" in text and "2,381/s in fp16" in text
    assert "medcite's own GPU run of `bench_gpu.py` has not been done yet" in text
    assert ".venv/bin/python benchmarks/bench_gpu.py" in text
    # 36,000,000 / 1,251 per s = 28,777 s = 8.0 h; / 2,381 = 4.2 h; / 4.0 per CPU-second (the CPU) = 104.2 days
    assert "| issue reporter, H200, BERT-base fp32 | 1,251 | 8.0 h |" in text
    assert "| issue reporter, H200, BERT-base fp16 | 2,381 | 4.2 h |" in text
    assert ("| medcite on this CPU (bench_gpu.py --cpu), BERT-base fp32, per CPU core (CPU time) | 4.0 | 104.2 days of "
            "one core |") in text
    assert "| bert-base | float32 (float32) | 8 | 2.0 (4.0) | 32 | 2.0 (4.0) | – | 1.00 |" in text
    # 10,000 candidates / 5.0 pairs per CPU-second = 2,000 CPU-seconds = 0.6 core-hours
    assert "2,000 CPU-seconds of one core per question (ce-bert-base 2,000 s), i.e. 0.6 core-hours" in text
