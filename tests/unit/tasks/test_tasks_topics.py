"""Topic readers on tiny inline files of every shape, the real BioGen/BioASQ files, and bad inputs."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from medcite.errors import InputError
from medcite.tasks.topics import read_topics
from medcite.types import Topic


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_bioasq_json_gz(tmp_path: Path) -> None:
    data = {"questions": [{"id": "5e5b", "body": "Is milvexian an oral drug?", "type": "yesno", "documents": []}]}
    with gzip.open(tmp_path / "q.json.gz", "wt") as fh:
        json.dump(data, fh)
    assert read_topics(tmp_path / "q.json.gz") == [Topic("5e5b", "Is milvexian an oral drug?", type="yesno")]


def test_biogen2024_object(tmp_path: Path) -> None:
    data = {"topics": [{"id": 1, "topic": "statins", "question": "Do statins work?", "narrative": "A patient."}]}
    path = _write(tmp_path / "BioGen2024topics-json.txt", json.dumps(data))
    assert read_topics(path) == [Topic("1", "Do statins work?", narrative="A patient.", topic="statins")]


def test_biogen2024_jsonl(tmp_path: Path) -> None:
    lines = [
        {"topic_id": "7", "title": "sleep", "question": "How to sleep?", "narrative": "n"},
        {"topic_id": 8, "title": "gout", "question": "Gout diet?", "narrative": ""},
    ]
    path = _write(tmp_path / "t.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    assert read_topics(path) == [
        Topic("7", "How to sleep?", narrative="n", topic="sleep"),
        Topic("8", "Gout diet?", narrative=None, topic="gout"),
    ]


def test_biogen2025_list(tmp_path: Path) -> None:
    data = [
        {
            "id": 181,
            "question": "what is axonal injury?",
            "narrative": "after a crash",
            "topic": "axonal injury",
            "retrieved_docs": [],
            "answer": None,
        }
    ]
    path = _write(tmp_path / "t.json", json.dumps(data))
    assert read_topics(path) == [
        Topic("181", "what is axonal injury?", narrative="after a crash", topic="axonal injury")
    ]


def test_trec_tsv(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.tsv", "1\tstatin side effects\n\n2\t covid vaccine myocarditis \n")
    assert read_topics(path) == [Topic("1", "statin side effects"), Topic("2", "covid vaccine myocarditis")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"queries": []}', "unknown topics JSON shape"),
        ('{"questions": [{"id": "x"}]}', r"questions\[0\].*'id' and 'body'"),
        ("[]", "empty"),
        ("", "empty"),
        ("1 no tab here\n", r"line 1\): expected 'qid<TAB>query'"),
        ('{"topic_id": 1, "question": "a"}\n{"topic_id": 2,\n', r"line 2\): not valid JSON"),
        ("[1, 2", "not valid JSON"),
        ('[{"id": 1, "question": "a"}, {"id": 1, "question": "b"}]', "appears twice"),
        ('[{"meta_data": {"qa_id": "116"}, "answer": []}]', "needs an id"),
    ],
)
def test_bad_inputs(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path / "bad", text)
    with pytest.raises(InputError, match=message):
        read_topics(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such topics file"):
        read_topics(tmp_path / "nope.json")


def test_real_biogen2025(shared_data: Path) -> None:
    topics = read_topics(shared_data / "biogen" / "biogen2025_taskB_topics.json")
    assert len(topics) == 30
    assert topics[0].id == "181" and topics[0].question.startswith("what is axonal injury")
    assert all(t.narrative and t.topic for t in topics)


def test_real_bioasq_dev(shared_data: Path) -> None:
    start = time.perf_counter()
    topics = read_topics(shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz")
    assert len(topics) == 1502
    assert {t.type for t in topics} == {"yesno", "factoid", "list", "summary"}
    ids = set((shared_data / "bioasq" / "dev_ids.txt").read_text().split())
    assert {t.id for t in topics} == ids
    assert time.perf_counter() - start < 30
