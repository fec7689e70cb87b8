"""Issue 16, items 10-12: one writer per store, schema-checked JSONL records, XML that is not PubMed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from medcite.corpus.ingest import ingest
from medcite.corpus.jsonl import iter_jsonl
from medcite.corpus.records import BadRecord, UnreadableFileError
from medcite.corpus.store import DocumentStore
from medcite.errors import InputError
from medcite.types import Article

Write = Callable[..., Path]


# -- 10: a second writer waits, then fails naming the holder ---------------------------------------------
def test_second_writer_fails_naming_the_pid(tmp_path: Path) -> None:
    with DocumentStore.create(tmp_path / "store"):
        t0 = time.monotonic()
        with pytest.raises(InputError, match=rf"store .* is busy \(held by pid {os.getpid()}\)"):
            DocumentStore.create(tmp_path / "store", wait_s=0.3)
        assert time.monotonic() - t0 >= 0.3
    with DocumentStore.create(tmp_path / "store", wait_s=0) as again:  # released on close
        assert len(again) == 0


def test_writer_lock_dies_with_its_process(tmp_path: Path) -> None:
    """A killed writer leaves no stale lock: the kernel drops the flock with the process."""
    code = (
        "import sys, time\nfrom medcite.corpus.store import DocumentStore\n"
        f"s = DocumentStore.create({str(tmp_path / 'store')!r})\nprint('locked', flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(InputError, match=rf"held by pid {proc.pid}"):
            DocumentStore.create(tmp_path / "store", wait_s=0)
    finally:
        proc.kill()
        proc.wait()
    with DocumentStore.create(tmp_path / "store", wait_s=2) as s:
        assert len(s) == 0


def test_a_crash_while_creating_leaves_no_store_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database is made under a temporary name and renamed into place: a crash before the rename leaves
    no store.sqlite (so an existing one, even of zero bytes, is never made again: issue 22 #5)."""
    import medcite.corpus.store_db as store_db

    def killed(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_db.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        DocumentStore.create(tmp_path / "store")
    assert not (tmp_path / "store" / "store.sqlite").exists()
    monkeypatch.undo()
    (tmp_path / "store" / ".store.sqlite.left.tmp").write_bytes(b"half")  # as a kill -9 would leave it
    with DocumentStore.create(tmp_path / "store") as s:
        assert len(s) == 0 and s.seq == 0
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["manifest.json", "store.lock", "store.sqlite"]


# -- 11: JSONL records are checked against a schema ------------------------------------------------------
def read(data: bytes) -> list[object]:
    import io

    return list(iter_jsonl(io.BufferedReader(io.BytesIO(data)), "x.jsonl"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"pmid": 1, "title": "T", "mesh": 5}, "field 'mesh' must be a list, got 5"),
        ({"pmid": 1, "title": "T", "mesh": [{"descriptor": "D", "ui": 5}]}, "field 'mesh.0.ui' must be a string"),
        ({"pmid": 1, "title": "T", "mesh": [{"descriptor": "D", "qualifiers": [{"name": "q", "ui": [1]}]}]},
         "field 'mesh.0.qualifiers.0.ui' must be a string"),
        ({"pmid": 1, "title": "T", "journal": {"a": [1, {"b": 2}]}}, "field 'journal' must be a string"),
        ({"pmid": 1, "title": "T", "sections": [{"label": 5, "start": 0, "end": 1}]},
         "field 'sections.0.label' must be a string"),
        ({"pmid": 1, "title": "T", "keywords": "asthma"}, "field 'keywords' must be a list"),
        ({"pmid": 1, "title": "T", "retracted": "no"}, "field 'retracted' must be true or false"),
        ({"id": 1, "contents": ["a"]}, "field 'contents' must be a string"),
    ],
)
def test_wrong_field_types_are_bad_records(record: dict[str, object], reason: str) -> None:
    items = read(json.dumps(record).encode() + b"\n" + b'{"pmid": 2, "title": "ok"}\n')
    assert isinstance(items[0], BadRecord) and items[0].line == 1 and not items[0].kept, items
    assert reason in items[0].reason
    assert isinstance(items[1], Article) and items[1].pmid == "2"


def test_deeply_nested_json_is_a_bad_record_not_a_recursion_error() -> None:
    line = b'{"pmid": 3, "title": "T", "journal": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    items = read(b'{"pmid": 1, "title": "ok"}\n' + line + b'{"pmid": 2, "title": "ok"}\n')
    assert [type(i).__name__ for i in items] == ["Article", "BadRecord", "Article"]
    assert items[1].line == 2 and "nested too deeply" in items[1].reason  # type: ignore[union-attr]


