"""The viewer in a real browser: Debian's headless Chromium driven by Playwright.

Playwright's own browser download does not work offline, so the Debian binary is used
(`apt-get install chromium`). Locally the test is skipped when that binary is absent; in CI (env CI set)
it must run, and a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medcite.viewer.server import serve_in_thread
from medcite.viewer.synthetic import write_synthetic_run

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
PAYLOAD = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} not found: CI must `apt-get install -y chromium chromium-driver`")
        pytest.skip(f"{CHROMIUM} not found (install Debian's chromium to run the browser test)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("the Python package playwright is not installed (pip install 'medcite[dev]')")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    write_synthetic_run(root / "run-a", 4, seed=1, preset="clac25-a", llm_calls=1)
    write_synthetic_run(root / "run-b", 4, seed=2, preset="offline", llm_calls=0)
    # a hostile question in run-b, topic 181: it must show as text and never execute
    lines = (root / "run-b" / "topics.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["question"] = f"Hostile {PAYLOAD}"
    (root / "run-b" / "topics.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return root


def test_topic_chip_opens_the_abstract_and_compare_works(browser, runs: Path) -> None:
    with serve_in_thread(runs) as base:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        # run list -> run -> topic, through links
        page.goto(base + "/")
        page.get_by_role("link", name="run-a", exact=True).click()
        page.wait_for_url("**/run/run-a")
        page.locator("#topics-table a[href='/run/run-a/topic/182']").first.click()
        page.wait_for_url("**/run/run-a/topic/182")
        assert page.locator("h1.question").inner_text().startswith("Is ")

        # click the first citation chip: the side panel shows that abstract with its evidence highlighted
        chip = page.locator("#answer a.chip").first
        pmid = chip.get_attribute("data-pmid")
        chip.click()
        panel = page.locator("#panel article.abstract")
        panel.wait_for()
        assert panel.get_attribute("data-pmid") == pmid
        assert "trial" in panel.locator("h3").inner_text()
        assert panel.locator(f"a[href='https://pubmed.ncbi.nlm.nih.gov/{pmid}/']").count() == 1
        assert panel.locator("mark.ev.active").count() >= 1
        assert page.evaluate("location.hash") == f"#pmid-{pmid}"
        assert "selected" in (chip.get_attribute("class") or "")

        # a permalink to the abstract opens it in the panel on load
        page.goto(f"{base}/run/run-a/topic/182#pmid-{pmid}")
        page.locator("#panel article.abstract").wait_for()

        # client-side search on the topic list
        page.goto(base + "/run/run-a")
        page.fill(".filters input[name=q]", "183")
        assert page.locator("#topics-table tbody tr:not([hidden])").count() == 1
        assert "q=183" in page.url

        # compare two runs: select both on the run list, then open one topic side by side
        page.goto(base + "/")
        page.check("input[name=runs][value=run-a]")
        page.check("input[name=runs][value=run-b]")
        page.get_by_role("button", name="Compare selected runs").click()
        page.wait_for_url("**/compare?runs=run-a&runs=run-b")
        assert page.locator("table.compare-stats th", has_text="Avg words").count() == 1
        page.locator("#compare-table a[href*='topic=181']").first.click()
        page.wait_for_url("**topic=181")
        assert page.locator("table.aligned thead th").count() == 3
        assert page.locator("table.aligned a.chip.shared, table.aligned a.chip.unique").count() > 0

        # the hostile question of run-b is shown as text and never runs
        page.goto(base + "/run/run-b/topic/181")
        assert page.locator("h1.question").inner_text() == f"Hostile {PAYLOAD}"
        assert page.locator("h1.question script, h1.question img").count() == 0
        assert page.evaluate("window.__pwned === undefined")
        assert errors == []
        page.close()


def test_run_summary_chart_is_drawn_to_scale_under_the_csp(browser, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_synthetic_run(root / "run-c", 2, seed=3, preset="offline", llm_calls=0)
    (root / "run-c" / "metrics_task_b.json").write_text(json.dumps(
        {"citations": {"micro": {"coverage": 1.0, "support_rate": 0.5, "contradiction_rate": 0.25}}}))
    with serve_in_thread(root) as base:
        page = browser.new_page()
        console: list[str] = []
        page.on("console", lambda msg: console.append(msg.text))
        page.goto(base + "/run/run-c")
        bars = page.locator("#citation-chart figure").first.locator("rect.fill")
        assert bars.count() == 3
        widths = [bars.nth(i).bounding_box()["width"] for i in range(3)]
        assert widths[0] > 50
        assert widths[1] == pytest.approx(widths[0] / 2, rel=0.02)
        assert widths[2] == pytest.approx(widths[0] / 4, rel=0.03)
        # colours come from viewer.css (no inline style, which the CSP would block)
        fills = [bars.nth(i).evaluate("e => getComputedStyle(e).fill") for i in range(3)]
        assert len(set(fills)) == 3 and "rgb(0, 0, 0)" not in fills
        assert not [m for m in console if "Content Security Policy" in m]
        page.close()


def test_study_design_badges_and_filter(browser, runs: Path) -> None:
    """Issue 44: every cited source shows its study design, and the topic page filters its sources by design."""
    with serve_in_thread(runs) as base:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(base + "/run/run-a/topic/181")
        chips = page.locator("#answer a.chip[data-pmid]")
        assert chips.count() > 0
        # each chip carries a badge naming its design; the abstract list carries the full label
        assert page.locator("#answer a.chip .design").count() == chips.count()
        badges = page.locator("#abstracts article.abstract .design").all_inner_texts()
        assert any("randomised controlled trial" in b for b in badges)
        options = page.locator("#design-filter option").all_inner_texts()
        assert options[0] == "all sources" and any(o.startswith("randomised controlled trial") for o in options)

        total = page.locator("#abstracts article.abstract").count()
        page.select_option("#design-filter", "rct")
        shown = page.locator("#abstracts article.abstract:not([hidden])")
        assert 0 < shown.count() < total
        for i in range(shown.count()):
            assert "rct" in (shown.nth(i).get_attribute("data-designs") or "").split()
            assert shown.nth(i).locator(".design").inner_text().startswith("randomised controlled trial")
        dimmed = page.locator("#answer a.chip.design-out")
        kept = page.locator("#answer a.chip:not(.design-out)")
        assert dimmed.count() + kept.count() == chips.count()
        for i in range(kept.count()):
            assert "rct" in (kept.nth(i).get_attribute("data-designs") or "").split()
        assert "design=rct" in page.url
        assert page.locator("#design-count").inner_text() == f"{shown.count()} of {total} sources"

        # the filter is a link: opening it again shows the same sources
        page.goto(page.url)
        assert page.locator("#design-filter").input_value() == "rct"
        assert page.locator("#abstracts article.abstract:not([hidden])").count() == shown.count()
        page.select_option("#design-filter", "")
        assert page.locator("#abstracts article.abstract:not([hidden])").count() == total
        assert errors == []
        page.close()
