"""ingest(): atomic per-file commits, versions, deletions, re-runs, crashes and every bad-input case."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from corpus_xml_builders import article_xml, xml_file

from medcite.corpus import ingest as ingest_mod
from medcite.corpus.ingest import detect_format, expand_paths, ingest
from medcite.corpus.store import DocumentStore
from medcite.errors import InputError

Write = Callable[..., Path]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DocumentStore]:
    with DocumentStore.create(tmp_path / "store") as s:
        yield s


def reopen_count(store: DocumentStore) -> int:
    """The store on disk opens cleanly (never corrupt) and has this many articles."""
    with DocumentStore.open(store.path) as again:
        return len(again)


def test_first200_sample(store: DocumentStore, shared_data: Path) -> None:
    (st,) = ingest([shared_data / "pubmed_xml" / "pubmed20n0014_first200.xml.gz"], store, batch_size=64)
    assert (st.status, st.added, st.replaced, st.skipped, st.warnings) == ("done", 200, 0, 0, 0)
    assert len(store) == 200 and reopen_count(store) == 200
    a = store.get("399319")
    assert a is not None and a.year == 1979 and a.journal == "Minerva stomatologica"
    assert store.get(399297).title == "[The pineal body]."  # type: ignore[union-attr]
    assert [f["status"] for f in store.files()] == ["done"]
    manifest = json.loads((store.path / "manifest.json").read_text())
    assert manifest["counts"] == {"articles": 200, "deleted": 0, "files": 1} and manifest["seq"] == store.seq == 1


def test_update_file_deletes_and_newer_version_replaces(store: DocumentStore, shared_data: Path, write: Write) -> None:
    base = write("base.xml", xml_file(
        article_xml(pmid="31688362"), article_xml(pmid="31764432"), article_xml(pmid="555"),
        article_xml(pmid="30271887", title="old version one"),
    ))
    ingest([base], store)
    seq = store.seq
    (st,) = ingest([shared_data / "pubmed_xml" / "pubmed21n1298_first300_plus_deletecitation.xml.gz"], store)
    assert st.deleted == 2  # the two of its 20 DeleteCitation PMIDs that were in the store
    assert "31688362" not in store and "31764432" not in store and "555" in store
    assert set(store.deleted_since(seq)) >= {"31688362", "31764432"}
    newest = store.get("30271887")
    assert newest is not None and newest.version == 2 and newest.title != "old version one"
    # 300 records: 299 distinct PMIDs, 30271887 replaced twice (versions 1 then 2 over the base record)
    assert (st.added, st.replaced) == (298, 2)
    assert len(store) == 4 - 2 + 298 == reopen_count(store)


def test_version_rule_older_record_never_replaces_newer(store: DocumentStore, write: Write) -> None:
    ingest([write("v2.xml", xml_file(article_xml(pmid="9", title="second", version=2)))], store)
    (older,) = ingest([write("v1.xml", xml_file(article_xml(pmid="9", title="first", version=1)))], store)
    assert (older.kept_newer, older.replaced, store.get(9).title) == (1, 0, "second")  # type: ignore[union-attr]
    (newer,) = ingest([write("v3.xml", xml_file(article_xml(pmid="9", title="third", version=3)))], store)
    assert (newer.replaced, store.get(9).title, store.get(9).version) == (1, "third", 3)  # type: ignore[union-attr]


def test_deletion_applies_after_earlier_records_of_the_same_file(store: DocumentStore, write: Write) -> None:
    text = xml_file(article_xml(pmid="1"), article_xml(pmid="2"), "<DeleteCitation><PMID>1</PMID></DeleteCitation>",
                    article_xml(pmid="3"))
    (st,) = ingest([write("u.xml", text)], store, batch_size=1000)
    assert sorted(a.pmid for a in store.iter_articles()) == ["2", "3"] and st.deleted == 1


def test_rerun_skips_finished_files_even_under_another_name(store: DocumentStore, write: Write) -> None:
    f = write("a.xml", xml_file(article_xml(pmid="1"), article_xml(pmid="2")))
    ingest([f], store)
    seq = store.seq
    copy = f.with_name("copy.xml")
    shutil.copy(f, copy)
    again = ingest([f, copy], store)
    assert [s.status for s in again] == ["skipped", "skipped"] and all(s.added == 0 for s in again)
    assert store.seq == seq and len(store) == 2 and len(store.files()) == 1


def test_crash_mid_file_rolls_back_that_file_only_and_rerun_finishes(
    store: DocumentStore, shared_data: Path, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write("first.xml", xml_file(article_xml(pmid="1")))
    ingest([first], store)
    sample = shared_data / "pubmed_xml" / "pubmed20n0014_first200.xml.gz"
    real = ingest_mod._READERS["xml"]

    def crashing(stream: Any, name: str) -> Iterator[Any]:
        for n, item in enumerate(real(stream, name)):
            if n == 150:
                raise RuntimeError("simulated crash")
            yield item

    monkeypatch.setitem(ingest_mod._READERS, "xml", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        ingest([sample], store, batch_size=50)  # three batches were written inside the transaction
    assert len(store) == 1 and reopen_count(store) == 1 and store.seq == 1 and len(store.files()) == 1
    monkeypatch.setitem(ingest_mod._READERS, "xml", real)
    (st,) = ingest([first, sample], store, batch_size=50)[1:]
    assert (st.status, st.added, st.replaced) == ("done", 200, 0)
    assert len(store) == 201 == reopen_count(store)


def good_and(bad: str) -> str:
    return xml_file(article_xml(pmid="1"), article_xml(pmid="2"), bad, article_xml(pmid="4"))


# name, file content, gz, (raise-mode message part), skip-mode (status, stored, skipped, warnings)
RECORD_CASES: list[tuple[str, bytes | str, str, tuple[str, int, int, int]]] = [
    ("nopmid.xml", good_and(article_xml(pmid=None)), "line 5): record has no top-level", ("done", 3, 1, 1)),
    ("empty.xml", good_and(article_xml(pmid="3", title="", abstract=None)), "line 5, PMID 3): record has neither",
     ("done", 3, 1, 1)),
    ("latin1.jsonl", b'{"pmid": 1, "title": "a"}\n{"pmid": 2, "title": "Caf\xe9"}\n{"pmid": 3, "title": "c"}\n',
     "line 2): line is not valid UTF-8", ("done", 2, 1, 1)),
    ("syntax.jsonl", b'{"pmid": 1, "title": "a"}\n{"pmid": 2, "title": "b",}\n{"pmid": 3, "title": "c"}\n',
     "line 2): invalid JSON at column", ("done", 2, 1, 1)),
    ("unknown.jsonl", b'{"pmid": 1, "title": "a"}\n{"pmid": 2, "title": "b", "author": "x"}\n',
     "line 2, PMID 2): unknown field(s) 'author'", ("done", 2, 0, 1)),
]
FILE_CASES: list[tuple[str, bytes | str, str, tuple[str, int, int, int]]] = [
    ("malformed.xml", good_and("<PubmedArticle><MedlineCitation></PubmedArticle>"), "line 5, column",
     ("partial", 2, 0, 1)),
    ("latin1.xml", good_and(article_xml(pmid="3", title="Caf\u00e9")).encode("latin-1"), "line 5, column",
     ("partial", 2, 0, 1)),
]


@pytest.mark.parametrize(("name", "content", "where", "skip"), RECORD_CASES + FILE_CASES,
                         ids=[c[0] for c in RECORD_CASES + FILE_CASES])
def test_bad_input_raise_commits_nothing_skip_counts(
    tmp_path: Path, write: Write, name: str, content: bytes | str, where: str, skip: tuple[str, int, int, int]
) -> None:
    path = write(name, content)
    with DocumentStore.create(tmp_path / "raise") as store:
        ingest([write("prior.xml", xml_file(article_xml(pmid="77")))], store)
        with pytest.raises(InputError) as err:
            ingest([path], store)
        assert err.value.path == str(path.resolve()) and where in str(err.value)
        assert reopen_count(store) == 1 and store.seq == 1 and len(store.files()) == 1  # nothing from the file
    with DocumentStore.create(tmp_path / "skip") as store:
        (st,) = ingest([path], store, on_error="skip")
        assert (st.status, st.added, st.skipped, st.warnings) == skip
        assert reopen_count(store) == skip[1]
        (rec,) = store.files()
        assert rec["status"] == skip[0] and rec["warnings"] == skip[3]
        assert (rec["error"] is not None) == (skip[0] == "partial")
        assert ingest([path], store, on_error="skip")[0].status == "skipped"  # recorded: not retried


def test_unknown_field_is_dropped_in_skip_mode(store: DocumentStore, write: Write) -> None:
    ingest([write("u.jsonl", b'{"pmid": 2, "title": "b", "author": "x"}\n')], store, on_error="skip")
    assert store.get(2).title == "b"  # type: ignore[union-attr]


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_gzip_both_modes(tmp_path: Path, shared_data: Path, write: Write, cut: float) -> None:
    data = (shared_data / "pubmed_xml" / "pubmed20n0014_first200.xml.gz").read_bytes()
    path = write("trunc.xml.gz", data[: int(len(data) * cut)])
    with DocumentStore.create(tmp_path / "raise") as store:
        with pytest.raises(InputError) as err:
            ingest([path], store)
        assert "truncated or corrupt gzip" in str(err.value) and "after the record at line" in str(err.value)
        assert reopen_count(store) == 0 and store.files() == []
    with DocumentStore.create(tmp_path / "skip") as store:
        (st,) = ingest([path], store, on_error="skip", batch_size=7)
        assert st.status == "partial" and 0 < st.added < 200 and st.warnings == 1
        assert reopen_count(store) == st.added and store.files()[0]["status"] == "partial"
        pmids = [int(a.pmid) for a in store.iter_articles()]
        assert pmids == sorted(pmids) and pmids[0] == 399296  # a prefix of the file's records


def test_format_detection(write: Write) -> None:
    assert detect_format(write("x.dat", "  \n<PubmedArticleSet/>")) == "xml"
    assert detect_format(write("y.dat", '{"id": "1"}\n', gz=True)) == "jsonl"
    with pytest.raises(InputError, match="file is empty"):
        detect_format(write("e.xml", ""))
    with pytest.raises(InputError, match="cannot tell the format"):
        detect_format(write("t.txt", "PMID- 123"))


def test_undetectable_file_fails_or_is_recorded(store: DocumentStore, write: Write) -> None:
    bad = write("t.json", "PMID- 123")
    with pytest.raises(InputError, match="cannot tell the format"):
        ingest([bad], store)
    (st,) = ingest([bad], store, on_error="skip")
    assert st.status == "failed" and st.warnings == 1 and store.files()[0]["status"] == "failed"
    forced = write("forced.txt", '{"pmid": 4, "title": "t"}\n')
    assert ingest([forced], store, fmt="jsonl")[0].added == 1


def test_expand_paths_dirs_globs_and_missing(write: Write, tmp_path: Path) -> None:
    a = write("sub/b.xml.gz", "x")
    b = write("a.jsonl", "x")
    write("notes.txt", "x")
    write(".hidden.xml", "x")
    assert expand_paths([tmp_path / "in"]) == [b.resolve(), a.resolve()]
    assert expand_paths([str(tmp_path / "in" / "**" / "*.gz"), a]) == [a.resolve()]
    with pytest.raises(InputError, match="does not exist"):
        expand_paths([tmp_path / "nope.xml"])
    with pytest.raises(InputError, match="matches no files"):
        expand_paths([str(tmp_path / "*.nothing")])
