"""benchmarks/plot_results.py draws each comparison from a results JSON and embeds it in its own section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_modules import load_bench

pytest.importorskip("matplotlib")
plots = load_bench("plots")
plot_results = load_bench("plot_results")

PNG = b"\x89PNG\r\n\x1a\n"


def lat(p50_ms: float) -> dict[str, float]:
    return {"n": 3, "p50_ms": p50_ms, "p95_ms": p50_ms, "mean_ms": p50_ms, "max_ms": p50_ms}


def write(folder: Path, name: str, data: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    write(folder, "retrieval", {"corpus": {"documents": 100}, "systems": [
        {"name": "BM25", "questions": 4, "MAP@10": 0.5, "latency_s": lat(1.0), "stage": "first"},
        {"name": "Dense", "questions": 4, "MAP@10": 0.6, "latency_s": lat(20.0), "stage": "first"},
        {"name": "BM25 (the reranked questions only)", "questions": 2, "MAP@10": 0.4, "latency_s": lat(1.0),
         "stage": "reference"},
        {"name": "Dense → CE", "questions": 2, "MAP@10": 0.3, "latency_s": lat(900.0), "stage": "rerank"}]})
    write(folder, "task_b", {"runs": {"offline/none": {"latency": {"total": {"mean_ms": 200.0}}},
                                      "clac25-a/none": {"latency": {"total": {"mean_ms": 50.0}}}}})
    write(folder, "citations", {"runs": {
        "offline-none": {"support_rate": 0.75, "random_support_rate": 0.25},
        "clac25-a-none": {"support_rate": 0.5, "random_support_rate": 0.0}}})  # no baseline: no bar
    write(folder, "bioasq_a", {"questions": 3, "rows": [
        {"system": "BM25", "scorer": "tfidf", "map10": 0.5, "snippet_f1": 0.4, "seconds_retrieval": 0.001,
         "seconds_snippets": 0.01},
        {"system": "ens", "scorer": "embedding", "map10": 0.6, "snippet_f1": 0.3, "seconds_retrieval": 0.5,
         "seconds_snippets": 2.0},
        {"system": "gold documents (oracle)", "scorer": "tfidf", "map10": 1.0, "snippet_f1": 0.9,
         "seconds_retrieval": 0.0, "seconds_snippets": 0.0}]})
    measures = {"yesno": {"macro_f1": 0.4}, "factoid": {"MRR": 0.1}, "list": {"F1": 0.2}, "ideal": {"rouge2_f1": 0.4}}
    better = {"yesno": {"macro_f1": 0.8}, "factoid": {"MRR": 0.2}, "list": {"F1": 0.2}, "ideal": {"rouge2_f1": 0.5}}
    write(folder, "bioasq_b", {"held_back_questions": 5,
                               "systems": {"extractive": better, "baseline: trivial": measures}})
    return folder


def test_every_benchmark_gets_non_empty_pngs_and_a_section(results: Path, tmp_path: Path) -> None:
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# B\n\n<!-- task_b:start -->\ntable\n<!-- task_b:end -->\n", encoding="utf-8")
    written = plot_results.main(results=results, img=tmp_path / "img", markdown=md)
    names = sorted(p.name for p in written)
    assert names == sorted(["retrieval_ratio.png", "retrieval_cost.png", "task_b_ratio.png", "task_b_cost.png",
                            "bioasq_a_ratio.png", "bioasq_a_cost.png", "bioasq_b_ratio.png"])
    for png in written:
        data = png.read_bytes()
        assert data.startswith(PNG) and len(data) > 2000
    text = md.read_text(encoding="utf-8")
    assert "<!-- task_b:start -->\ntable\n<!-- task_b:end -->" in text  # the table section is untouched
    for section in ("retrieval_plots", "task_b_plots", "bioasq_a_plots", "bioasq_b_plots"):
        assert f"<!-- {section}:start -->" in text
    assert "retrieval_full_plots" not in text  # no retrieval_full.json: no figure, no section
    assert str(tmp_path / "img" / "task_b_ratio.png") in text


def test_ratios_are_against_the_baseline_measured_on_the_same_questions(results: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: dict[str, list] = {}
    monkeypatch.setattr(plot_results, "ratio_bars", lambda bars, out, **kw: drawn.setdefault(out.name, bars) and out)
    monkeypatch.setattr(plot_results, "cost_quality", lambda pts, out, **kw: drawn.setdefault(out.name, pts) and out)
    retrieval = json.loads((results / "retrieval.json").read_text())
    plot_results.retrieval(retrieval, tmp_path, "retrieval")
    assert [(b.label, b.ratio) for b in drawn["retrieval_ratio.png"]] == [
        ("BM25", 1.0), ("Dense", pytest.approx(1.2)), ("Dense → CE", pytest.approx(0.75))]
    assert [(p.label, p.cost, p.baseline) for p in drawn["retrieval_cost.png"]] == [
        ("BM25", 0.001, True), ("Dense", 0.02, False), ("Dense → CE", 0.9, False)]
    bioasq_b = json.loads((results / "bioasq_b.json").read_text())
    plot_results.bioasq_b(bioasq_b, tmp_path)
    assert [round(b.ratio, 3) for b in drawn["bioasq_b_ratio.png"]] == [2.0, 2.0, 1.0, 1.25]
    plot_results.task_b(json.loads((results / "task_b.json").read_text()),
                        json.loads((results / "citations.json").read_text()), tmp_path)
    assert [(b.label, b.ratio) for b in drawn["task_b_ratio.png"]] == [("offline-none", 3.0), ("clac25-a-none", None)]
    assert [(p.label, p.cost, p.quality, p.baseline) for p in drawn["task_b_cost.png"]] == [
        ("offline-none", 0.2, 0.75, True), ("clac25-a-none", 0.05, 0.5, False)]


def test_ratio_bars_refuse_to_draw_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no bar has a non-zero baseline"):
        plots.ratio_bars([plots.Ratio("a", 0.5, 0.0)], tmp_path / "x.png", title="t", xlabel="x")
    assert not (tmp_path / "x.png").exists()
