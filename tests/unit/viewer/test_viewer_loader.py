"""Tolerant reading of run files: problems with positions, last row wins, cache keyed by mtime and size."""

from __future__ import annotations

import os
from pathlib import Path

from viewer_runs import write_run

from medcite.viewer.files import FileCache, LazyJsonl, Problem, TrecFile, parse_jsonl_table
from medcite.viewer.loader import Run, list_run_dirs, parse_validation, resolve_run
from medcite.viewer.summary import flat_metrics, topic_metrics


def test_jsonl_table_groups_by_topic_and_reports_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "answers.jsonl"
    p.write_text('{"topic_id": "1", "v": 1}\n{broken\n\n"just a string"\n{"topic_id": 2, "v": 2}\n'
                 '{"topic_id": "1", "v": 3}\n{"id": "7"}\n{"topic_id": true}\n')
    t = parse_jsonl_table(p)
    assert list(t.by_topic) == ["1", "2", "7"]
    assert t.last("1") == {"topic_id": "1", "v": 3}  # a resumed run rewrote topic 1: the last line wins
    assert [(x.line, x.message.split(" (")[0]) for x in t.problems] == [
        (2, "not valid JSON"), (4, "line is not an object with a topic_id"),
        (8, "line is not an object with a topic_id")]


def test_trec_topic_lines_keep_first_rank_and_report_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "rerank.trec"
    p.write_text("1 Q0 11 1 9.5 t\n1 Q0 12 2 8.0 t\nbad line\n2 Q0 11 1 3 t\n1 Q0 11 3 1.0 t\n"
                 "10 Q0 99 1 1 t\n1\tQ0\t13\t4\t0.5\tt\n1 Q0 14 x 0.1 t\n")
    trec = TrecFile(p)
    hits, problems = trec.topic("1")
    assert hits == {"11": (1, 9.5), "12": (2, 8.0), "13": (4, 0.5)}  # not topic 10's line
    assert [(x.file, x.line) for x in problems] == [("rerank.trec", 8)]
    assert trec.topic("2") == ({"11": (1, 3.0)}, [])
    assert trec.topic("10")[0] == {"99": (1, 1.0)}
    assert trec.topic("3") == ({}, [])
    assert trec.topic("1.") == ({}, [])  # the id is matched literally, not as a pattern


def test_lazy_jsonl_parses_one_topic_at_a_time(tmp_path: Path) -> None:
    p = tmp_path / "evidence.jsonl"
    p.write_text('{"topic_id": "1", "v": 1}\n{"v": 0, "topic_id": 2}\n{"topic_id": "1", "v": {oops\n'
                 '{"topic_id":"1","v":3,"note":"say \\"topic_id\\": \\"2\\""}\n{"no": "topic"}\n\n')
    lazy = LazyJsonl(p)
    assert sorted(lazy.lines) == ["1", "2"]
    assert [(x.line, x.message) for x in lazy.problems] == [(5, "line is not an object with a topic_id")]
    rows, problems = lazy.rows("1")
    assert [r["v"] for r in rows] == [1, 3]
    assert [x.line for x in problems] == [3] and problems[0].message.startswith("not valid JSON")
    assert lazy.rows("2")[0] == [{"v": 0, "topic_id": 2}]
    assert lazy.rows("9") == ([], [])


def test_validation_errors_are_assigned_to_topics() -> None:
    v, problems = parse_validation({"ok": False, "errors": [
        "topic 181: answer has 260 words", {"topic_id": 182, "message": "PMID 5 not in corpus"},
        "submission file missing", "qa_id=116: overlap",
        "line 4 (topic 183): PMIDs not in the corpus: 1", "the topic list is empty"]})
    assert problems == []
    assert v.state == "invalid"
    assert v.by_topic == {"181": ["topic 181: answer has 260 words"], "182": ["PMID 5 not in corpus"],
                          "116": ["qa_id=116: overlap"], "183": ["line 4 (topic 183): PMIDs not in the corpus: 1"]}
    assert v.topic_state("181") == "invalid" and v.topic_state("999") == "valid"
    ok, _ = parse_validation({"ok": True, "errors": []})
    assert ok.state == "valid" and ok.topic_state("1") == "valid"
    bad, problems = parse_validation({"errors": []})
    assert bad.state == "not validated" and problems[0].file == "validation.json"


