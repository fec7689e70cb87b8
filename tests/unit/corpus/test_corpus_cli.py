"""`medcite ingest` and `medcite corpus stats|show`, in-process with CliRunner."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus_xml_builders import article_xml, xml_file

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore

PT_RETRACTED = ('<PublicationTypeList><PublicationType UI="D016441">Retracted Publication</PublicationType>'
                "</PublicationTypeList>")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-q", *args])
    return result.exit_code, result.output


def test_ingest_summary_stats_and_show(tmp_path: Path, write) -> None:  # type: ignore[no-untyped-def]
    a = write("a.xml", xml_file(article_xml(pmid="11", title="Eleven", pubdate="<Year>1990</Year>"),
                                article_xml(pmid="12", extra_article=PT_RETRACTED, pubdate="<Year>2005</Year>")))
    b = write("b.jsonl", b'{"id": "13", "contents": "Thirteen."}\n')
    store = str(tmp_path / "st")
    code, out = run("ingest", str(a), str(b), "--store", store)
    assert code == 0, out
    rows = [line.split() for line in out.splitlines()]
    assert rows[0][:3] == ["file", "status", "added"]
    assert rows[1][-7:] == ["done", "2", "0", "0", "0", "0", "0"] and rows[1][0].endswith("a.xml")
    assert rows[3][:3] == ["total", "2", "3"]
    assert out.strip().endswith("3 articles")
    code, out = run("ingest", str(a), "--store", store)
    assert code == 0 and "skipped" in out

    code, out = run("corpus", "stats", "--store", store, "--json")
    info = json.loads(out)
    got = (info["articles"], info["retracted"], info["year_min"], info["year_max"], info["seq"])
    assert got == (3, 1, 1990, 2005, 2)
    assert [f["status"] for f in info["files"]] == ["done", "done"]
    code, out = run("corpus", "stats", "--store", store)
    assert code == 0 and "articles    3" in out and "years       1990-2005" in out

    code, out = run("corpus", "show", "11", "--store", store)
    shown = json.loads(out)
    assert (shown["pmid"], shown["title"], shown["year"], shown["journal"]) == ("11", "Eleven", 1990, "J Test")
    code, out = run("corpus", "show", "99", "--store", store)
    assert code == 1 and "PMID 99 is not in the store" in out


def test_ingest_bad_record_raise_then_skip_via_flag_and_setting(tmp_path: Path, write) -> None:  # type: ignore[no-untyped-def]
    bad = write("bad.xml", xml_file(article_xml(pmid="1"), article_xml(pmid=None)))
    store = str(tmp_path / "st")
    code, out = run("ingest", str(bad), "--store", store)
    assert code == 1
    assert f"error: {bad.resolve()} (line 4): record has no top-level MedlineCitation/PMID" in out
    assert "--on-error skip" in out
    assert not Path(store).exists()  # a store the failed command created is not left behind (issue 16)
    code, out = run("ingest", str(bad), "--store", store, "--set", "corpus.on_error=skip", "--batch-size", "1")
    assert code == 0 and out.splitlines()[1].split()[-7:] == ["done", "1", "0", "0", "0", "1", "1"]
    other = write("other.xml", xml_file(article_xml(pmid=None)))
    code, out = run("ingest", str(other), "--store", store, "--on-error", "skip")
    assert code == 0 and out.strip().endswith("1 articles")


def test_ingest_missing_input_is_a_clean_error(tmp_path: Path) -> None:
    code, out = run("ingest", str(tmp_path / "nope.xml.gz"), "--store", str(tmp_path / "st"))
    assert code == 1 and "does not exist" in out and "Traceback" not in out


def test_corpus_stats_on_missing_store(tmp_path: Path) -> None:
    code, out = run("corpus", "stats", "--store", str(tmp_path / "none"))
    assert code == 1 and "no document store" in out


@pytest.mark.slow
def _run_with_peak_rss(cmd: list[str]) -> tuple[int, str, float]:
    """Run ``cmd``; return its exit code, output and its own peak RSS in MiB (polled from /proc).

    ``getrusage`` cannot be used: the pytest process holds earlier tests' models, and a child's ru_maxrss
    inherits the parent's high-water mark at fork/exec.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(0.05)
    out = proc.stdout.read() if proc.stdout else ""
    return proc.returncode, out, peak / 1024


def test_full_baseline_file_30k(tmp_path: Path, shared_data: Path) -> None:
    """The unmodified 2020 baseline file: every one of its 30,000 records has a title or abstract, and the
    ingest process stays far below 1 GiB (its memory does not grow with the file)."""
    path = shared_data / "pubmed_xml" / "pubmed20n0014.xml.gz"
    start = time.perf_counter()
    code, out, peak_mib = _run_with_peak_rss(
        [sys.executable, "-m", "medcite", "-q", "ingest", str(path), "--store", str(tmp_path / "st")]
    )
    seconds = time.perf_counter() - start
    assert code == 0, out
    with DocumentStore.open(tmp_path / "st") as s:
        assert len(s) == 30000
        info = s.stats()
        assert info["retracted"] == 2 and info["year_min"] >= 1900
        assert s.get(400712).retracted and s.get(423962).retracted  # type: ignore[union-attr]
    print(f"30000 articles in {seconds:.1f}s ({30000 / seconds:.0f}/s), peak RSS {peak_mib:.0f} MiB")
    assert 0 < peak_mib < 1024
