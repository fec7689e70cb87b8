"""The run summary's citation chart: bar lengths from metrics and verification checks, and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from viewer_runs import write_json_file, write_run

from medcite.viewer.chart import BAR_W, LABEL_W, citation_chart

SCRIPT = "<script>alert(1)</script>"


def fills(html: str) -> dict[str, str]:
    """Bar label -> width of its filled rect, from the rendered SVG."""
    return dict(re.findall(r'<text class="label"[^>]*>([^<]*)</text>\s*(?:<rect class="track"[^>]*/>\s*)?'
                           r'<rect class="fill" x="\d+" y="4" width="([\d.]+)"', html))


def check(stance: object, kept: object = True) -> dict[str, object]:
    return {"sentence": 0, "pmid": "111", "stance": stance, "scores": {}, "span": ["abstract", 0, 5],
            "kept": kept, "reason": ""}


def write_verification(run: Path, rows: list[dict[str, object]]) -> None:
    (run / "verification.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_rate_bars_are_the_rate_times_the_bar_length() -> None:
    chart, problems = citation_chart(
        {"citations": {"micro": {"coverage": 1.0, "support_rate": 0.5, "contradiction_rate": 0.25},
                       "macro": {"coverage": 0.1}}}, "metrics_task_b.json", [])
    assert problems == []
    assert chart is not None and len(chart.groups) == 1
    group = chart.groups[0]
    assert group.note == "micro-averaged" and group.scale
    assert [(b.label, b.text, b.width, b.y) for b in group.bars] == [
        ("coverage", "1.00", BAR_W, 0), ("support rate", "0.50", BAR_W / 2, 22),
        ("contradiction rate", "0.25", BAR_W / 4, 44)]
    assert [b.kind for b in group.bars] == ["rate", "st-supports", "st-contradicts"]


def test_stance_bars_count_checks_relative_to_the_largest() -> None:
    rows = [{"topic_id": "t1", "citations": {"checks": [check("supports"), check("supports"), check("supports"),
                                                        check("supports", kept=False)]}},
            {"topic_id": "t2", "citations": {"checks": [check("contradicts", kept=False)]},
             "grounding": [{"verdicts": {"9": {"stance": "neutral"}, "8": {"stance": "supports"}}}]}]
    chart, problems = citation_chart({}, "metrics.json", rows)
    assert problems == [] and chart is not None
    (group,) = chart.groups
    assert [(b.label, b.text, b.width) for b in group.bars] == [
        ("supports", "5", BAR_W), ("contradicts", "1", BAR_W / 5), ("neutral", "1", BAR_W / 5)]
    assert group.note == "7 checks, 3 passed" and not group.scale


def test_no_figures_no_chart() -> None:
    assert citation_chart({}, "metrics.json", []) == (None, [])
    assert citation_chart({"map10": 0.4}, "metrics.json", [{"topic_id": "t1", "citations": {"rounds": []}}]) \
        == (None, [])


@pytest.mark.parametrize("citations, message", [
    ("high", "'citations' should be an object of rates, got str \"high\""),
    ({"micro": [0.5]}, "'citations.micro' should be an object of rates, got list [0.5]"),
    ({"coverage": "0.9"}, "citations.coverage should be a rate from 0 to 1, got str \"0.9\""),
    ({"coverage": True}, "citations.coverage should be a rate from 0 to 1, got bool true"),
    ({"micro": {"support_rate": 1.5}}, "citations.micro.support_rate should be a rate from 0 to 1, got float 1.5"),
])
def test_bad_rates_become_problems_not_bars(citations: object, message: str) -> None:
    chart, problems = citation_chart({"citations": citations}, "metrics.json", [])
    assert chart is None
    assert [str(p) for p in problems] == [f"metrics.json: {message}"]


def test_good_rates_are_drawn_beside_a_bad_one() -> None:
    chart, problems = citation_chart({"citations": {"coverage": 0.5, "support_rate": None}}, "m.json", [])
    assert chart is not None and [b.label for b in chart.groups[0].bars] == ["coverage"]
    assert [str(p) for p in problems] == ["m.json: citations.support_rate should be a rate from 0 to 1, got "
                                          "NoneType null"]


def test_run_page_draws_the_chart_from_eval_biogen_b_and_verification(tmp_path: Path, client_for) -> None:
    run = write_run(tmp_path / "runs" / "r1")
    # what `medcite eval biogen-b` writes beside the run (its "run" and "judge" entries are not scores)
    write_json_file(run / "metrics_task_b.json", {
        "run": "r1", "judge": {"backend": "classifier", "batch_size": 32},
        "citations": {"micro": {"coverage": 0.5, "support_rate": 0.75}, "macro": {"coverage": 0.4},
                      "counts": {"citations": 4}, "per_topic": {"t1": {"coverage": 1.0, "citations": 3}}}})
    write_verification(run, [{"topic_id": "t1", "citations": {"checks": [check("supports"), check("neutral")]}}])
    html = client_for(tmp_path / "runs").get("/run/r1").text
    chart = html[html.index('id="citation-chart"'):]
    chart = chart[: chart.index("</section>")]
    assert fills(chart) == {"coverage": f"{BAR_W * 0.5:.1f}", "support rate": f"{BAR_W * 0.75:.1f}",
                            "supports": f"{BAR_W:.1f}", "neutral": f"{BAR_W:.1f}"}
    assert f'<rect class="fill" x="{LABEL_W}"' in chart
    assert "2 checks, 2 passed" in chart
    assert 'id="problems"' not in html
    # the metrics table holds the scores but neither the judge's settings nor the per-topic table
    assert "citations.micro.support_rate" in html and "citations.counts.citations" in html
    assert "judge.batch_size" not in html and "per_topic" not in html
    # the per-topic table shows on the topic comparison
    write_run(tmp_path / "runs" / "r2")
    cmp = client_for(tmp_path / "runs").get("/compare?runs=r1&runs=r2&topic=t1").text
    assert "citations.coverage" in cmp


def test_metrics_json_wins_over_metrics_task_b(tmp_path: Path, client_for) -> None:
    run = write_run(tmp_path / "runs" / "r1")
    write_json_file(run / "metrics.json", {"citations": {"coverage": 0.25}})
    write_json_file(run / "metrics_task_b.json", {"citations": {"micro": {"coverage": 1.0}}})
    html = client_for(tmp_path / "runs").get("/run/r1").text
    assert fills(html) == {"coverage": f"{BAR_W * 0.25:.1f}"}


def test_run_without_figures_has_no_chart(tmp_path: Path, client_for) -> None:
    write_run(tmp_path / "runs" / "r1")
    r = client_for(tmp_path / "runs").get("/run/r1")
    assert r.status_code == 200
    assert 'id="citation-chart"' not in r.text and "<svg" not in r.text and 'id="problems"' not in r.text


def test_wrong_types_are_listed_under_problems_and_the_page_still_renders(tmp_path: Path, client_for) -> None:
    run = write_run(tmp_path / "runs" / "r1")
    write_json_file(run / "metrics_task_b.json", {"citations": {"micro": {"coverage": "all", "support_rate": 0.5}}})
    write_verification(run, [
        {"topic_id": "t1", "citations": {"checks": [check(7), check("supports"), "oops"]}},
        {"topic_id": "t2", "citations": {"checks": {"stance": "supports"}}},
    ])
    r = client_for(tmp_path / "runs").get("/run/r1")
    assert r.status_code == 200
    problems = r.text[r.text.index('id="problems"'):r.text.index("</section>")]
    assert "metrics_task_b.json: citations.micro.coverage should be a rate from 0 to 1, got str &#34;all&#34;" \
        in problems
    assert "verification.jsonl:1: field &#39;citations.checks.0.stance&#39; should be a string, got int 7" in problems
    assert "verification.jsonl:1: field &#39;citations.checks.2&#39; should be an object" in problems
    assert "verification.jsonl:2: field &#39;citations.checks&#39; should be a list" in problems
    # what is well-formed is still drawn
    assert fills(r.text) == {"support rate": f"{BAR_W * 0.5:.1f}", "supports": f"{BAR_W:.1f}"}


def test_hostile_labels_and_values_are_escaped(tmp_path: Path, client_for) -> None:
    run = write_run(tmp_path / "runs" / "r1")
    write_json_file(run / "metrics.json", {"citations": {f"coverage{SCRIPT}": 0.5, "coverage": f"x{SCRIPT}"}})
    write_verification(run, [{"topic_id": "t1", "citations": {"checks": [check(f"a{SCRIPT}"), check('"/><svg')]}}])
    html = client_for(tmp_path / "runs").get("/run/r1").text
    assert SCRIPT not in html and '"/><svg' not in html
    assert "a&lt;script&gt;alert(1)&lt;/script&gt;" in html  # an unknown stance label is shown as text


def test_counts_show_as_integers_and_huge_numbers_do_not_break_the_page(tmp_path: Path, client_for) -> None:
    run = write_run(tmp_path / "runs" / "r1")
    write_json_file(run / "metrics.json", {"citations": {"counts": {"supports": 85}, "coverage": 0.5}})
    (run / "metrics_task_b.json").write_text('{"nuggets": {"big": 1' + "0" * 400 + "}}", encoding="utf-8")
    r = client_for(tmp_path / "runs").get("/run/r1")
    assert r.status_code == 200
    assert re.search(r"<th>citations.counts.supports</th><td class=\"num\">85</td>", r.text)
    assert "<th>citations.coverage</th><td class=\"num\">0.5000</td>" in r.text
    assert "nuggets.big" not in r.text
