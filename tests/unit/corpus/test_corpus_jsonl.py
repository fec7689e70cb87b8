"""JSONL reader: both shapes, field validation and every kind of bad line."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from medcite.corpus.jsonl import ARTICLE_FIELDS, iter_jsonl
from medcite.corpus.records import BadRecord
from medcite.errors import InputError
from medcite.types import Article, MeshHeading, Section


def read(data: bytes) -> list[object]:
    return list(iter_jsonl(io.BufferedReader(io.BytesIO(data)), "c.jsonl"))  # type: ignore[arg-type]


def lines(*objs: object) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def test_collection_shape_contents_is_abstract_unless_title_given() -> None:
    items = read(lines({"id": "22802756", "contents": "Axonal injury. It is common."},
                       {"id": 31, "title": "T", "contents": "Body."}))
    assert items == [Article("22802756", "", "Axonal injury. It is common."), Article("31", "T", "Body.")]


def test_article_shape_all_fields() -> None:
    rec = {
        "pmid": 12345678, "title": "Statins.", "abstract": "Aim. Result.", "version": 2,
        "sections": [{"label": "AIM", "category": "OBJECTIVE", "start": 0, "end": 4},
                     {"label": "RESULTS", "start": 5, "end": 12}],
        "journal": "J", "journal_iso": "J.", "year": "2001", "doi": "10.1/x", "pmc": "PMC1",
        "mesh": ["Humans", {"descriptor": "Asthma", "ui": "D001249", "major": True,
                            "qualifiers": ["therapy", {"name": "drug therapy", "ui": "Q000188", "major": True}]}],
        "publication_types": ["Journal Article", "Retracted Publication"], "keywords": ["k1", " "],
    }
    (a,) = read(lines(rec))
    assert isinstance(a, Article)
    assert (a.pmid, a.version, a.year, a.doi, a.pmc, a.journal, a.journal_iso) == (
        "12345678", 2, 2001, "10.1/x", "PMC1", "J", "J.")
    assert a.sections == (Section("AIM", "OBJECTIVE", 0, 4), Section("RESULTS", None, 5, 12))
    assert a.mesh == (MeshHeading("Humans"), MeshHeading(
        "Asthma", "D001249", True, (("therapy", None, False), ("drug therapy", "Q000188", True))))
    assert a.retracted and a.keywords == ("k1",)
    assert set(rec) <= set(ARTICLE_FIELDS)


def test_unknown_field_is_reported_and_the_record_kept_without_it() -> None:
    items = read(lines({"pmid": "5", "title": "T", "authors": ["x"]}, {"id": "6", "contents": "C", "raw": 1}))
    bad, art, bad2, art2 = items
    assert isinstance(bad, BadRecord) and bad.kept and bad.line == 1 and bad.pmid == "5"
    assert "'authors'" in bad.reason and "known fields: pmid, title, abstract" in bad.reason
    assert art == Article("5", "T")
    assert isinstance(bad2, BadRecord) and bad2.line == 2 and "known fields: id, contents, title" in bad2.reason
    assert art2 == Article("6", "", "C")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"pmid": "1", "title": "T"', "invalid JSON at column"),
        (b'[1, 2]', "expected an object"),
        (b'{"title": "T", "abstract": "A"}', "no PMID"),
        (b'{"pmid": "12a", "title": "T"}', "must be an integer"),
        (b'{"pmid": 0, "title": "T"}', "must be a positive integer"),
        (b'{"pmid": 12345678901234567890, "title": "T"}', "at most 18 digits"),
        (b'{"pmid": "3", "title": "", "abstract": "  "}', "neither title nor abstract"),
        (b'{"id": "3", "contents": ""}', "neither title nor abstract"),
        (b'{"pmid": "3", "title": 5}', "must be a string"),
        (b'{"pmid": "3", "title": "T", "mesh": "Asthma"}', "'mesh' must be a list"),
        (b'{"pmid": "3", "abstract": "abc", "sections": [{"start": 0, "end": 9}]}', "outside the abstract"),
        (b'{"pmid": "3", "title": "Caf\xe9"}', "not valid UTF-8 (byte 0xe9 at column 28)"),
    ],
)
def test_bad_lines_become_bad_records_with_line_numbers(line: bytes, reason: str) -> None:
    items = read(b'{"pmid": "1", "title": "ok"}\n\n' + line + b"\n" + b'{"pmid": "2", "title": "ok"}\n')
    assert [type(i).__name__ for i in items] == ["Article", "BadRecord", "Article"]
    bad = items[1]
    assert isinstance(bad, BadRecord) and not bad.kept and bad.line == 3, bad
    assert reason in bad.reason


def test_gzip_bom_and_truncated_gzip() -> None:
    data = b"\xef\xbb\xbf" + lines(*({"pmid": str(i), "title": f"T{i}"} for i in range(1, 2001)))
    assert len(read(gzip.compress(data))) == 2000
    broken = gzip.compress(data)
    got: list[object] = []
    with pytest.raises(InputError) as err:
        for item in iter_jsonl(io.BufferedReader(io.BytesIO(broken[: len(broken) // 2])), "c.jsonl.gz"):  # type: ignore[arg-type]
            got.append(item)
    assert "truncated" in str(err.value) and err.value.path == "c.jsonl.gz"
    assert err.value.position == f"after line {len(got)}" and len(got) > 100
