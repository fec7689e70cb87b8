"""`medcite pubmed sync` against a local HTTP server: a first sync, a re-run with nothing new, and the ingest.

The server is Python's ``http.server`` on 127.0.0.1 serving, under NLM's names, ``--copies`` copies of the real
2020 baseline file ``pubmed20n0014.xml.gz`` (16.7 MB, 30,000 records) as baseline files and the real 2021
update file sample (300 records + 20 deletions) as an update file, each with its ``.md5``. Measured: wall time
and peak RSS of each ``medcite pubmed sync`` process (download + MD5 of every file; then the re-run, which must
download nothing), and the ``--ingest`` of the mirror into a fresh store. The trivial baseline beside the sync
is the time to read the same bytes from disk and hash them (``md5`` of every file), the floor any verified
download has to pay.

    python benchmarks/bench_sync.py [--copies 3]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import shutil
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import markdown_table, run_measured, update_markdown_section, write_result

from medcite.paths import shared_data_dir


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _mirror(root: Path, copies: int) -> int:
    src = shared_data_dir() / "pubmed_xml"
    base, upd = root / "pubmed" / "baseline", root / "pubmed" / "updatefiles"
    base.mkdir(parents=True)
    upd.mkdir(parents=True)
    files = [(base / f"pubmed26n{i:04d}.xml.gz", src / "pubmed20n0014.xml.gz") for i in range(1, copies + 1)]
    files.append((upd / f"pubmed26n{copies + 1:04d}.xml.gz", src / "pubmed21n1298_first300_plus_deletecitation.xml.gz"))
    total = 0
    for target, origin in files:
        shutil.copyfile(origin, target)
        data = target.read_bytes()
        total += len(data)
        (target.parent / f"{target.name}.md5").write_text(f"MD5({target.name})= {hashlib.md5(data).hexdigest()}\n")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=3, help="baseline files served (copies of pubmed20n0014)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        total = _mirror(root / "nlm", args.copies)
        handler = functools.partial(_Quiet, directory=str(root / "nlm"))
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/pubmed/"
        sync = [sys.executable, "-m", "medcite", "-q", "pubmed", "sync", "--dest", str(root / "mirror"),
                "--base-url", url]
        try:
            startup = run_measured([sys.executable, "-m", "medcite", "--version"]).check()
            first = run_measured(sync).check()
            again = run_measured(sync).check()
            ingest = run_measured([*sync, "--ingest", str(root / "store")]).check()
        finally:
            httpd.shutdown()
            httpd.server_close()
        start = time.perf_counter()
        for path in sorted((root / "mirror").rglob("*.xml.gz")):
            hashlib.md5(path.read_bytes()).hexdigest()
        hash_s = time.perf_counter() - start
    assert "0 downloaded" in again.stdout, again.stdout
    assert f"{args.copies + 1} downloaded" in first.stdout, first.stdout
    mb = total / 1e6
    rows = [
        ("first sync (download + MD5)", f"{first.wall_s:.2f}", f"{mb / first.wall_s:.0f}", f"{first.peak_rss_mib:.0f}"),
        ("re-run, nothing new", f"{again.wall_s:.2f}", "–", f"{again.peak_rss_mib:.0f}"),
        ("re-run + --ingest (fresh store)", f"{ingest.wall_s:.2f}", "–", f"{ingest.peak_rss_mib:.0f}"),
        ("trivial floor: read + MD5 of the files", f"{hash_s:.2f}", f"{mb / hash_s:.0f}", "–"),
        ("trivial floor: `medcite --version` (process start-up)", f"{startup.wall_s:.2f}", "–",
         f"{startup.peak_rss_mib:.0f}"),
    ]
    data = {
        "files": args.copies + 1, "bytes": total, "rerun_downloaded": 0,
        "first_sync_s": round(first.wall_s, 3), "rerun_s": round(again.wall_s, 3),
        "ingest_s": round(ingest.wall_s, 3), "hash_floor_s": round(hash_s, 3), "startup_s": round(startup.wall_s, 3),
        "first_sync_peak_rss_mib": round(first.peak_rss_mib, 1), "first_over_floor": round(first.wall_s / hash_s, 2),
    }
    write_result("sync", data)
    body = (
        "## PubMed sync (local server)\n\n"
        f"`python benchmarks/bench_sync.py --copies {args.copies}`: {args.copies + 1} real PubMed files "
        f"({mb:.1f} MB: {args.copies} copies of the 2020 baseline file pubmed20n0014 and the 2021 update sample) "
        "served by `http.server` on 127.0.0.1; each row one `medcite pubmed sync` process (start-up included). "
        "2 CPU cores shared with other sessions: times are upper bounds.\n\n"
        + markdown_table(["run", "wall s", "MB/s", "peak RSS MiB"], rows)
        + f"\n\nThe first sync takes {data['first_over_floor']}x the floor of reading and hashing the same bytes "
        f"(process start-up alone: {startup.wall_s:.2f} s); "
        f"the re-run downloads nothing (it imports httpx, lists the two folders and checks sizes) and takes "
        f"{again.wall_s / startup.wall_s:.1f}x the start-up. "
        "The ingest applies the 3 baseline copies (the 2 identical to the first are skipped by their sha256) "
        "and the update file: 30,300 records. Over the network the first sync is bound by NLM's bandwidth.\n"
    )
    update_markdown_section("sync", body)
    print(body)


if __name__ == "__main__":
    main()
