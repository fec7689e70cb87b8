"""Issue 22: every offline command on a fresh machine, fed values and files a hostile or careless user gives.

Each case ends in a clean ``error:`` line (or, with ``--on-error skip``, a counted skip), never a traceback,
and leaves what was already written as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from robust_helpers import BAD, assert_clean_error, corpus_lines, store_state

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["-q", *args])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store of 30 articles with its BM25 index built."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "c.jsonl").write_text(corpus_lines())
    assert invoke("ingest", str(root / "c.jsonl"), "--store", str(root / "store")).exit_code == 0
    assert invoke("search", "statins", "--corpus", str(root / "store")).exit_code == 0  # builds the index
    yield root / "store"


# -- 1: JSONL values Python's json module cannot hold ------------------------------------------------------
JSON_CANNOT_HOLD = [("corpus_huge_int.jsonl", {"1", "3"}, "line 2", "digits"),
                    ("corpus_lone_surrogate.jsonl", {"1", "4"}, "line 2", "lone surrogate")]


@pytest.mark.parametrize(("name", "kept", "line", "reason"), JSON_CANNOT_HOLD)
def test_values_json_cannot_hold_are_skipped_and_the_good_records_kept(
        tmp_path: Path, name: str, kept: set[str], line: str, reason: str) -> None:
    result = invoke("ingest", str(BAD / name), "--store", str(tmp_path / "s"), "--on-error", "skip")
    assert result.exit_code == 0 and result.exception is None, (result.output, repr(result.exception))
    with DocumentStore.open(tmp_path / "s") as s:
        assert {a.pmid for a in s.iter_articles()} == kept
        (recorded,) = s.files()
    assert (recorded["status"], recorded["added"], recorded["skipped"]) == ("done", 2, 1 if "int" in name else 2)


@pytest.mark.parametrize(("name", "kept", "line", "reason"), JSON_CANNOT_HOLD)
def test_values_json_cannot_hold_stop_the_ingest_naming_file_and_line(
        store: Path, name: str, kept: set[str], line: str, reason: str) -> None:
    before = store_state(store)
    assert_clean_error(invoke("ingest", str(BAD / name), "--store", str(store)), name, line, reason)
    assert store_state(store) == before


# -- 2: numbers past what the engine or SQLite can hold ----------------------------------------------------
HUGE = str(10**60)


def assert_usage_error(result: Result, *needles: str) -> None:
    """click refused an option's value: exit code 2, its ``Error: Invalid value`` line, no traceback."""
    assert result.exit_code == 2, (result.output, repr(result.exception))
    assert "Traceback" not in result.output and "Error: Invalid value for" in result.output, result.output
    for needle in needles:
        assert needle in result.output, (needle, result.output)


@pytest.mark.parametrize("k", [HUGE, str(10**18), str(2**64)])
def test_search_k_past_the_engine_is_refused(store: Path, k: str) -> None:
    assert_usage_error(invoke("search", "statins", "--corpus", str(store), "-k", k), "'-k'", k)
    index = next((store / "indexes").glob("tantivy-*"))
    assert_usage_error(invoke("search", "statins", "--index", str(index), "-k", k), "'-k'", k)


@pytest.mark.parametrize(("args", "option"), [
    (["ingest", "--wait", "nan", "x.jsonl", "--store", "s"], "--wait"),
    (["ingest", "--batch-size", str(2**64), "x.jsonl", "--store", "s"], "--batch-size"),
    (["index", "bm25", "--k1", "inf", "--store", "s"], "--k1"),
    (["pubmed", "sync", "--timeout", "nan", "--dest", "d"], "--timeout"),
    (["eval", "biogen-b", "--threshold", "nan", "--run", "."], "--threshold"),
    (["train", "ltr", "--seed", str(10**30)], "--seed"),
])
def test_number_options_refuse_non_finite_and_huge_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], option: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert_usage_error(invoke(*args), f"'{option}'")
    assert not list(tmp_path.iterdir())


def test_corpus_show_a_pmid_past_sqlite(store: Path) -> None:
    assert_clean_error(invoke("corpus", "show", "999999999999999999999999999999", "--store", str(store)),
                       "PMID 999999999999999999999999999999")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "Infinity", "-Infinity", "NaN", "1e999"])
