"""`medcite pubmed sync` against a real HTTP server on 127.0.0.1 serving real PubMed files under NLM's names
(see _nlm_server.py for the mirror and its faults: a dropped connection, a 503, a corrupt file, a missing .md5
and a 404)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _nlm_server import NLMServer, build_mirror
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.nlm_sync import STATE_NAME, ingest_plan, parse_listing, parse_md5
from medcite.corpus.store import DocumentStore
from medcite.errors import InputError

SRC = str(Path(__file__).resolve().parents[3] / "src")


@pytest.fixture
def mirror(shared_data: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    return build_mirror(shared_data, tmp_path / "nlm")


def sync(server: NLMServer, dest: Path, *args: str) -> object:
    return CliRunner().invoke(
        cli, ["-q", "pubmed", "sync", "--dest", str(dest), "--base-url", server.base_url, "--retries", "1",
              "--backoff", "0", *args], catch_exceptions=False)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def state(dest: Path) -> dict[str, dict]:
    return json.loads((dest / STATE_NAME).read_text())["files"]


def test_sync_verifies_retries_quarantines_and_ingests_in_nlm_order(mirror, tmp_path: Path) -> None:
    dest, store_dir = tmp_path / "mirror", tmp_path / "store"
    with NLMServer(mirror) as server:
        res = sync(server, dest, "--ingest", str(store_dir))
        assert res.exit_code == 1, res.output  # some files could not be verified: said, and the status says so
        out = res.output
        assert "3 downloaded" in out and "3 not verified" in out
        assert re.search(r"pubmed26n0004.xml.gz +quarantined", out)
        assert re.search(r"pubmed26n0005.xml.gz +no-checksum", out)
        assert re.search(r"pubmed26n0006.xml.gz +failed", out) and "HTTP 404" in out

        # the dropped connection was resumed from where it broke off, the 503 retried
        assert server.gets("pubmed26n0001.xml.gz") == [(None, 200), ("bytes=30000-", 206)]
        assert server.gets("pubmed26n0002.xml.gz") == [(None, 503), (None, 200)]
        assert [s for _, s in server.gets("pubmed26n0004.xml.gz")] == [200, 200]  # 1 retry, then quarantine
        assert server.gets("pubmed26n0005.xml.gz") == []  # no checksum: never downloaded

        # every final file is whole and verified; nothing unverified sits beside them
        for folder, name in [("baseline", "pubmed26n0001.xml.gz"), ("baseline", "pubmed26n0002.xml.gz"),
                             ("updatefiles", "pubmed26n0003.xml.gz")]:
            assert md5((dest / folder / name).read_bytes()) == md5(mirror.sources[name])
            assert (dest / folder / f"{name}.md5").exists()
        assert sorted(p.name for p in (dest / "updatefiles").iterdir()) == [
            "pubmed26n0003.xml.gz", "pubmed26n0003.xml.gz.md5"]
        assert not list(dest.rglob("*.part"))
        quarantine = dest / "quarantine"
        assert sorted(p.name for p in quarantine.iterdir()) == [
            "pubmed26n0004.xml.gz.corrupt", "pubmed26n0004.xml.gz.report.txt"]
        report = (quarantine / "pubmed26n0004.xml.gz.report.txt").read_text()
        assert f"expected md5: {md5(mirror.sources['pubmed26n0004.xml.gz'])}" in report

        st = state(dest)
        assert {n: e["status"] for n, e in st.items()} == {
            "pubmed26n0001.xml.gz": "verified", "pubmed26n0002.xml.gz": "verified",
            "pubmed26n0003.xml.gz": "verified", "pubmed26n0004.xml.gz": "quarantined",
            "pubmed26n0005.xml.gz": "no-checksum", "pubmed26n0006.xml.gz": "failed"}
        assert st["pubmed26n0001.xml.gz"]["md5"] == md5(mirror.sources["pubmed26n0001.xml.gz"])
        assert st["pubmed26n0001.xml.gz"]["size"] == len(mirror.sources["pubmed26n0001.xml.gz"])

        # ingested in NLM order: 200 + 1 + 300 records, 29768149 twice, 5 deleted by the update file
        with DocumentStore.open(store_dir) as store:
            assert len(store) == 200 + 1 + 300 - 1 - 5
            assert not any(p in store for p in mirror.deleted)
            assert "29768149" in store
            assert [Path(f["path"]).name for f in store.files()] == [
                "pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz", "pubmed26n0003.xml.gz"]
        assert "stopped before updatefiles/pubmed26n0004.xml.gz is quarantined" in out

        # a re-run with nothing new: no data file fetched, in seconds, nothing ingested twice
        before = len(server.log)
        start = time.perf_counter()
        res = sync(server, dest, "--ingest", str(store_dir))
        elapsed = time.perf_counter() - start
        assert "0 downloaded" in res.output and "3 already present" in res.output, res.output
        assert re.search(r"pubmed26n0004.xml.gz +kept-quarantined", res.output)
        fetched = [p for p, _, _ in server.log[before:] if p.endswith(".xml.gz")]
        assert fetched == ["/pubmed/updatefiles/pubmed26n0006.xml.gz"]  # only the 404 is asked again
        assert elapsed < 5.0
        with DocumentStore.open(store_dir) as store:
            assert len(store) == 495

        # asked to, the quarantined file is tried again (and quarantined again: the bytes are still wrong)
        res = sync(server, dest, "--updates", "--retry-quarantined")
        assert re.search(r"pubmed26n0004.xml.gz +quarantined", res.output)
        assert len(server.gets("pubmed26n0004.xml.gz")) == 4


def test_since_limit_and_folder_selection(mirror, tmp_path: Path) -> None:
    dest = tmp_path / "mirror"
    mirror.faults.clear()
    with NLMServer(mirror) as server:
        res = sync(server, dest, "--since", "pubmed26n0001.xml.gz", "--limit", "1")
        assert res.exit_code == 0, res.output
        assert "1 selected, 1 downloaded" in res.output
        assert list(state(dest)) == ["pubmed26n0002.xml.gz"]
        res = sync(server, dest, "--baseline")
        assert res.exit_code == 0, res.output
        assert "listed 2 in baseline/;" in res.output and "1 downloaded" in res.output
        assert "1 already present" in res.output
        assert list(state(dest)) == ["pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz"]
        res = sync(server, dest, "--since", "baseline-0001")
        assert res.exit_code == 1 and "not a PubMed file name" in res.output and "hint:" in res.output


def test_a_file_already_on_disk_is_checked_not_downloaded(mirror, tmp_path: Path) -> None:
    """A file renamed into place by a run killed before it wrote the state is verified and adopted."""
    dest = tmp_path / "mirror"
    mirror.faults.clear()
    (dest / "baseline").mkdir(parents=True)
    (dest / "baseline" / "pubmed26n0001.xml.gz").write_bytes(mirror.sources["pubmed26n0001.xml.gz"])
    (dest / "baseline" / "pubmed26n0002.xml.gz").write_bytes(b"not the file")  # wrong: downloaded again
    with NLMServer(mirror) as server:
        res = sync(server, dest, "--baseline")
        assert res.exit_code == 0, res.output
        assert "1 downloaded" in res.output and "1 verified on disk" in res.output
        assert server.gets("pubmed26n0001.xml.gz") == []
        assert (dest / "baseline" / "pubmed26n0002.xml.gz").read_bytes() == mirror.sources["pubmed26n0002.xml.gz"]


def test_one_sync_at_a_time_per_mirror(mirror, tmp_path: Path) -> None:
    from medcite.corpus.nlm_sync import LOCK_NAME
    from medcite.corpus.store import WriterLock

    dest = tmp_path / "mirror"
    dest.mkdir()
    held = WriterLock(dest, 0, name=LOCK_NAME)
    try:
        with NLMServer(mirror) as server:
            res = sync(server, dest)
            assert res.exit_code == 1 and f"pubmed mirror {dest} is busy (held by pid {os.getpid()})" in res.output
            assert server.log == []
    finally:
        held.release()


def test_an_unreachable_server_is_a_clean_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = CliRunner().invoke(cli, ["-q", "pubmed", "sync", "--dest", str(tmp_path / "m"), "--retries", "0",
                                   "--base-url", f"http://127.0.0.1:{port}/pubmed/"])
    assert res.exit_code == 1
    assert "cannot list http://127.0.0.1" in res.output and "ConnectError" in res.output and "hint:" in res.output
    res = CliRunner().invoke(cli, ["pubmed", "sync", "--dest", str(tmp_path / "m"), "--base-url", "ftp://x/"])
    assert res.exit_code == 1 and "http(s) URL" in res.output


def test_checksum_files_and_listings_are_read_as_nlm_writes_them() -> None:
    hexd = "0123456789abcdef0123456789ABCDEF"
    assert parse_md5(f"MD5(pubmed25n0001.xml.gz)= {hexd}\n", "pubmed25n0001.xml.gz") == hexd.lower()
    assert parse_md5(f"{hexd}  pubmed25n0001.xml.gz\n", "pubmed25n0001.xml.gz") == hexd.lower()
    with pytest.raises(InputError, match="names another file"):
        parse_md5(f"MD5(pubmed25n0002.xml.gz)= {hexd}", "pubmed25n0001.xml.gz")
    with pytest.raises(InputError, match="no MD5 digest"):
        parse_md5("<html>error</html>", "pubmed25n0001.xml.gz")
    html = ('<html><body><pre><a href="?C=N;O=D">Name</a> <a href="/pubmed/">Parent</a>\n'
            '<a href="pubmed25n0001.xml.gz">pubmed25n0001.xml.gz</a>\n'
            '<a href="pubmed25n0001.xml.gz.md5">pubmed25n0001.xml.gz.md5</a>\n'
            '<a href="pubmed25n0002.xml.gz">pubmed25n0002.xml.gz</a>\n'
            '<a href="README.txt">README.txt</a> <a href="pubmed25n0002.xml.gz.html">stats</a></pre></body></html>')
    assert parse_listing(html) == (["pubmed25n0001.xml.gz", "pubmed25n0002.xml.gz"], {"pubmed25n0001.xml.gz"})


def test_the_ingest_plan_stops_before_the_first_unverified_file(tmp_path: Path) -> None:
    dest = tmp_path / "m"
    for folder, name in [("baseline", "pubmed25n0001.xml.gz"), ("updatefiles", "pubmed25n0003.xml.gz"),
                         ("updatefiles", "pubmed25n0004.xml.gz")]:
        (dest / folder).mkdir(parents=True, exist_ok=True)
        (dest / folder / name).write_bytes(b"x" * 3)
    files = {
        "pubmed25n0004.xml.gz": {"folder": "updatefiles", "status": "verified", "size": 3},
        "pubmed25n0001.xml.gz": {"folder": "baseline", "status": "verified", "size": 3},
        "pubmed25n0003.xml.gz": {"folder": "updatefiles", "status": "verified", "size": 3},
        "pubmed25n0002.xml.gz": {"folder": "baseline", "status": "verified", "size": 3},  # not on disk
    }
    (dest / STATE_NAME).write_text(json.dumps({"kind": "medcite-pubmed-sync", "files": files}))
    paths, stopped = ingest_plan(dest)
    assert [p.name for p in paths] == ["pubmed25n0001.xml.gz"]
    assert stopped == "baseline/pubmed25n0002.xml.gz is missing on disk"
    files["pubmed25n0002.xml.gz"]["status"] = "failed"
    (dest / STATE_NAME).write_text(json.dumps({"kind": "medcite-pubmed-sync", "files": files}))
    assert ingest_plan(dest)[1] == "baseline/pubmed25n0002.xml.gz is failed"
    del files["pubmed25n0002.xml.gz"]
    (dest / STATE_NAME).write_text(json.dumps({"kind": "medcite-pubmed-sync", "files": files}))
    assert [p.name for p in ingest_plan(dest)[0]] == [
        "pubmed25n0001.xml.gz", "pubmed25n0003.xml.gz", "pubmed25n0004.xml.gz"]


@pytest.mark.slow
def test_kill_9_mid_download_then_rerun_ends_with_every_file_whole_and_verified(mirror, tmp_path: Path) -> None:
    dest = tmp_path / "mirror"
    mirror.faults.clear()
    args = [sys.executable, "-m", "medcite", "-q", "pubmed", "sync", "--dest", str(dest), "--baseline",
            "--backoff", "0"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with NLMServer(mirror, throttle=(4096, 0.02)) as server:  # ~200 kB/s: the first file takes ~0.5 s
        proc = subprocess.Popen([*args, "--base-url", server.base_url], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        part = dest / "baseline" / "pubmed26n0001.xml.gz.part"
        deadline = time.monotonic() + 60
        while not (part.exists() and part.stat().st_size > 20_000) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert part.exists() and not (dest / "baseline" / "pubmed26n0001.xml.gz").exists()
        had = part.stat().st_size
        assert 0 < had < len(mirror.sources["pubmed26n0001.xml.gz"])
        server.throttle = None
        done = subprocess.run([*args, "--base-url", server.base_url], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        resumed = [rng for rng, _ in server.gets("pubmed26n0001.xml.gz")][1:]
        assert resumed and resumed[0] is not None and int(resumed[0][6:-1]) >= had  # resumed, not restarted
    for name in ("pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz"):
        assert (dest / "baseline" / name).read_bytes() == mirror.sources[name]
        assert state(dest)[name]["status"] == "verified"
    assert not list(dest.rglob("*.part"))
