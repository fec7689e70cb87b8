"""Escaping of run content, path traversal, malformed runs, read-only HTTP surface."""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from viewer_runs import write_json_file, write_run

from medcite.viewer.app import create_app
from medcite.viewer.server import serve_in_thread

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
PAYLOAD = f" {SCRIPT}{IMG}"


@pytest.fixture
def hostile_runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(root / "evil", extra_text=PAYLOAD, question=f"Q{PAYLOAD}")
    write_run(root / "plain")
    cfg = json.loads((root / "evil" / "config.json").read_text())
    cfg["preset"] = f"p{PAYLOAD}"
    cfg["command"] = f"medcite{PAYLOAD}"
    write_json_file(root / "evil" / "config.json", cfg)
    write_json_file(root / "evil" / "metrics.json", {f"m{PAYLOAD}": 1.0})
    write_json_file(root / "evil" / "validation.json", {"ok": False, "errors": [f"topic t1: bad{PAYLOAD}"]})
    # a PMID that is itself a payload: shown as text, never turned into a link
    with open(root / "evil" / "answers.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"topic_id": "t3", "sentences": [{"text": "x", "pmids": [f"1{SCRIPT}"]}]}) + "\n")
    return root


def assert_escaped(html: str) -> None:
    assert SCRIPT not in html
    assert "<img src=x" not in html
    assert "onerror=\"alert" not in html


@pytest.mark.parametrize("url", [
    "/", "/run/evil", "/run/evil/topic/t1", "/run/evil/topic/t3",
    "/compare?runs=evil&runs=plain", "/compare?runs=evil&runs=plain&topic=t1",
])
def test_payloads_in_run_files_are_escaped(hostile_runs: Path, client_for, url: str) -> None:
    r = client_for(hostile_runs).get(url)
    assert r.status_code == 200
    assert_escaped(r.text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


def test_payload_doi_stays_inside_the_doi_link(hostile_runs: Path, client_for) -> None:
    html = client_for(hostile_runs).get("/run/evil/topic/t1").text
    assert 'href="https://doi.org/10.1/x%20%3Cscript%3Ealert%281%29%3C/script%3E%3Cimg' in html


def test_payload_pmid_is_not_linked(hostile_runs: Path, client_for) -> None:
    html = client_for(hostile_runs).get("/run/evil/topic/t3").text
    assert "pubmed.ncbi.nlm.nih.gov/1" not in html
    assert 'data-pmid="1&lt;script&gt;alert(1)&lt;/script&gt;"' in html


def test_payload_in_topic_id_url_is_escaped(hostile_runs: Path, client_for) -> None:
    r = client_for(hostile_runs).get("/run/evil/topic/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert r.status_code == 404
    assert_escaped(r.text)


def test_every_page_has_a_strict_content_security_policy(hostile_runs: Path, client_for) -> None:
    r = client_for(hostile_runs).get("/run/evil/topic/t1")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"


def test_only_get(hostile_runs: Path, client_for) -> None:
    c = client_for(hostile_runs)
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert c.request(method, "/run/evil").status_code == 405
    assert c.get("/docs").status_code == 404 and c.get("/openapi.json").status_code == 404


# ---------- path traversal ----------

@pytest.fixture
def fenced(tmp_path: Path) -> Path:
    """RUNS_DIR with a secret and a run-looking folder beside it, and a symlink pointing out."""
    root = tmp_path / "runs"
    write_run(root / "alpha")
    write_run(tmp_path / "outside")
    (tmp_path / "secret.txt").write_text("TOPSECRET", encoding="utf-8")
    (tmp_path / "outside" / "topics.jsonl").write_text('{"id": "t1", "question": "OUTSIDE-RUN"}\n')
    os.symlink(tmp_path / "outside", root / "escape")
    return root


TRAVERSALS = [
    "/run/..", "/run/../outside", "/run/..%2Foutside", "/run/%2e%2e%2Foutside", "/run/%2e%2e/outside",
    "/run/%252e%252e%252Foutside", "/run/..%252Foutside", "/run/%2Fetc%2Fpasswd", "/run//etc/passwd",
    "/run/escape", "/run/escape/topic/t1", "/run/alpha/../../outside", "/run/alpha/topic/..%2F..%2Fsecret.txt",
    "/run/alpha/topic/../../secret.txt", "/run/%2e%2e/topic/t1", "/run/..%5Coutside",
    "/compare?runs=..&runs=alpha", "/compare?runs=../outside&runs=alpha", "/compare?runs=%2e%2e%2Foutside&runs=alpha",
    "/compare?runs=/etc&runs=alpha", "/compare?runs=escape&runs=alpha&topic=t1",
    "/static/../app.py", "/static/..%2Fapp.py", "/static/%2e%2e/loader.py", "/static/%2e%2e%2f%2e%2e%2fsecret.txt",
    "/static//etc/passwd",
]


def raw_get(base: str, path: str) -> tuple[int, str]:
    """Send the path byte for byte (http.client does not normalise '..' the way browsers do)."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, body


def test_traversal_never_leaves_runs_dir_over_real_http(fenced: Path) -> None:
    with serve_in_thread(fenced) as base:
        assert raw_get(base, "/run/alpha")[0] == 200  # the fence lets real runs through
        for path in TRAVERSALS:
            status, body = raw_get(base, path)
            assert status in (400, 404), (path, status)
            assert "TOPSECRET" not in body and "OUTSIDE-RUN" not in body, path
            assert "def create_app" not in body, path


def test_traversal_through_the_test_client(fenced: Path, client_for) -> None:
    """httpx, like a browser, removes '..' segments first: '/run/..' becomes '/', a page inside."""
    c = client_for(fenced)
    for path in TRAVERSALS:
        r = c.get(path)
        assert r.status_code in (400, 404) or r.url.path in ("/", "/run/alpha"), (path, r.status_code)
        assert "TOPSECRET" not in r.text and "OUTSIDE-RUN" not in r.text
    index = c.get("/").text
    assert 'href="/run/alpha"' in index and "escape" not in index


# ---------- malformed runs ----------

@pytest.fixture
def broken_runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(root / "good")
    bad = write_run(root / "bad")
    (bad / "config.json").write_text("{not json", encoding="utf-8")
    with open(bad / "answers.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"topic_id": "t9", "sentences": [{"text": "torn\n')  # a torn line
        fh.write("[1, 2, 3]\n")  # not an object
        fh.write(json.dumps({"topic_id": "t5", "sentences": "oops", "dropped": {"x": 1}, "words": "many"}) + "\n")
        fh.write(json.dumps({"topic_id": "t6", "sentences": [{"text": 7, "pmids": [123, None],
                                                               "evidence": ["a"], "stances": []}]}) + "\n")
    with open(bad / "evidence.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"topic_id": "t6", "evidence": [{"index": "x", "pmid": 5, "start": "a"}, 3]}) + "\n")
    with open(bad / "articles.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"topic_id": "t6", "pmid": "123", "title": None, "abstract": "abc",
                             "sections": [["A", 5, 2], "junk", ["B", 0, 99]], "year": {"y": 1}}) + "\n")
    (bad / "trace.jsonl").write_bytes(b"\xff\xfe garbage\n")
    (bad / "rerank.trec").write_text("t1 Q0 111 notarank 1.0 tag\n")
    (bad / "metrics.json").write_text("[1, 2]")
    (bad / "validation.json").write_text('{"ok": "maybe"}')
    os.mkdir(bad / "queries.jsonl.d")
    (bad / "timings.jsonl").unlink()
    os.mkdir(bad / "timings.jsonl")  # a directory where a file should be
    return root


@pytest.mark.parametrize("url", ["/", "/run/bad", "/run/bad/topic/t1", "/run/bad/topic/t5", "/run/bad/topic/t6",
                                 "/compare?runs=bad&runs=good", "/compare?runs=bad&runs=good&topic=t6"])
def test_malformed_run_files_show_problems_not_crashes(broken_runs: Path, client_for, url: str) -> None:
    c = client_for(broken_runs)
    r = c.get(url)
    assert r.status_code == 200, url
    if url != "/":
        assert "Problems reading this run" in r.text
    assert c.get("/run/good/topic/t1").status_code == 200  # the app keeps serving


def test_malformed_lines_are_reported_with_their_position(broken_runs: Path, client_for) -> None:
    html = client_for(broken_runs).get("/run/bad").text
    assert "config.json: not valid JSON" in html
    assert "answers.jsonl:3: not valid JSON" in html  # lines 1-2 are the good topics
    assert "answers.jsonl:4: line is not an object with a topic_id" in html
    assert "trace.jsonl" not in html or "trace.jsonl:1" in html  # read only on topic pages
    assert "validation.json" in html and "metrics.json: expected a JSON object" in html
    topic = client_for(broken_runs).get("/run/bad/topic/t1").text
    assert "rerank.trec:1: not a TREC run line" in topic
    assert "trace.jsonl:1: not valid JSON" in topic
    assert "timings.jsonl: cannot read" in topic


def test_trusted_hosts_refuse_other_host_headers(runs_dir: Path) -> None:
    from fastapi.testclient import TestClient

    client = TestClient(create_app(runs_dir, allowed_hosts=["127.0.0.1", "localhost"]))
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": "127.0.0.1:8765"}).status_code == 200


def test_an_unexpected_failure_becomes_an_error_page_and_the_app_keeps_serving(
        runs_dir: Path, client_for, monkeypatch: pytest.MonkeyPatch) -> None:
    import medcite.viewer.app as app_module

    def broken(run: object, topic_id: str) -> None:
        raise KeyError("boom")

    c = client_for(runs_dir)
    monkeypatch.setattr(app_module, "build_topic", broken)
    r = c.get("/run/alpha/topic/t1")
    assert r.status_code == 500
    assert "could not be shown in run alpha" in r.text and "KeyError" in r.text
    assert c.get("/run/alpha").status_code == 200
