"""Issue 32: the cache keys the server, keeps the replies medcite rejected without replaying them, migrates an
older file in place, and `medcite cache stats` / `medcite cache clear` report and prune it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.llm.base import Completion, reject
from medcite.llm.cache import LLMCache, cache_key, canonical_json
from medcite.llm.openai_backend import OpenAIBackend
from medcite.llm.trace import trace_context, trace_to

MSG = [{"role": "user", "content": "Do statins lower LDL?"}]
PARAMS: dict[str, object] = {"temperature": 0.0, "max_tokens": 5, "stop": None, "seed": 0}


def _row(path: Path, key: str) -> tuple[str, str | None, str]:
    with sqlite3.connect(path) as conn:
        text, rejected, server = conn.execute("SELECT text, rejected, server FROM completions WHERE key = ?",
                                              (key,)).fetchone()
    return text, rejected, server


def test_the_key_holds_the_server_and_an_in_process_key_is_unchanged() -> None:
    a = cache_key("openai", "m", MSG, PARAMS, "http://127.0.0.1:8000/v1")
    assert a != cache_key("openai", "m", MSG, PARAMS, "http://127.0.0.1:8001/v1")
    assert a != cache_key("openai", "m", MSG, PARAMS)
    # the key before servers were keyed, by hand: an in-process backend's old cache rows still match
    old = hashlib.sha256(canonical_json({"backend": "local", "model": "m", "messages": MSG,
                                         "params": PARAMS}).encode()).hexdigest()
    assert cache_key("local", "m", MSG, PARAMS) == old


def test_an_openai_backend_is_not_answered_from_another_servers_replies(tmp_path: Path, openai_server) -> None:
    openai_server.push({"kind": "ok", "text": "ok"})
    cache = LLMCache(tmp_path / "c.sqlite")
    first = OpenAIBackend("m", base_url=openai_server.base_url, cache=cache)
    assert first.complete(MSG).text == "ok" and len(openai_server.requests) == 1
    same = OpenAIBackend("m", base_url=openai_server.base_url + "/", cache=cache)  # the same root, spelled so
    hit = same.complete(MSG)
    assert (hit.text, hit.cache_hit, len(openai_server.requests)) == ("ok", True, 1)
    host, port = openai_server.httpd.server_address[:2]
    other = OpenAIBackend("m", base_url=f"http://localhost:{port}/v1", cache=cache)  # another server's address
    fresh = other.complete(MSG)
    assert fresh.cache_hit is False and fresh.text.startswith("echo:") and len(openai_server.requests) == 2
    assert _row(cache.path, fresh.key)[2] == f"http://localhost:{port}/v1"
    assert len(cache) == 2


def test_a_rejected_reply_stays_in_the_file_with_its_reason_but_is_asked_again(tmp_path: Path,
                                                                             scripted_llm) -> None:
    path = tmp_path / "c.sqlite"
    llm = scripted_llm(["ok"], cache=LLMCache(path))
    bad = llm.complete(MSG)
    assert bad.key and bad.cache_hit is False
    with trace_to(tmp_path / "trace.jsonl"), trace_context(topic_id="t1"):
        reject(llm, bad, "no sub-query could be read")
    llm.close()
    assert _row(path, bad.key)[:2] == ("ok", "no sub-query could be read")
    rows = [json.loads(x) for x in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert rows == [{"topic_id": "t1", "stage": None, "event": "rejected", "backend": "scripted",
                     "model": "scripted-model", "key": bad.key, "reason": "no sub-query could be read"}]

    again = scripted_llm(["[\"statins LDL\"]"], cache=LLMCache(path))
    fixed = again.complete(MSG)
    assert (fixed.text, fixed.cache_hit, fixed.key) == ("[\"statins LDL\"]", False, bad.key)
    assert again.prompts == [MSG]  # the server was asked, not the file
    assert _row(path, bad.key)[:2] == ("[\"statins LDL\"]", None)  # the new reply replaced the rejected one
    assert again.complete(MSG).cache_hit is True  # and an accepted reply is replayed as before


def test_a_rejection_line_carries_the_labels_of_its_call(tmp_path: Path, scripted_llm) -> None:
    llm = scripted_llm(["ok"])  # no cache: the trace still names the rejected call
    path = tmp_path / "trace.jsonl"
    with trace_to(path), trace_context(topic_id="t2"):
        with trace_context(stage="decomposition"):
            reply = llm.complete(MSG)
        reject(llm, reply, "not a list")  # read after the stage's block ended
    call, rejection = (json.loads(x) for x in path.read_text().splitlines())
    assert call["key"] == rejection["key"] == reply.key
    assert (rejection["topic_id"], rejection["stage"], rejection["event"]) == ("t2", "decomposition", "rejected")


def test_reject_leaves_an_llm_without_the_method_alone() -> None:
    class Bare:
        name, model = "bare", "m"

    reject(Bare(), Completion("x", "m", key="k"), "unread")  # type: ignore[arg-type]


OLD_SCHEMA = """CREATE TABLE completions (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,
request TEXT NOT NULL, text TEXT NOT NULL, response_model TEXT NOT NULL, usage TEXT NOT NULL, finish_reason TEXT,
latency_s REAL NOT NULL, created_at TEXT NOT NULL)"""


def test_a_cache_file_from_before_the_server_column_is_migrated_and_keeps_working(tmp_path: Path,
                                                                                  scripted_llm) -> None:
    path = tmp_path / "old.sqlite"
    key = cache_key("scripted", "scripted-model", MSG, {"temperature": 0.0, "max_tokens": 512, "stop": None,
                                                        "seed": 0})
    with sqlite3.connect(path) as conn:
        conn.execute(OLD_SCHEMA)
        conn.execute("INSERT INTO completions VALUES (?, 'scripted', 'scripted-model', '{}', 'old answer', "
                     "'scripted-model', '{}', 'stop', 0.1, '2024-01-02T00:00:00+00:00')", (key,))
    cache = LLMCache(path)
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(completions)")}
    assert {"server", "rejected", "rejected_at"} <= columns
    llm = scripted_llm([], cache=cache)  # no answers: a miss would raise
    assert llm.complete(MSG).text == "old answer"
    assert cache.reject(key, "unusable") and cache.get(key) is None
    llm.close()
    LLMCache(path).close()  # opening a migrated file again changes nothing


# -- medcite cache stats / clear --------------------------------------------------------------------------
def _fill(folder: Path) -> None:
    """Four replies: two old (2024), one rejected; two new, one of them from another server."""
    cache = LLMCache.in_folder(folder)
    rows = [("a", "openai", "http://x/v1", "2024-03-01T10:00:00+00:00", "bad"),
            ("b", "openai", "http://x/v1", "2024-05-01T10:00:00+00:00", None),
            ("c", "openai", "http://y/v1", "2025-06-01T10:00:00+00:00", "bad"),
            ("d", "local", "", "2025-07-01T10:00:00+00:00", None)]
    for key, backend, server, created, rejected in rows:
        cache.put(key, backend, "m", MSG, PARAMS, Completion(f"reply {key}", "m"), server)
        with sqlite3.connect(cache.path) as conn:
            conn.execute("UPDATE completions SET created_at = ? WHERE key = ?", (created, key))
        if rejected:
            cache.reject(key, rejected)
    cache.close()


def _stats(folder: Path) -> dict:
    result = CliRunner().invoke(cli, ["cache", "stats", "--cache-dir", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cache_stats_counts_replies_rejections_sources_and_dates(tmp_path: Path) -> None:
    _fill(tmp_path)
    got = _stats(tmp_path)
    assert (got["replies"], got["rejected"]) == (4, 2)
    assert (got["oldest"], got["newest"]) == ("2024-03-01T10:00:00+00:00", "2025-07-01T10:00:00+00:00")
    assert got["file"] == str(tmp_path / "llm-cache.sqlite") and got["size_bytes"] > 0
    sources = {(s["backend"], s["server"]): (s["replies"], s["rejected"]) for s in got["by_source"]}
    assert sources == {("openai", "http://x/v1"): (2, 1), ("openai", "http://y/v1"): (1, 1), ("local", ""): (1, 0)}
    text = CliRunner().invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path)]).output
    assert "replies:  4 (2 rejected" in text and "http://y/v1" in text and "(in-process)" in text


def test_cache_stats_of_a_missing_cache_creates_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path / "none")])
    assert result.exit_code == 0 and "no LLM cache at" in result.output
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(("args", "left"), [
    (["--older-than", "2025-01-01"], {"c", "d"}),
    (["--older-than", "2024-04-01T00:00"], {"b", "c", "d"}),
    (["--rejected"], {"b", "d"}),
    (["--rejected", "--older-than", "2025-01-01"], {"b", "c", "d"}),
    ([], set()),
])
def test_cache_clear_deletes_what_it_is_told(tmp_path: Path, args: list[str], left: set[str]) -> None:
    _fill(tmp_path)
    result = CliRunner().invoke(cli, ["cache", "clear", "--cache-dir", str(tmp_path), *args])
    assert result.exit_code == 0, result.output
    assert f"deleted {4 - len(left)} repl" in result.output and f"{len(left)} left" in result.output
    with sqlite3.connect(tmp_path / "llm-cache.sqlite") as conn:
        assert {r[0] for r in conn.execute("SELECT key FROM completions")} == left


def test_cache_clear_refuses_a_date_that_is_not_iso(tmp_path: Path) -> None:
    _fill(tmp_path)
    result = CliRunner().invoke(cli, ["cache", "clear", "--cache-dir", str(tmp_path), "--older-than", "last week"])
    assert result.exit_code == 1
    assert "is not an ISO date" in result.output and "2025-06-01" in result.output
    assert _stats(tmp_path)["replies"] == 4  # nothing deleted


# -- issue 42: a file that is not this medcite's cache ---------------------------------------------------
def _foreign(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "text":
        path.write_text("not a database\n")
        return
    with sqlite3.connect(path) as conn:
        if kind == "other columns":  # another tool's cache under the same name
            conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, value TEXT, stored REAL)")
            conn.execute("INSERT INTO completions VALUES ('k', 'v', 1.0)")
        elif kind == "required extra column":
            conn.execute(OLD_SCHEMA.replace("created_at TEXT NOT NULL", "created_at TEXT NOT NULL, tool TEXT NOT NULL"))
        else:  # another program's database
            conn.execute("CREATE TABLE notes (text TEXT)")


@pytest.mark.parametrize("kind", ["other columns", "text", "another database", "required extra column"])
def test_a_foreign_cache_file_is_set_aside_with_one_warning_and_the_run_goes_on(
        tmp_path: Path, kind: str, scripted_llm, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "llm-cache.sqlite"
    _foreign(path, kind)
    before = path.read_bytes()
    cache = LLMCache(path)
    llm = scripted_llm(["ok"], cache=cache)
    assert llm.complete(MSG).text == "ok" and llm.complete(MSG).cache_hit  # stored and replayed in the new file
    llm.close()
    (aside,) = tmp_path.glob("llm-cache.sqlite.set-aside-*")
    assert aside.read_bytes() == before  # set aside as it was, never written to
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "set aside" in r.getMessage()]
    assert len(warnings) == 1 and aside.name in warnings[0].getMessage()
    assert cache.found is not None and "not a medcite LLM cache" in cache.found


@pytest.mark.parametrize("command", [["stats"], ["stats", "--json"], ["clear"]])
def test_cache_stats_and_clear_say_what_they_found_in_a_foreign_file(tmp_path: Path, command: list[str]) -> None:
    _foreign(tmp_path / "llm-cache.sqlite", "other columns")
    result = CliRunner().invoke(cli, ["cache", *command, "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "OperationalError" not in result.output
    assert "not a medcite LLM cache" in result.output and "set aside as llm-cache.sqlite.set-aside-" in result.output
    assert len(list(tmp_path.glob("llm-cache.sqlite.set-aside-*"))) == 1


def test_an_older_cache_is_migrated_with_one_warning_and_stats_says_so(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    with sqlite3.connect(tmp_path / "llm-cache.sqlite") as conn:
        conn.execute(OLD_SCHEMA)
        conn.execute("INSERT INTO completions VALUES ('k', 'local', 'm', '{}', 'old', 'm', '{}', 'stop', 0.1, "
                     "'2024-01-02T00:00:00+00:00')")
    result = CliRunner().invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["replies"] == 1 and "older medcite" in got["found"] and "server, rejected, rejected_at" in got["found"]
    assert [r.levelname for r in caplog.records if "older medcite" in r.getMessage()] == ["WARNING"]
    assert _stats(tmp_path)["found"] is None  # migrated once: the next opening finds this medcite's cache
    assert not list(tmp_path.glob("*.set-aside-*"))


def test_a_write_the_disk_refuses_is_a_clear_error_not_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite.errors import WriteError

    cache = LLMCache(tmp_path / "c.sqlite")

    class Full:
        def execute(self, *args: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(cache, "_conn", Full())
    with pytest.raises(WriteError, match=r"disk full: .*c\.sqlite.*the cache keeps every reply stored before"):
        cache.put("k", "local", "m", MSG, PARAMS, Completion("x", "m"))
