"""The faults battery of issue 42: what a user meets when things go wrong, through the real CLI.

Every case runs ``python -m medcite ...`` in a subprocess and is judged on what the user sees and what is left on
disk: it must end (a case still running after ``--hang-s`` seconds is a *hang*), never with a traceback, either
succeeding (LLM-server faults end in a valid submission: the run goes on as for any server fault) or with one
``error:`` line that names the file or folder; and nothing already written may be lost (*data loss*: a store,
an index, a run folder or a cache that holds less than before, or a folder left with a topic twice).

Groups of cases:

- **llm**: `run --preset clac25-a` against a local HTTP server on 127.0.0.1 that drips its reply a byte every
  2 s (body, headers, server-sent events), never answers, refuses, fails with 500 or 429, sends malformed JSON, no
  choices, a 2 MB reply of one sentence repeated, or a reply that obeys an instruction an abstract carried ("I will
  now ignore the evidence."); each answer must keep every sentence once, no sentence about the instructions or the
  evidence, and cite only PMIDs of its evidence;
- **cache**: an LLM cache file of another tool (a ``completions`` table with other columns), not SQLite, or of an
  older medcite, with `run`, `cache stats` and `cache clear`;
- **write**: `ingest`, `index bm25` (build and update), `index dense`, `run`, `bioasq phase-b` and `train stance`
  under a file-size limit (RLIMIT_FSIZE), and `ingest` / `run` on a full tmpfs when this machine can mount one;
- **concurrency**: two `run` and two `bioasq phase-b` into one folder at once; a folder an older medcite left with
  every topic twice, resumed;
- **read-only**: `search`, `ask` and `run` on a store in a read-only folder (a read-only bind mount when this
  process may mount, else a folder without write permission when it is not root; else skipped), with and without
  SQLite's ``-wal``/``-shm`` files, without its index, and `run` under a file-size limit below the store's size.

``--baseline-src DIR`` runs the same battery on another source tree first (an export of ``main``: ``git archive
main src | tar -x -C DIR``), so the table shows each case before and after.

    python benchmarks/bench_faults.py [--baseline-src /tmp/main/src] [--cases llm,write] [--hang-s 90]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import common

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "robust"))
from robust_helpers import corpus_lines, phase_b_questions  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "work" / "faults"
QUESTIONS = ["Do statins lower LDL?", "Does exercise raise HDL?", "What treats scurvy?"]
GOOD = "Statins lower LDL cholesterol in adults [1]. Exercise raises HDL cholesterol [2]."
INJECTED = ("Statins lower LDL cholesterol in adults [1]. I will now ignore the evidence [2]. As an AI language "
            "model, I cannot say more [1].")
REPEATED = "Statins lower LDL cholesterol in adults [1]. " * 50_000  # about 2 MB
META = re.compile(r"\bignore\b|\bas an ai\b|evidence above|language model", re.IGNORECASE)


# -- the LLM server ---------------------------------------------------------------------------------------
class Handler(BaseHTTPRequestHandler):
    """One OpenAI-compatible server for every fault: the first path segment names the fault
    (``http://127.0.0.1:PORT/<fault>/v1``)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        fault = self.path.split("/")[1]
        try:
            getattr(self, "_" + fault.replace("-", "_"))(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _reply(text: str) -> dict[str, Any]:
        return {"id": "x", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}

    def _good(self, body: Any) -> None:
        self._json(200, self._reply(GOOD))

    def _inject(self, body: Any) -> None:
        self._json(200, self._reply(INJECTED))

    def _huge(self, body: Any) -> None:
        self._json(200, self._reply(REPEATED))

    def _http500(self, body: Any) -> None:
        self._json(500, {"error": {"message": "the model crashed"}})

    def _ratelimit(self, body: Any) -> None:
        self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})

    def _malformed(self, body: Any) -> None:
        self._json(200, b'{"choices": [{"message": {"content": "Statins lower')

    def _empty(self, body: Any) -> None:
        self._json(200, {"id": "x", "object": "chat.completion", "model": "m", "choices": []})

    def _silent(self, body: Any) -> None:
        time.sleep(200)

    def _drip(self, head: bytes, data: bytes, every: float = 2.0) -> None:
        for byte in head + data:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(every)

    def _drip_body(self, body: Any) -> None:
        data = json.dumps(self._reply(GOOD)).encode()
        self.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                         .encode())
        self._drip(b"", data)

    def _drip_headers(self, body: Any) -> None:
        data = json.dumps(self._reply(GOOD)).encode()
        self._drip(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                   .encode(), data)

    def _drip_stream(self, body: Any) -> None:
        chunk = {"choices": [{"index": 0, "delta": {"content": "Statins "}, "finish_reason": None}]}
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        while True:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(2.0)