def test_ingest_skips_bad_types_with_on_error_skip(tmp_path: Path, write: Write) -> None:
    path = write("mixed.jsonl", "\n".join(json.dumps(r) for r in [
        {"pmid": 1, "title": "ok"}, {"pmid": 2, "title": "T", "mesh": 7},
        {"pmid": 3, "title": "T", "mesh": [{"descriptor": "D", "major": "yes"}]}, {"pmid": 4, "title": "ok"},
    ]) + "\n")
    with DocumentStore.create(tmp_path / "store") as store:
        (st,) = ingest([path], store, on_error="skip")
        assert (st.status, st.added, st.skipped) == ("done", 2, 2)
        assert sorted(a.pmid for a in store.iter_articles()) == ["1", "4"]


# -- 12: XML that is not PubMed ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    '<?xml version="1.0"?><html><body><p>hello</p></body></html>',
    "<rss><channel><item>PubmedArticle</item></channel></rss>",
    "<PMC-ArticleSet><article><front/></article></PMC-ArticleSet>",
])
def test_xml_that_is_not_pubmed_is_rejected(tmp_path: Path, write: Write, text: str) -> None:
    path = write("other.xml", text)
    with DocumentStore.create(tmp_path / "store") as store:
        with pytest.raises(UnreadableFileError, match=r"other\.xml: not PubMed XML: the root element is <"):
            ingest([path], store)
        assert store.files() == []  # not marked done
        (st,) = ingest([path], store, on_error="skip")
        assert st.status == "failed" and "not PubMed XML" in (st.error or "")
        assert [f["status"] for f in store.files()] == ["failed"]


def test_empty_pubmed_article_set_is_still_accepted(tmp_path: Path, write: Write) -> None:
    path = write("empty.xml", "<PubmedArticleSet></PubmedArticleSet>")
    with DocumentStore.create(tmp_path / "store") as store:
        (st,) = ingest([path], store)
        assert st.status == "done" and st.added == 0


# -- 13: a gzipped JSONL line of many chunks is read in linear time ------------------------------------
def test_gzip_long_line_reads_in_linear_time() -> None:
    import gzip
    import io

    from medcite.corpus.streams import open_stream

    line = b'{"pmid": 1, "title": "' + os.urandom(20_000_000).hex().encode() + b'"}\n'  # 40 MB, ~2,500 chunks
    data = gzip.compress(line + b'{"pmid": 2, "title": "x"}\n', compresslevel=1)
    start = time.perf_counter()
    stream = open_stream(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    got = list(stream)
    assert time.perf_counter() - start < 4.0  # quadratic re-copying took ~14 s
    assert got == [line, b'{"pmid": 2, "title": "x"}\n']


def test_gzip_readline_limit_and_read_sizes() -> None:
    import gzip
    import io

    from medcite.corpus.streams import open_stream

    data = b"abc\n" + b"x" * 300_000 + b"\nend"
    stream = open_stream(io.BufferedReader(io.BytesIO(gzip.compress(data))))
    assert stream.readline(2) == b"ab" and stream.readline() == b"c\n"
    assert stream.read(100_000) == b"x" * 100_000
    assert stream.readline(5) == b"xxxxx" and stream.readline() == b"x" * 199_995 + b"\n"
    assert stream.read(10) == b"end" and stream.read(10) == b""


def test_a_manifest_a_killed_run_left_behind_is_rewritten_by_the_next_writer(tmp_path) -> None:  # noqa: ANN001
    """Killed between a commit and the manifest write, then rerun with every file already done (no commit):
    the manifest still said the earlier sequence (tests/unit/robust/test_crash.py caught it at random)."""
    import json

    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.types import Article

    folder = tmp_path / "store"
    with DocumentStore.create(folder) as store, store.transaction() as tx:
        tx.upsert([Article("1", "T", "A statin study.")], FileStats("a.xml"))
    manifest = folder / "manifest.json"
    stale = json.loads(manifest.read_text())
    assert stale["seq"] == 1
    stale.update(seq=0, counts={"articles": 0, "deleted": 0, "files": 0})
    manifest.write_text(json.dumps(stale))
    with DocumentStore.create(folder):  # a writer that commits nothing
        pass
    fixed = json.loads(manifest.read_text())
    assert fixed["seq"] == 1 and fixed["counts"]["articles"] == 1
