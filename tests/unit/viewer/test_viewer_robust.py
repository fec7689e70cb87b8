"""Issue 16 #17: symlinked files are not followed, wrong-type fields are Problems, HEAD answers like GET."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from viewer_runs import write_run

from medcite.viewer.server import serve_in_thread


def rewrite(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_symlinked_run_files_pointing_out_are_not_followed(tmp_path: Path, client_for) -> None:
    root = tmp_path / "runs"
    write_run(root / "alpha")
    write_run(tmp_path / "outside", question="OUTSIDE-QUESTION")
    (tmp_path / "secret.trec").write_text("t1 Q0 SECRETPMID 1 9.0 x\n")
    run = root / "alpha"
    (run / "topics.jsonl").unlink()
    os.symlink(tmp_path / "outside" / "topics.jsonl", run / "topics.jsonl")
    os.symlink(tmp_path / "secret.trec", run / "leak.trec")
    c = client_for(root)
    for url in ("/", "/run/alpha", "/run/alpha/topic/t1"):
        r = c.get(url)
        assert r.status_code == 200, url
        assert "OUTSIDE-QUESTION" not in r.text and "SECRETPMID" not in r.text, url
    page = c.get("/run/alpha/topic/t1").text
    assert "not a regular file" in page and "leak.trec" in page


def test_wrong_type_fields_appear_under_problems(tmp_path: Path, client_for) -> None:
    root = tmp_path / "runs"
    run = write_run(root / "w")

    def answers(rows: list[dict]) -> None:  # type: ignore[type-arg]
        rows[0]["sentences"][0]["pmids"] = 5
        rows[0]["sentences"][1]["text"] = ["not", "text"]
        rows[1]["sentences"] = "abc"

    def evidence(rows: list[dict]) -> None:  # type: ignore[type-arg]
        rows[0]["evidence"][0]["score"] = "high"
        rows[0]["evidence"][1]["start"] = [1]

    rewrite(run / "answers.jsonl", answers)
    rewrite(run / "evidence.jsonl", evidence)
    c = client_for(root)
    t1 = c.get("/run/w/topic/t1")
    assert t1.status_code == 200
    assert "Problems" in t1.text
    for needle in ("field &#39;sentences.0.pmids&#39; should be a list, got int 5",
                   "field &#39;sentences.1.text&#39; should be a string",
                   "field &#39;evidence.0.score&#39; should be a number",
                   "field &#39;evidence.1.start&#39; should be an integer"):
        assert needle in t1.text, needle
    t2 = c.get("/run/w/topic/t2")
    assert t2.status_code == 200 and "field &#39;sentences&#39; should be a list, got str" in t2.text


def test_head_answers_like_get_without_a_body(tmp_path: Path, client_for) -> None:
    root = tmp_path / "runs"
    write_run(root / "alpha")
    c = client_for(root)
    for url in ("/", "/run/alpha", "/run/alpha/topic/t1", "/run/nope", "/static/viewer.css"):
        get, head = c.get(url), c.head(url)
        assert head.status_code == get.status_code, url
        assert head.content == b"", url
        assert head.headers.get("content-type") == get.headers.get("content-type"), url
    assert c.post("/run/alpha").headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize("url", ["/", "/run/alpha"])
def test_head_over_real_http(tmp_path: Path, url: str) -> None:
    import http.client
    from urllib.parse import urlsplit

    root = tmp_path / "runs"
    write_run(root / "alpha")
    with serve_in_thread(root) as base:
        u = urlsplit(base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("HEAD", url)
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == b""
        conn.close()