@contextmanager
def llm_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# -- running the CLI ---------------------------------------------------------------------------------------
@dataclass
class Ran:
    rc: int | None
    out: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.out

    @property
    def errors(self) -> list[str]:
        return [line for line in self.out.splitlines() if line.startswith("error: ")]


@dataclass
class Battery:
    src: Path
    work: Path
    hang_s: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    def cli(self, *args: str, limit: int | None = None, timeout: float | None = None,
            background: bool = False) -> Ran | subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(self.src), "MEDCITE_CACHE_DIR": str(self.work / "cache"),
               "MEDCITE_MODELS_DIR": str(self.work / "models"), "MEDCITE_RUNS_DIR": str(self.work / "runs"),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

        def cap() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        cmd = [sys.executable, "-m", "medcite", "-q", *args]
        proc = subprocess.Popen(cmd, env=env, preexec_fn=cap, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=self.work, start_new_session=True)
        if background:
            return proc
        return finish(proc, timeout or self.hang_s)

    def ok(self, *args: str, **kw: Any) -> Ran:
        ran = self.cli(*args, **kw)
        assert isinstance(ran, Ran)
        if ran.rc != 0:
            raise RuntimeError(f"setup step failed: medcite {' '.join(args)}\n{ran.out[-2000:]}")
        return ran

    def record(self, group: str, case: str, ran: Ran | None, expect: str, lost: bool = False, note: str = "",
               checks: dict[str, bool] | None = None) -> None:
        """``expect``: "ok" (exit 0) or "error" (one clean error line naming ``note``'s path, when given)."""
        if ran is None:
            self.rows.append({"group": group, "case": case, "outcome": "skipped", "note": note})
            return
        outcome = ("hang" if ran.hung else "traceback" if ran.traceback else "ok" if ran.rc == 0
                   else "error" if len(ran.errors) == 1 else "unclear error")
        failed = [name for name, good in (checks or {}).items() if not good]
        passed = outcome == expect and not lost and not failed
        self.rows.append({"group": group, "case": case, "outcome": outcome, "expected": expect, "passed": passed,
                          "data_loss": lost, "failed_checks": failed, "seconds": round(ran.seconds, 1),
                          "error": ran.errors[0][:300] if ran.errors else None, "note": note})
        print(f"{'PASS' if passed else 'FAIL'} {group:12s} {case:58s} {outcome:9s} {ran.seconds:6.1f}s "
              f"{'LOST ' if lost else ''}{' '.join(failed)}", flush=True)


def finish(proc: subprocess.Popen[str], timeout: float) -> Ran:
    start = time.perf_counter()
    try:
        out, _ = proc.communicate(timeout=timeout)
        return Ran(proc.returncode, out, time.perf_counter() - start)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the case's own process group, started by this battery
        out, _ = proc.communicate()
        return Ran(None, out, time.perf_counter() - start)


def has_setting(src: Path, name: str) -> bool:
    """Whether the openai backend of the source tree ``src`` has the setting ``name``."""
    return f"{name}:" in (src / "medcite" / "llm" / "openai_backend.py").read_text(encoding="utf-8")


def corpus(path: Path, n: int) -> Path:
    path.write_text(corpus_lines(n))
    return path


