"""Issue 16, done-when (a): property-based tests over every reader and the ``--set`` parser.

Whatever the bytes, a reader returns or raises a :class:`MedciteError` naming the file; it never lets a
``ValueError``, ``RecursionError``, ``UnicodeError`` or ``KeyError`` through (those became tracebacks).
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medcite.config import load_settings, parse_override
from medcite.corpus.ingest import detect_format
from medcite.corpus.jsonl import iter_jsonl
from medcite.corpus.pubmed_xml import iter_pubmed_xml
from medcite.corpus.records import BadRecord, Deletion
from medcite.errors import ConfigError, MedciteError
from medcite.evaluate.gold import read_gold
from medcite.evaluate.grounding import read_judgements
from medcite.tasks.biogen_a_format import read_task_a, read_task_a_run
from medcite.tasks.topics import read_topics
from medcite.train.stance_data import read_stance_csv
from medcite.trec import read_qrels, read_run
from medcite.types import Article
from medcite.viewer.files import LazyJsonl, TrecFile, check_types, parse_json, parse_jsonl_table

FAST = settings(
    max_examples=int(os.environ.get("MEDCITE_HYPOTHESIS_EXAMPLES", "60")), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["pmid", "id", "title", "abstract", "contents", "sections", "version", "journal", "year", "mesh",
          "publication_types", "keywords", "retracted", "doi", "pmc", "extra"]
records = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=8)
PUBMED = (b'<?xml version="1.0"?>\n<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID Version="1">12</PMID>'
          b"<Article><ArticleTitle>Statins <i>lower</i> LDL</ArticleTitle><Abstract><AbstractText Label=\"R\">"
          b"LDL fell.</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>"
          b"<DeleteCitation><PMID Version=\"1\">7</PMID></DeleteCitation></PubmedArticleSet>\n")


def stream(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]


def read_items(reader: Callable[..., Any], data: bytes) -> list[Any]:
    try:
        items = list(reader(stream(data), "in.dat"))
    except MedciteError as exc:
        assert "in.dat" in exc.message, exc.message
        return []
    for item in items:
        assert isinstance(item, (Article, BadRecord, Deletion))
        if isinstance(item, Article):
            assert item.pmid.isdigit() and 0 < int(item.pmid) < 10**18
            assert isinstance(item.title, str) and isinstance(item.abstract, str)
            assert all(isinstance(m.descriptor, str) and (m.ui is None or isinstance(m.ui, str)) for m in item.mesh)
    return items


@FAST
@given(st.lists(records, max_size=5))
def test_jsonl_records_of_any_shape(rows: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    items = read_items(iter_jsonl, data)
    assert len([i for i in items if isinstance(i, Article) or not getattr(i, "kept", True)]) <= len(rows)


@FAST
@given(st.binary(max_size=400), st.booleans())
def test_jsonl_any_bytes(data: bytes, gz: bool) -> None:
    read_items(iter_jsonl, gzip.compress(data) if gz else data)


@FAST
@given(st.binary(max_size=400))
def test_xml_any_bytes(data: bytes) -> None:
    read_items(iter_pubmed_xml, data)


@FAST
@given(st.integers(0, len(PUBMED)), st.binary(max_size=20), st.booleans())
def test_xml_damaged_pubmed(cut: int, junk: bytes, gz: bool) -> None:
    data = PUBMED[:cut] + junk + PUBMED[cut:] if junk else PUBMED[:cut]
    read_items(iter_pubmed_xml, gzip.compress(data)[: max(10, cut)] if gz else data)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def file_reader_contract(fn: Callable[[Path], Any], path: Path) -> None:
    try:
        fn(path)
    except MedciteError as exc:
        assert path.name in exc.message, exc.message


@FAST
@given(st.binary(max_size=300))
def test_detect_format_any_bytes(tmp_path: Path, data: bytes) -> None:
    file_reader_contract(detect_format, write(tmp_path, "in.dat", data))


@FAST
@given(st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode()),
                 st.lists(st.dictionaries(st.sampled_from(["id", "topic_id", "question", "narrative", "body"]),
                                          json_values, max_size=4), max_size=3).map(lambda v: json.dumps(v).encode())))
def test_topics_any_content(tmp_path: Path, data: bytes) -> None:
    file_reader_contract(read_topics, write(tmp_path, "topics.json", data))


task_a_items = st.lists(st.dictionaries(
    st.sampled_from(["metadata", "meta_data", "answer", "sentences", "text", "qa_id", "citations", "qid"]),
    json_values, max_size=5), max_size=3)


@FAST
@given(st.one_of(st.binary(max_size=300), task_a_items.map(lambda v: json.dumps(v).encode()),
                 task_a_items.map(lambda v: "".join(json.dumps(i) + "\n" for i in v).encode())))
def test_task_a_judgement_and_stance_readers_any_content(tmp_path: Path, data: bytes) -> None:
    for reader, name in ((read_task_a, "a.jsonl"), (read_task_a_run, "run.jsonl"), (read_judgements, "j.csv"),
                         (read_stance_csv, "s.csv")):
        file_reader_contract(reader, write(tmp_path, name, data))


trec_lines = st.lists(st.lists(st.sampled_from(["q1", "Q0", "0", "1", "2.5", "nan", "-1", "x", "1e999", "\x00"]),
                               max_size=7).map(" ".join), max_size=6).map(lambda ls: "\n".join(ls).encode())


@FAST
@given(st.one_of(st.binary(max_size=200), trec_lines))
def test_trec_run_and_qrels_any_content(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "in.trec", data)
    file_reader_contract(read_run, path)
    file_reader_contract(read_qrels, path)
    file_reader_contract(read_gold, path)


@FAST
@given(st.one_of(st.binary(max_size=300), st.lists(records, max_size=3).map(
    lambda rs: "".join(json.dumps({"topic_id": "t1", **r}) + "\n" for r in rs).encode())))
def test_viewer_parsers_never_raise(tmp_path: Path, data: bytes) -> None:
    for name in ("answers.jsonl", "evidence.jsonl", "topics.jsonl"):
        path = write(tmp_path, name, data)
        parse_jsonl_table(path)
        LazyJsonl(path).rows("t1")
        parse_json(path)
    TrecFile(write(tmp_path, "x.trec", data)).topic("t1")


@FAST
@given(st.dictionaries(st.sampled_from(["text", "sentences", "evidence", "dropped", "words"]), json_values))
def test_viewer_type_checks_never_raise(row: dict[str, Any]) -> None:
    for name in ("answers.jsonl", "evidence.jsonl", "articles.jsonl"):
        assert all(isinstance(m, str) for m in check_types(name, row))


keys = st.sampled_from(["retrieve.k", "rerank.top_k", "corpus.batch_size", "generate", "evidence.max_sentences",
                        "a..b", "", "retrieve", "llm.model"])
values = st.one_of(st.text(max_size=30), st.integers().map(str), st.integers(min_value=10**18).map(str),
                   json_values.map(json.dumps), st.just("1" + "0" * 5000), st.just("[" * 3000))


@settings(max_examples=80, deadline=None)
@given(keys, values, st.sampled_from(["=", ""]))
def test_set_parser_any_input(key: str, value: str, sep: str) -> None:
    item = f"{key}{sep}{value}"
    try:
        parse_override(item)
    except ConfigError as exc:
        assert exc.message
        return
    try:
        load_settings("offline", [item])
    except ConfigError as exc:
        assert key.split(".")[0] in exc.message or "override" in exc.message or "preset" in exc.message, exc.message


@pytest.mark.parametrize("text", ["\ud800", "x\udcff"])
def test_set_parser_surrogates(text: str) -> None:
    try:
        load_settings("offline", [f"llm.model={text}"])
    except ConfigError:
        pass