@pytest.mark.parametrize("field", ["retrieve.k", "retrieve.rrf_k", "verify.gate_threshold", "index.milvus.timeout_s"])
def test_non_finite_numbers_in_settings_are_refused(store: Path, field: str, value: str) -> None:
    assert_clean_error(invoke("search", "statins", "--corpus", str(store), "--set", f"{field}={value}"),
                       field.split(".")[-1])


@pytest.mark.parametrize("field", ["retrieve.k", "retrieve.keep", 'retrieve.branches=[{"backend": "bm25", "k"'])
def test_hit_counts_past_the_engine_are_refused_in_settings(store: Path, field: str) -> None:
    override = f"{field}: {10**18}}}]" if field.startswith("retrieve.branches") else f"{field}={10**18}"
    assert_clean_error(invoke("search", "statins", "--corpus", str(store), "--set", override), "less than or equal")


def test_every_float_setting_refuses_non_finite_values() -> None:
    """Every float field of every settings section and backend config, found by walking the models."""
    from pydantic import BaseModel, ValidationError

    from medcite import registry
    from medcite.config import Settings
    from medcite.errors import ConfigError

    models: list[type[BaseModel]] = [Settings]
    for stage in registry.stages():
        for name in registry.names(stage.name):
            try:
                models.append(registry.config_class(stage.name, name))
            except (ImportError, ConfigError):  # an optional extra that is not installed; a task without settings
                continue
    seen: set[type[BaseModel]] = set()
    checked = 0
    while models:
        model = models.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            text = str(info.annotation)
            models.extend(t for t in getattr(info.annotation, "__args__", (info.annotation,))
                          if isinstance(t, type) and issubclass(t, BaseModel))
            if "float" not in text:
                continue
            for bad in (float("inf"), float("nan"), "-inf"):
                value = {"x": bad} if text.startswith("dict") else [bad] if text.startswith("list") else bad
                with pytest.raises(ValidationError) as caught:
                    model.model_validate({name: value})
                assert any(e["loc"][0] == name for e in caught.value.errors()), \
                    (model.__name__, name, bad, caught.value.errors())
                checked += 1
    assert checked > 30, checked


# -- 3: a topics file whose fields are of the wrong type ---------------------------------------------------
@pytest.mark.parametrize(("content", "needles"), [
    ('[{"id": "t1", "question": ["Do statins", "lower LDL?"]}]', ["'t1'", "'question'", "list"]),
    ('[{"id": "t1", "question": 42}]', ["'t1'", "'question'", "int"]),
    ('[{"id": "t1", "question": {"text": "Do statins lower LDL?"}}]', ["'t1'", "'question'", "dict"]),
    ('[{"id": "t1", "question": "Do statins lower LDL?", "narrative": ["a"]}]', ["'t1'", "'narrative'"]),
    ('{"topic_id": "t2", "question": true}\n', ["'t2'", "'question'", "bool"]),
    ('{"questions": [{"id": "q1", "body": ["Is", "it"], "type": "yesno"}]}', ["'q1'", "'body'"]),
    ('{"questions": [{"id": "q1", "body": "Is it?", "type": 3}]}', ["'q1'", "'type'"]),
])
def test_topic_fields_of_the_wrong_type_are_refused(store: Path, tmp_path: Path, content: str,
                                                    needles: list[str]) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(content)
    out = tmp_path / "run.trec"
    assert_clean_error(invoke("search", "--corpus", str(store), "--topics", str(topics), "--output", str(out)),
                       "topics.json", *needles)
    assert not out.exists()


# -- 4: --out into a folder of the user's that is not a run directory --------------------------------------
@pytest.mark.parametrize("config", [None, "{not json", '{"model_type": "bert"}'])
@pytest.mark.parametrize("command", ["ask", "run"])
def test_out_into_a_folder_that_is_not_a_run_is_refused(store: Path, tmp_path: Path, command: str,
                                                        config: str | None) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    if config is not None:
        (mine / "config.json").write_text(config)
    before = {p.name: p.read_bytes() for p in mine.iterdir()}
    topics = tmp_path / "topics.json"
    topics.write_text('[{"id": "t1", "question": "Do statins lower LDL?"}]')
    args = {"ask": ["ask", "Do statins lower LDL?", "--corpus", str(store), "--out", str(mine)],
            "run": ["run", "--topics", str(topics), "--corpus", str(store), "--out", str(mine)]}[command]
    assert_clean_error(invoke(*args), str(mine), "not a medcite run directory")
    assert {p.name: p.read_bytes() for p in mine.iterdir()} == before