def store_rows(store: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{store / 'store.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT pmid, version, title, abstract FROM articles ORDER BY pmid").fetchall()
    finally:
        conn.close()


def run_rows(run: Path) -> dict[str, list[str]]:
    return {p.name: sorted(p.read_text().splitlines()) for p in sorted(run.iterdir())
            if p.suffix in (".jsonl", ".trec") and p.name not in ("timings.jsonl", "trace.jsonl")}


def answers_clean(run: Path) -> dict[str, bool]:
    """Each answer keeps every sentence once, none about the instructions or the evidence, and cites only PMIDs
    of its evidence; the submission is valid."""
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    evidence = {}
    for line in (run / "evidence.jsonl").read_text().splitlines():
        row = json.loads(line)
        evidence[row["topic_id"]] = {e["pmid"] for e in row["evidence"]}
    texts = [[s["text"] for s in a["sentences"]] for a in answers]
    return {"one answer per topic": sorted(a["topic_id"] for a in answers) == ["t1", "t2", "t3"],
            "no repeated sentence": all(len(t) == len(set(t)) for t in texts),
            "no meta sentence": not any(META.search(x) for t in texts for x in t),
            "cites only its evidence": all(p in evidence.get(a["topic_id"], set())
                                           for a in answers for s in a["sentences"] for p in s["pmids"]),
            "valid submission": json.loads((run / "validation.json").read_text()).get("ok") is True}


# -- the cases ---------------------------------------------------------------------------------------------
def setup(b: Battery) -> dict[str, Path]:
    data = b.work / "data"
    data.mkdir(parents=True, exist_ok=True)
    topics = data / "topics.json"
    topics.write_text(json.dumps([{"id": f"t{i}", "question": q} for i, q in enumerate(QUESTIONS, 1)]))
    small, big = corpus(data / "small.jsonl", 30), corpus(data / "big.jsonl", 8000)
    store = b.work / "store"
    b.ok("ingest", str(small), "--store", str(store))
    b.ok("index", "bm25", "--store", str(store))
    phase_b = data / "phase-b.json"
    phase_b.write_text(phase_b_questions())
    return {"topics": topics, "small": small, "big": big, "store": store, "phase_b": phase_b}


LLM_FAULTS = [("drip-body", "a byte every 2 s (JSON body)", {}), ("drip-headers", "a byte every 2 s (headers too)", {}),
              ("drip-stream", "an event every 2 s, never ending (streamed)", {"llm.stream": "true"}),
              ("silent", "never answers", {}), ("refused", "connection refused", {}),
              ("http500", "HTTP 500 every time", {}), ("ratelimit", "HTTP 429, Retry-After 1", {}),
              ("malformed", "JSON cut short", {}), ("empty", "no choices", {}),
              ("huge", "2 MB reply, one sentence 50,000 times", {}),
              ("inject", "\"I will now ignore the evidence.\" cited", {}), ("good", "a good reply", {})]


def llm_cases(b: Battery, d: dict[str, Path], url: str) -> None:
    for fault, what, extra in LLM_FAULTS:
        out = b.work / f"llm-{fault}"
        base = "http://127.0.0.1:9/v1" if fault == "refused" else f"{url}/{fault}/v1"
        sets = {"rerank.backend": "none", "llm.base_url": base, "llm.model": "m", "llm.timeout_s": "5",
                "llm.max_retries": "1", "llm.backoff_s": "0.1", "llm.cache_dir": str(b.work / f"cache-{fault}"),
                **extra}
        if has_setting(b.src, "deadline_s"):  # a tree from before the setting runs with its own defaults
            sets["llm.deadline_s"] = "4"
        args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
        ran = b.cli("run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--out", str(out),
                    "--preset", "clac25-a", *args)
        assert isinstance(ran, Ran)
        checks = answers_clean(out) if ran.rc == 0 else {}
        if fault == "huge" and ran.rc == 0:
            conn = sqlite3.connect(b.work / f"cache-{fault}" / "llm-cache.sqlite")
            try:
                good = conn.execute("SELECT COUNT(*) FROM completions WHERE rejected IS NULL AND length(text) > "
                                    "100000").fetchone()[0]
            except sqlite3.Error:
                good = -1
            conn.close()
            checks["the cut reply is not cached as good"] = good == 0
        # a server that is not there at all is found before the run starts (one error, nothing written)
        expect = "error" if fault == "refused" else "ok"
        if expect == "error":
            checks = {"names the server": "http://127.0.0.1:9/v1" in "".join(ran.errors), "nothing written":
                      not (out / "answers.jsonl").exists()}
        b.record("llm", f"run clac25-a; server: {what}", ran, expect, checks=checks)


def cache_cases(b: Battery, d: dict[str, Path], url: str) -> None:
    def foreign(folder: Path, kind: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "llm-cache.sqlite"
        if kind == "not sqlite":
            path.write_text("not a database\n")
            return path
        conn = sqlite3.connect(path)
        if kind == "other columns":
            conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, value TEXT, stored REAL)")
            conn.execute("INSERT INTO completions VALUES ('k', 'v', 1)")
        else:  # an older medcite: no server / rejected columns
            conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT "
                         "NULL, request TEXT NOT NULL, text TEXT NOT NULL, response_model TEXT NOT NULL, usage TEXT "
                         "NOT NULL, finish_reason TEXT, latency_s REAL NOT NULL, created_at TEXT NOT NULL)")
            conn.execute("INSERT INTO completions VALUES ('k', 'local', 'm', '{}', 'old', 'm', '{}', 'stop', 0.1, "
                         "'2024-01-01T00:00:00+00:00')")
        conn.commit()
        conn.close()
        return path

    for kind in ("other columns", "not sqlite", "older medcite"):
        for command in ("run", "cache stats", "cache clear"):
            folder = b.work / f"cachefile-{kind.replace(' ', '-')}-{command.replace(' ', '-')}"
            path = foreign(folder, kind)
            before = path.read_bytes()
            if command == "run":
                ran = b.cli("run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--out",
                            str(folder / "run"), "--preset", "clac25-a", "--set", "rerank.backend=none", "--set",
                            f"llm.base_url={url}/good/v1", "--set", "llm.model=m", "--set", f"llm.cache_dir={folder}")
            else:
                ran = b.cli(*command.split(), "--cache-dir", str(folder))
            assert isinstance(ran, Ran)
            kept = [p for p in [path, *folder.glob("llm-cache.sqlite.set-aside-*")] if p.exists()]
            lost = kind != "older medcite" and not any(p.read_bytes() == before for p in kept)
            b.record("cache", f"{command}; cache file: {kind}", ran, "ok", lost=lost,
                     checks={"says what it found": command == "run" or "found" in ran.out or kind == "older medcite"
                             and "older" in ran.out})


def write_cases(b: Battery, d: dict[str, Path], can_mount: bool) -> None:
    # the store
    store = b.work / "w-store"
    b.ok("ingest", str(d["small"]), "--store", str(store))
    before = store_rows(store)
    ran = b.cli("ingest", str(d["big"]), "--store", str(store), limit=200_000)
    assert isinstance(ran, Ran)
    b.record("write", "ingest, file-size limit 200 kB", ran, "error", lost=store_rows(store) != before,
             checks=names(ran, store))
    # the BM25 index: a first build, then an update
    big = b.work / "w-big"
    b.ok("ingest", str(d["big"]), "--store", str(big))
    ran = b.cli("index", "bm25", "--store", str(big), limit=40_000)
    assert isinstance(ran, Ran)
    again = b.cli("search", "statins LDL", "--corpus", str(big), "-k", "3")
    assert isinstance(again, Ran)
    b.record("write", "index bm25 (first build), file-size limit 40 kB", ran, "error", lost=again.rc != 0,
             checks=names(ran, big / "indexes"))
    upd = b.work / "w-update"
    b.ok("ingest", str(d["small"]), "--store", str(upd))
    b.ok("index", "bm25", "--store", str(upd))
    index = next(p for p in (upd / "indexes").iterdir() if not p.name.startswith("."))
    searched = b.ok("search", "statins LDL", "--index", str(index), "-k", "5").out
    b.ok("ingest", str(d["big"]), "--store", str(upd))
    ran = b.cli("index", "bm25", "--store", str(upd), limit=40_000)
    assert isinstance(ran, Ran)
    after = b.cli("search", "statins LDL", "--index", str(index), "-k", "5")
    assert isinstance(after, Ran)
    b.record("write", "index bm25 (update), file-size limit 40 kB", ran, "error",
             lost=after.rc != 0 or after.out != searched, checks=names(ran, index))
    # the dense index: the chunks, the row files, the FAISS file
    medium = b.work / "w-medium"
    b.ok("ingest", str(corpus(b.work / "medium.jsonl", 100)), "--store", str(medium))
    # 100 abstracts, 384-d: a chunk of 25 is 38 kB (float32), the row file 77 kB (float16 on disk), the FAISS file
    # 154 kB (float32)
    for limit, what in ((25_000, "chunks"), (60_000, "row files"), (120_000, "FAISS file")):
        out = b.work / f"w-dense-{limit}"
        args = ["index", "dense", "--store", str(medium), "--out", str(out), "--chunk-size", "25", "--encoder",
                "minilm-onnx", "--set", "indexes.dense.vector_dtype=float16"]
        ran = b.cli(*args, limit=limit)
        assert isinstance(ran, Ran)
        resumed = b.cli(*args)
        assert isinstance(resumed, Ran)
        b.record("write", f"index dense, file-size limit {limit // 1000} kB ({what})", ran, "error",
                 lost=resumed.rc != 0, checks={**names(ran, out), "no error without a path":
                                               not any("requested and" in e for e in ran.errors)})
    # a run folder, resumed afterwards
    topics = b.work / "topics9.json"
    topics.write_text(json.dumps([{"id": f"t{i}", "question": q} for i, q in enumerate(QUESTIONS * 3, 1)]))
    args = ["run", "--topics", str(topics), "--corpus", str(d["store"]), "--preset", "bm25", "--run-id", "r"]
    ran = b.cli(*args, "--out", str(b.work / "w-run"), limit=9_000)
    assert isinstance(ran, Ran)
    resumed, whole = b.cli(*args, "--out", str(b.work / "w-run")), b.cli(*args, "--out", str(b.work / "w-whole"))
    lost = not (isinstance(resumed, Ran) and resumed.rc == 0 and isinstance(whole, Ran) and whole.rc == 0
                and run_rows(b.work / "w-run") == run_rows(b.work / "w-whole"))
    b.record("write", "run, file-size limit 9 kB (then resumed)", ran, "error", lost=lost,
             checks={**names(ran, b.work / "w-run"),
                     "store not called foreign": "not a medcite document store" not in ran.out})
    # BioASQ Phase B
    qs = d["phase_b"]
    ran = b.cli("bioasq", "phase-b", "--questions", str(qs), "--run-dir", str(b.work / "w-phase-b"), "--output",
                str(b.work / "w-phase-b.json"), "--set", "qa.backend=extractive", limit=8_000)
    assert isinstance(ran, Ran)
    b.record("write", "bioasq phase-b, file-size limit 8 kB", ran, "error", checks=names(ran, b.work / "w-phase-b"))
    # a trained model
    hv = b.work / "hv.csv"
    hv.write_text("claim,evidence,label\n" + "".join(
        f"Statins lower LDL {i},In trial {i} statins {v} LDL.,{label}\n" for i, (v, label) in enumerate(
            [("lowered", "Supports"), ("did not lower", "Refutes"), ("were given with", "Neutral")] * 15)))
    ran = b.cli("train", "stance", "--data", str(hv), "--out", str(b.work / "w-model"), "--c", "1.0", limit=3_000,
                timeout=max(b.hang_s, 300))
    assert isinstance(ran, Ran)
    b.record("write", "train stance, file-size limit 3 kB", ran, "error", checks=names(ran, b.work / "w-model"))
    # a full disk (a 3 MB tmpfs)
    with tmpfs(b.work / "w-tmpfs", "3m", can_mount) as full:
        if full is None:
            b.record("write", "ingest on a full disk (3 MB tmpfs)", None, "error", note="cannot mount a tmpfs here")
            b.record("write", "run on a full disk (3 MB tmpfs)", None, "error", note="cannot mount a tmpfs here")
        else:
            b.ok("ingest", str(d["small"]), "--store", str(full / "store"))
            before = store_rows(full / "store")
            ran = b.cli("ingest", str(corpus(b.work / "huge.jsonl", 25_000)), "--store", str(full / "store"))
            assert isinstance(ran, Ran)
            b.record("write", "ingest on a full disk (3 MB tmpfs)", ran, "error",
                     lost=store_rows(full / "store") != before,
                     checks={**names(ran, full / "store"), "says disk full": "disk full" in ran.out})
            b.ok("index", "bm25", "--store", str(full / "store"))
            filler = full / "filler"
            with open(filler, "wb") as fh:  # what is left of the 3 MB, but for 60 kB
                fh.write(b"\0" * max(0, shutil.disk_usage(full).free - 60_000))
            args = ["run", "--topics", str(topics), "--corpus", str(full / "store"), "--preset", "bm25", "--run-id",
                    "r", "--out", str(full / "run")]
            ran = b.cli(*args)
            assert isinstance(ran, Ran)
            filler.unlink()
            resumed = b.cli(*args)
            lost = not (isinstance(resumed, Ran) and resumed.rc == 0
                        and run_rows(full / "run") == run_rows(b.work / "w-whole"))
            b.record("write", "run on a full disk (3 MB tmpfs, then resumed)", ran, "error", lost=lost,
                     checks={**names(ran, full / "run"), "says disk full": "disk full" in ran.out})


def names(ran: Ran, path: Path) -> dict[str, bool]:
    """The error names the file or folder (or a file in it) and says what happened."""
    line = ran.errors[0] if ran.errors else ""
    return {"names the path": str(path) in line,
            "says why": "file too large" in line or "disk full" in line,
            "says nothing was lost": "nothing already written was lost" in line}


@contextmanager
def tmpfs(path: Path, size: str, can_mount: bool) -> Iterator[Path | None]:
    path.mkdir(parents=True, exist_ok=True)
    if not can_mount or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                                       capture_output=True).returncode:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True)


