"""Make the viewer screenshots in docs/img (topic page with an open citation, and a run comparison).

Needs the Debian browser (`apt-get install chromium`) and the Python `playwright` package; Playwright's
own browser download is not used. Usage: python scripts/screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from medcite.viewer.server import serve_in_thread
from medcite.viewer.synthetic import write_synthetic_run

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
REPO = Path(__file__).resolve().parent.parent


def shrink(path: Path, colours: int = 128) -> None:
    """Re-save as a palette PNG: screenshots are flat colours, so this keeps them sharp and small."""
    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=0)
    small.save(path, optimize=True)


def make_runs(root: Path) -> None:
    write_synthetic_run(root / "clac25-a-demo", 12, seed=1, preset="clac25-a")
    write_synthetic_run(root / "offline-demo", 12, seed=2, preset="offline")
    (root / "clac25-a-demo" / "metrics.json").write_text(json.dumps(
        {"citations": {"coverage": 0.91, "support_rate": 0.78}, "rouge": {"rouge2_f1": 0.112}}))
    (root / "offline-demo" / "metrics.json").write_text(json.dumps(
        {"citations": {"coverage": 0.97, "support_rate": 0.71}, "rouge": {"rouge2_f1": 0.094}}))
    (root / "offline-demo" / "validation.json").write_text(json.dumps({"ok": True, "errors": []}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, serve_in_thread(Path(tmp)) as base, sync_playwright() as pw:
        make_runs(Path(tmp))
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(f"{base}/run/clac25-a-demo/topic/183")
        page.locator("#answer a.chip").nth(1).click()
        page.locator("#panel article.abstract").wait_for()
        topic_png = args.out / "viewer-topic.png"
        page.screenshot(path=str(topic_png))
        page.goto(f"{base}/compare?runs=clac25-a-demo&runs=offline-demo&topic=183")
        compare_png = args.out / "viewer-compare.png"
        page.screenshot(path=str(compare_png))
        browser.close()
    for png in (topic_png, compare_png):
        shrink(png)
        print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}: {png.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