def test_cache_rereads_a_file_when_it_changes(tmp_path: Path) -> None:
    p = tmp_path / "topics.jsonl"
    p.write_text('{"id": "1"}\n')
    cache = FileCache(entries=4)
    first = cache.get(p, parse_jsonl_table)
    assert cache.get(p, parse_jsonl_table) is first
    assert (cache.hits, cache.misses) == (1, 1)
    with open(p, "a") as fh:  # a run still being written grows
        fh.write('{"id": "2"}\n')
    assert list(cache.get(p, parse_jsonl_table).by_topic) == ["1", "2"]
    assert cache.misses == 2
    p.write_text('{"id": "9"}\n')  # same size, new mtime
    os.utime(p, ns=(1, 1))
    assert list(cache.get(p, parse_jsonl_table).by_topic) == ["9"]


def test_cache_is_bounded(tmp_path: Path) -> None:
    cache = FileCache(entries=2)
    for i in range(3):
        (tmp_path / f"{i}.jsonl").write_text("")
        cache.get(tmp_path / f"{i}.jsonl", parse_jsonl_table)
    cache.get(tmp_path / "0.jsonl", parse_jsonl_table)
    assert cache.misses == 4  # 0 was evicted by 2


def test_resolve_run_accepts_only_run_ids_inside_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "ok-run_1.2").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", root / "link")
    (root / "file.txt").write_text("x")
    assert resolve_run(root, "ok-run_1.2") == (root / "ok-run_1.2").resolve()
    for name in ["..", ".", "../out", "..%2Fout", "%2e%2e", "/etc", "a/b", "link", "file.txt", "", "missing",
                 "ok-run_1.2/..", "\x00", ".hidden"]:
        assert resolve_run(root, name) is None, name
    assert [p.name for p in list_run_dirs(root)] == ["ok-run_1.2"]


def test_run_reads_a_real_run_and_collects_problems(tmp_path: Path) -> None:
    path = write_run(tmp_path / "r1", preset="clac25-b")
    run = Run(path, FileCache())
    assert run.preset == "clac25-b" and run.created_at
    assert run.topic_ids() == ["t1", "t2"]
    assert run.rankings("t1") == {"rerank": {"222": (1, 2.0), "111": (2, 1.0)}}
    assert run.problems == []
    (path / "config.json").write_text("[]")
    broken = Run(path, FileCache())
    assert broken.preset == "unknown"
    assert broken.problems == [Problem("config.json", "expected a JSON object")]


def test_answered_topics_missing_from_topics_file_are_listed(tmp_path: Path) -> None:
    path = write_run(tmp_path / "r2")
    (path / "topics.jsonl").write_text('{"id": "t2", "question": "?"}\n')
    assert Run(path, FileCache()).topic_ids() == ["t2", "t1"]


def test_metrics_are_flattened_and_per_topic_tables_found() -> None:
    m = {"map": 0.5, "rouge": {"r2": {"f1": 0.1, "recall": 0.2}}, "name": "x", "n": True,
         "per_topic": {"7": {"map": 1.0}}, "topics": [{"topic_id": "8", "map": 0.25}]}
    assert flat_metrics(m) == {"map": 0.5, "rouge.r2.f1": 0.1, "rouge.r2.recall": 0.2}
    assert topic_metrics(m, "7") == {"map": 1.0}
    assert topic_metrics(m, "8") == {"map": 0.25}
    assert topic_metrics(m, "9") == {}