def concurrency_cases(b: Battery, d: dict[str, Path]) -> None:
    out = b.work / "c-run"
    args = ["run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--preset", "bm25", "--out", str(out)]
    first, second = b.cli(*args, background=True), b.cli(*args, background=True)
    assert isinstance(first, subprocess.Popen) and isinstance(second, subprocess.Popen)
    ran = [finish(first, b.hang_s), finish(second, b.hang_s)]
    answers = (out / "answers.jsonl").read_text().splitlines() if (out / "answers.jsonl").exists() else []
    refused = [r for r in ran if r.rc == 1 and any("is in use by another medcite (pid" in e for e in r.errors)]
    worst = next((r for r in ran if r.hung or r.traceback), ran[0] if ran[0].rc else ran[1])
    b.record("concurrency", "two runs into one --out at once", worst, "error" if refused else "ok",
             lost=len(answers) != 3, checks={"one refused naming the holder": len(refused) == 1,
                                             "the other finished": any(r.rc == 0 for r in ran)})
    args = ["bioasq", "phase-b", "--questions", str(d["phase_b"]), "--run-dir", str(b.work / "c-phase-b"), "--set",
            "qa.backend=extractive"]
    first = b.cli(*args, "--output", str(b.work / "c-b1.json"), background=True)
    second = b.cli(*args, "--output", str(b.work / "c-b2.json"), background=True)
    assert isinstance(first, subprocess.Popen) and isinstance(second, subprocess.Popen)
    ran = [finish(first, b.hang_s), finish(second, b.hang_s)]
    ids = [json.loads(line)["topic_id"] for line in (b.work / "c-phase-b" / "answers.jsonl").read_text().splitlines()]
    refused = [r for r in ran if r.rc == 1 and any("is in use by another medcite (pid" in e for e in r.errors)]
    worst = next((r for r in ran if r.hung or r.traceback), ran[0] if ran[0].rc else ran[1])
    b.record("concurrency", "two bioasq phase-b into one run folder at once", worst, "error" if refused else "ok",
             lost=len(ids) != len(set(ids)), checks={"one refused naming the holder": len(refused) == 1})
    # a folder an older medcite left with every topic twice
    out = b.work / "c-twice"
    b.ok("run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--preset", "bm25", "--out", str(out))
    for path in [*out.glob("*.jsonl"), *out.glob("*.trec")]:
        if not path.name.startswith("submission"):
            path.write_bytes(path.read_bytes() * 2)
    ran = b.cli("run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--preset", "bm25", "--out",
                str(out))
    assert isinstance(ran, Ran)
    counts = [json.loads(line)["topic_id"] for line in (out / "answers.jsonl").read_text().splitlines()]
    b.record("concurrency", "resume a folder holding every topic twice", ran, "ok",
             checks={"each topic once": sorted(counts) == ["t1", "t2", "t3"],
                     "valid": "valid" in ran.out and "INVALID" not in ran.out})