def test_out_into_an_empty_folder_or_an_earlier_run_still_works(store: Path, tmp_path: Path) -> None:
    asked, ran = tmp_path / "asked", tmp_path / "ran"
    asked.mkdir()
    ran.mkdir()
    result = invoke("ask", "Do statins lower LDL?", "--corpus", str(store), "--out", str(asked))
    assert result.exit_code == 0 and (asked / "config.json").is_file(), result.output
    topics = tmp_path / "topics.json"
    topics.write_text('[{"id": "t1", "question": "Do statins lower LDL?"}]')
    for _ in range(2):  # the second time the earlier run is resumed
        result = invoke("run", "--topics", str(topics), "--corpus", str(store), "--out", str(ran))
        assert result.exit_code == 0, result.output
    assert len((ran / "answers.jsonl").read_text().splitlines()) == 1


# -- 5: a store.sqlite that is not a medcite store ---------------------------------------------------------
def foreign_sqlite(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes(text TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["zero bytes", "text", "foreign sqlite"])
def test_a_store_file_that_is_not_a_store_is_reported_never_made_again(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "store.sqlite"
    if kind == "foreign sqlite":
        foreign_sqlite(db)
    else:
        db.write_bytes(b"" if kind == "zero bytes" else b"my notes, not a database\n")
    before = db.read_bytes()
    (tmp_path / "c.jsonl").write_text(corpus_lines(3))
    for args in (["ingest", str(tmp_path / "c.jsonl"), "--store", str(folder)],
                 ["search", "statins", "--corpus", str(folder)],
                 ["corpus", "stats", "--store", str(folder)]):
        assert_clean_error(invoke(*args), str(folder), "not a medcite document store")
        assert db.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) in (["store.sqlite"], ["store.lock", "store.sqlite"])


# -- 6: an empty submission is not a valid one -------------------------------------------------------------
HEAD24 = '"team_id": "t", "run_name": "r", "contact_email": "a@b.c"'


@pytest.mark.parametrize(("kind", "content"), [
    ("biogen-b", ""), ("biogen-b", "\n  \n"), ("biogen24", "{" + HEAD24 + ', "results": []}'),
    ("biogen-a", ""), ("biogen-a", "[]"),
    ("bioasq --phase A", '{"questions": []}'), ("bioasq --phase B", '{"questions": []}'),
])
def test_an_empty_submission_is_an_error(tmp_path: Path, kind: str, content: str) -> None:
    path = tmp_path / "submission.json"
    path.write_text(content)
    result = invoke("validate", *kind.split(), str(path))
    assert result.exit_code == 255, result.output
    assert "OK" not in result.output and "Traceback" not in result.output, result.output
    assert (tmp_path / "submission.json.errlog").is_file()


# -- 8: ask without --out keeps its run directory in medcite's data folder, not the current one ------------
def test_ask_without_out_writes_into_the_runs_dir_not_the_current_folder(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, runs = tmp_path / "here", tmp_path / "medcite-runs"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("MEDCITE_RUNS_DIR", str(runs))
    result = invoke("ask", "Do statins lower LDL?", "--corpus", str(store))
    assert result.exit_code == 0, result.output
    assert not list(here.iterdir())
    (run,) = runs.iterdir()
    assert run.name.startswith("ask-") and (run / "answers.jsonl").is_file()
    assert f"run directory: {run}" in result.output
    result = CliRunner().invoke(cli, ["-q", "ask", "Do statins lower LDL?", "--corpus", str(store), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["topic_id"] == "q1"  # stdout stays one JSON document
    assert "run directory: " in result.stderr and len(list(runs.iterdir())) == 2
    assert not list(here.iterdir())


def test_the_runs_dir_is_the_per_user_data_dir_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from medcite.paths import runs_dir

    monkeypatch.delenv("MEDCITE_RUNS_DIR", raising=False)
    assert runs_dir() == Path(platformdirs.user_data_dir("medcite")) / "runs"  # only named, never created here
    monkeypatch.setenv("MEDCITE_RUNS_DIR", "~/elsewhere")
    assert runs_dir() == Path.home() / "elsewhere"
