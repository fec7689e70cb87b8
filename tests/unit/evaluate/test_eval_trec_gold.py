"""TREC run/qrels IO and gold readers: round trips, hand-checked parses, errors naming file:line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from medcite.errors import InputError
from medcite.evaluate.gold import pmid_from_url, read_gold
from medcite.trec import read_qrels, read_run, write_qrels, write_run
from medcite.types import Hit


def test_run_round_trip(tmp_path: Path) -> None:
    run = {"q1": [Hit("11", 3.5), Hit("12", 1.25)], "q2": [Hit("21", 0.5)]}
    write_run(tmp_path / "r.trec", run, "bm25")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert lines[0] == "q1 Q0 11 1 3.500000 bm25"
    assert lines[2] == "q2 Q0 21 1 0.500000 bm25"
    back = read_run(tmp_path / "r.trec")
    assert back == {"q1": [Hit("11", 3.5, 1), Hit("12", 1.25, 2)], "q2": [Hit("21", 0.5, 1)]}


def test_read_run_sorts_by_score(tmp_path: Path) -> None:
    (tmp_path / "r").write_text("q 0 a 1 1.0 t\nq 0 b 2 2.0 t\n\nq 0 c 3 2.0 t\n")
    assert [(h.pmid, h.rank) for h in read_run(tmp_path / "r")["q"]] == [("b", 1), ("c", 2), ("a", 3)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q Q0 1 1 1.0 t\nq Q0 2 2 x t\n", r"line 2\): score 'x' is not a number"),
        ("q Q0 1 1 1.0 t\nq 0 2 1\n", r"line 2\): expected 6 columns"),
        ("q Q0 1 one 1.0 t\n", r"line 1\): rank 'one' is not an integer"),
        ("q Q0 1 1 1.0 t\nq Q0 1 2 0.5 t\n", r"line 2\): document 1 appears twice"),
    ],
)
def test_bad_run_lines(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.trec"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_run(path)
    assert str(path) in str(err.value)


def test_write_run_refuses_spaces(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        write_run(tmp_path / "r", {"q 1": [Hit("1", 1.0)]}, "t")
    with pytest.raises(InputError):
        write_run(tmp_path / "r", {"q1": [Hit("1", 1.0)]}, "two words")
    assert not (tmp_path / "r").exists()


def test_qrels(tmp_path: Path) -> None:
    write_qrels(tmp_path / "q", {"1": {"10": 1, "11": 0}})
    assert (tmp_path / "q").read_text() == "1 0 10 1\n1 0 11 0\n"
    assert read_qrels(tmp_path / "q") == {"1": {"10": 1, "11": 0}}
    (tmp_path / "bad").write_text("1 0 10 1\n1 0 10 2\n")
    with pytest.raises(InputError, match="judged both 1 and 2"):
        read_qrels(tmp_path / "bad")
    (tmp_path / "run").write_text("1 Q0 10 1 2.0 t\n")
    with pytest.raises(InputError, match="line 1.*4 columns"):
        read_gold(tmp_path / "run")


def test_gold_from_bioasq_json(tmp_path: Path) -> None:
    data = {
        "questions": [
            {
                "id": "a1",
                "body": "?",
                "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/123", "https://pubmed.ncbi.nlm.nih.gov/456/"],
            },
            {"id": "a2", "body": "?", "documents": []},
        ]
    }
    with gzip.open(tmp_path / "g.json.gz", "wt") as fh:
        json.dump(data, fh)
    assert read_gold(tmp_path / "g.json.gz") == {"a1": {"123": 1, "456": 1}, "a2": {}}
    assert pmid_from_url("12345") == "12345" and pmid_from_url("http://x/pubmed/abc") is None
    data["questions"][0]["documents"] = ["http://x/nothing"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"questions\[0\]"):
        read_gold(tmp_path / "bad.json")


def test_gold_real_bioasq_dev(shared_data: Path, tmp_path: Path) -> None:
    gold = read_gold(shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz")
    assert len(gold) == 1502
    assert sum(len(d) for d in gold.values()) > 1502 * 3
    assert all(p.isdigit() for docs in gold.values() for p in docs)