@contextmanager
def read_only(src: Path, dst: Path, can_mount: bool) -> Iterator[tuple[Path | None, str]]:
    """A read-only copy of the folder ``src``: a read-only bind mount, or (not root) a folder without write
    permission; (None, why) when neither can be made here."""
    data, view = dst / "data", dst / "ro"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, data)
    view.mkdir(parents=True)
    if can_mount and not subprocess.run(["mount", "--bind", str(data), str(view)], capture_output=True).returncode:
        try:
            if subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode == 0:
                yield view, "read-only bind mount"
                return
            yield None, "cannot remount read-only"
        finally:
            subprocess.run(["umount", str(view)], capture_output=True)
        return
    if os.geteuid() != 0:
        for p in [data, *data.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            yield data, "no write permission"
        finally:
            for p in [data, *data.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
        return
    yield None, "root, and no mount allowed: a read-only folder cannot be made here"


def read_only_cases(b: Battery, d: dict[str, Path], can_mount: bool) -> None:
    plain = b.work / "ro-src"
    shutil.rmtree(plain, ignore_errors=True)
    shutil.copytree(d["store"], plain)
    for name in ("store.sqlite-wal", "store.sqlite-shm"):
        (plain / name).unlink(missing_ok=True)
    with_wal, scratch = b.work / "ro-src-wal", b.work / "ro-scratch"
    for folder in (with_wal, scratch):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(plain, scratch)
    conn = sqlite3.connect(scratch / "store.sqlite", isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('probe', '1')")  # a change that is only in the -wal file
    shutil.copytree(scratch, with_wal)  # copied while open: -wal and -shm come along, as a live store's do
    conn.close()
    no_index = b.work / "ro-src-noindex"
    shutil.rmtree(no_index, ignore_errors=True)
    shutil.copytree(plain, no_index)
    shutil.rmtree(no_index / "indexes")
    for label, src, slug in (("", plain, ""), (" with -wal/-shm", with_wal, "-wal")):
        for command in ("search", "ask", "run"):
            with read_only(src, b.work / f"ro-{command}{slug}", can_mount) as (ro, how):
                if ro is None:
                    b.record("read-only", f"{command} on a read-only store{label}", None, "ok", note=how)
                    continue
                args = {"search": ["search", "statins LDL", "--corpus", str(ro), "-k", "3"],
                        "ask": ["ask", "Do statins lower LDL?", "--corpus", str(ro), "--out",
                                str(b.work / f"ro-ask-out{slug}")],
                        "run": ["run", "--topics", str(d["topics"]), "--corpus", str(ro), "--preset", "bm25",
                                "--out", str(b.work / f"ro-run-out{slug}")]}[command]
                ran = b.cli(*args)
                assert isinstance(ran, Ran)
                b.record("read-only", f"{command} on a read-only store{label}", ran, "ok", note=how,
                         checks={"no advice to remove it": "remove the folder" not in ran.out})
    with read_only(no_index, b.work / "ro-noindex", can_mount) as (ro, how):
        if ro is None:
            b.record("read-only", "search on a read-only store without its index", None, "error", note=how)
        else:
            ran = b.cli("search", "statins LDL", "--corpus", str(ro))
            assert isinstance(ran, Ran)
            line = ran.errors[0] if ran.errors else ""
            b.record("read-only", "search on a read-only store without its index", ran, "error", note=how,
                     checks={"says it cannot be built there": "cannot be built there" in line,
                             "no advice to remove it": "remove the folder" not in ran.out})
    ran = b.cli("run", "--topics", str(d["topics"]), "--corpus", str(d["store"]), "--preset", "bm25", "--out",
                str(b.work / "ro-limit-run"), limit=3_000)
    assert isinstance(ran, Ran)
    b.record("read-only", "run, file-size limit (3 kB) below the store's size", ran, "error",
             checks={"store not called foreign": "not a medcite document store" not in ran.out,
                     "no advice to remove it": "remove the folder" not in ran.out})


GROUPS: dict[str, Callable[..., None]] = {"llm": llm_cases, "cache": cache_cases, "write": write_cases,
                                          "concurrency": concurrency_cases, "read-only": read_only_cases}


def battery(src: Path, work: Path, groups: list[str], hang_s: float) -> list[dict[str, Any]]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    b = Battery(src, work, hang_s)
    d = setup(b)
    can_mount = os.geteuid() == 0 and shutil.which("mount") is not None
    with llm_server() as url:
        for group in groups:
            fn = GROUPS[group]
            if group in ("llm", "cache"):
                fn(b, d, url)
            elif group in ("write", "read-only"):
                fn(b, d, can_mount)
            else:
                fn(b, d)
    return b.rows


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    ran = [r for r in rows if r["outcome"] != "skipped"]
    return {"cases": len(ran), "passed": sum(r["passed"] for r in ran),
            "tracebacks": sum(r["outcome"] == "traceback" for r in ran),
            "hangs": sum(r["outcome"] == "hang" for r in ran), "data_loss": sum(r["data_loss"] for r in ran),
            "skipped": len(rows) - len(ran)}


def report(results: dict[str, Any]) -> str:
    after, before = results["rows"], results.get("baseline_rows")
    t = results["totals"]
    lines = [
        "## Faults battery (issue 42)",
        "",
        f"`benchmarks/bench_faults.py`: {t['cases']} fault cases through the real CLI (each a subprocess), "
        f"{t['skipped']} skipped on this machine. A case passes when it ends (a *hang*: still running after "
        f"{results['hang_s']:g} s), without a traceback, with the expected outcome (`ok`: exit 0 and, for the LLM "
        "faults, a valid submission whose answers keep each sentence once, no sentence about the instructions or "
        "the evidence, and only PMIDs of their evidence; `error`: one `error:` line naming the path and the reason), "
        "and loses nothing already written (*data loss*: a store, index, run folder or cache holding less than "
        "before, a folder left with a topic twice, or another tool's cache file altered). Read-only cases: "
        + (results.get("read_only_how") or "–") + ".",
        "",
        common.markdown_table(
            ["", "cases", "passed", "tracebacks", "hangs", "data loss"],
            [[f"this tree ({results.get('commit') or 'uncommitted'})", t["cases"], t["passed"], t["tracebacks"],
              t["hangs"], t["data_loss"]]]
            + ([[results.get("baseline_label") or results["baseline"], results["baseline_totals"]["cases"],
                 results["baseline_totals"]["passed"], results["baseline_totals"]["tracebacks"],
                 results["baseline_totals"]["hangs"], results["baseline_totals"]["data_loss"]]] if before else [])),
        "",
    ]
    old = {(r["group"], r["case"]): r for r in before or []}
    header = ["group", "case", *(["baseline"] if before else []), "outcome", "passed", "s", "failed checks"]
    body = []
    for r in after:
        prior = old.get((r["group"], r["case"]))
        was = [("skipped" if prior is None or prior["outcome"] == "skipped" else
                prior["outcome"] + ("" if prior.get("passed") else " ✗") + (" LOST" if prior.get("data_loss") else ""))]
        body.append([r["group"], r["case"], *(was if before else []),
                     r["outcome"] + (" LOST" if r.get("data_loss") else ""),
                     "–" if r["outcome"] == "skipped" else ("yes" if r["passed"] else "**no**"), r.get("seconds"),
                     ", ".join(r.get("failed_checks") or []) or r.get("note") or ""])
    lines.append(common.markdown_table(header, body))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", type=Path, help="Also run the battery on this source tree first.")
    parser.add_argument("--baseline-label", default=None,
                        help="How the table names the baseline (e.g. 'main @ abc123').")
    parser.add_argument("--cases", default=",".join(GROUPS), help=f"Groups to run: {', '.join(GROUPS)}.")
    parser.add_argument("--hang-s", type=float, default=90.0, help="A case still running after this is a hang.")
    parser.add_argument("--no-docs", action="store_true", help="Write the JSON only, not docs/BENCHMARKS.md.")
    args = parser.parse_args()
    groups = [g.strip() for g in args.cases.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown groups {unknown}: choose from {', '.join(GROUPS)}")
    results: dict[str, Any] = {"hang_s": args.hang_s, "groups": groups}
    if args.baseline_src:
        print(f"baseline: {args.baseline_src}", flush=True)
        results["baseline"] = str(args.baseline_src)
        results["baseline_label"] = args.baseline_label
        results["baseline_rows"] = battery(args.baseline_src, WORK / "baseline", groups, args.hang_s)
        results["baseline_totals"] = totals(results["baseline_rows"])
    print(f"this tree: {REPO / 'src'}", flush=True)
    results["commit"] = common.git_commit()
    results["rows"] = battery(REPO / "src", WORK / "branch", groups, args.hang_s)
    results["totals"] = totals(results["rows"])
    hows = sorted({r["note"] for r in results["rows"] if r["group"] == "read-only" and r.get("note")})
    results["read_only_how"] = "; ".join(hows)
    print(json.dumps({"totals": results["totals"], "baseline": results.get("baseline_totals")}, indent=2))
    path = common.write_result("faults", results)
    print(f"wrote {path}")
    if not args.no_docs:
        common.update_markdown_section("faults", report(results))


if __name__ == "__main__":
    main()
