"""A real HTTP server on 127.0.0.1 laid out like NLM's PubMed folders, serving the real files in
../shared/data/pubmed_xml under NLM's names, with the faults `medcite pubmed sync` must survive.

Mirror built by :func:`build_mirror` (``ROOT/pubmed/...``):

- baseline/pubmed26n0001.xml.gz: pubmed20n0014_first200.xml.gz; the first GET drops the connection after
  30,000 bytes
- baseline/pubmed26n0002.xml.gz: pubmed-29768149.xml, gzipped; the first GET answers 503
- updatefiles/pubmed26n0003.xml.gz: pubmed21n1298_first300_plus_deletecitation.xml.gz, its DeleteCitation
  block also naming the first 5 PMIDs of 0001
- updatefiles/pubmed26n0004.xml.gz: 0001's bytes with one byte flipped, its .md5 of the real bytes (a
  checksum mismatch, every time)
- updatefiles/pubmed26n0005.xml.gz: 0001's bytes, no .md5 companion
- updatefiles/pubmed26n0006.xml.gz: listed with its .md5, but the file is absent (404)
"""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DELETED_FROM_BASELINE = 5


@dataclass
class Mirror:
    root: Path  # the folder served as /
    sources: dict[str, bytes]  # NLM name -> the true bytes (what a verified download must equal)
    deleted: list[str]  # PMIDs of 0001 that update 0003 deletes
    faults: dict[str, str] = field(default_factory=dict)  # URL path -> "drop:N" | "503" (each fires once)


def _md5_file(folder: Path, name: str, data: bytes) -> None:
    (folder / f"{name}.md5").write_text(f"MD5({name})= {hashlib.md5(data).hexdigest()}\n")


def build_mirror(shared_data: Path, root: Path) -> Mirror:
    src = shared_data / "pubmed_xml"
    base, upd = root / "pubmed" / "baseline", root / "pubmed" / "updatefiles"
    base.mkdir(parents=True)
    upd.mkdir(parents=True)
    first200 = (src / "pubmed20n0014_first200.xml.gz").read_bytes()
    single = gzip.compress((src / "pubmed-29768149.xml").read_bytes(), mtime=0)
    pmids = re.findall(rb"<MedlineCitation[^>]*>\s*<PMID[^>]*>(\d+)</PMID>", gzip.decompress(first200))
    deleted = [p.decode() for p in pmids[:DELETED_FROM_BASELINE]]
    update_xml = gzip.decompress((src / "pubmed21n1298_first300_plus_deletecitation.xml.gz").read_bytes())
    extra = b"".join(b'<PMID Version="1">' + p.encode() + b"</PMID>\n" for p in deleted)
    update_xml = update_xml.replace(b"</DeleteCitation>", extra + b"</DeleteCitation>", 1)
    assert extra in update_xml
    update = gzip.compress(update_xml, mtime=0)
    sources = {"pubmed26n0001.xml.gz": first200, "pubmed26n0002.xml.gz": single, "pubmed26n0003.xml.gz": update,
               "pubmed26n0004.xml.gz": first200, "pubmed26n0005.xml.gz": first200}
    for name in ("pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz"):
        (base / name).write_bytes(sources[name])
        _md5_file(base, name, sources[name])
    (upd / "pubmed26n0003.xml.gz").write_bytes(update)
    _md5_file(upd, "pubmed26n0003.xml.gz", update)
    corrupt = bytearray(first200)
    corrupt[len(corrupt) // 2] ^= 0xFF
    (upd / "pubmed26n0004.xml.gz").write_bytes(bytes(corrupt))
    _md5_file(upd, "pubmed26n0004.xml.gz", first200)
    (upd / "pubmed26n0005.xml.gz").write_bytes(first200)  # no .md5
    _md5_file(upd, "pubmed26n0006.xml.gz", first200)  # the .md5 only: the file itself is a 404
    faults = {"/pubmed/baseline/pubmed26n0001.xml.gz": "drop:30000", "/pubmed/baseline/pubmed26n0002.xml.gz": "503"}
    return Mirror(root, sources, deleted, faults)


class NLMServer:
    """ThreadingHTTPServer on 127.0.0.1 (a free port) serving ``mirror.root``; records every request."""

    def __init__(self, mirror: Mirror, *, throttle: tuple[int, float] | None = None) -> None:
        self.mirror = mirror
        self.faults = dict(mirror.faults)
        self.throttle = throttle  # (bytes per write, seconds between writes) for data files
        self.log: list[tuple[str, str | None, int]] = []  # (path, Range header, status)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                try:
                    server._get(self)
                except (BrokenPipeError, ConnectionResetError):  # the client was killed mid-file
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/pubmed/"

    def __enter__(self) -> NLMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def gets(self, name: str) -> list[tuple[str | None, int]]:
        """(Range header, status) of each GET of a data file (not its .md5) named ``name``."""
        return [(rng, status) for path, rng, status in self.log if path.endswith("/" + name)]

    def _record(self, path: str, rng: str | None, status: int) -> None:
        with self._lock:
            self.log.append((path, rng, status))

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        rng = h.headers.get("Range")
        local = self.mirror.root / path.lstrip("/")
        with self._lock:
            fault = self.faults.pop(path, None)
        if fault == "503":
            self._record(path, rng, 503)
            h.send_error(503, "try later")
            return
        if path.endswith("/") and local.is_dir():
            names = sorted(p.name for p in local.iterdir())
            if local.name == "updatefiles":
                names.append("pubmed26n0006.xml.gz")  # listed, but absent: a 404
            body = f"<html><head><title>Index of {path}</title></head><body><h1>Index of {path}</h1><pre>\n"
            body += '<a href="../">Parent Directory</a>\n'
            body += "".join(f'<a href="{n}">{n}</a>   2026-01-01 00:00  1K\n' for n in sorted(names))
            body += "</pre></body></html>\n"
            data = body.encode()
            self._record(path, rng, 200)
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        if not local.is_file():
            self._record(path, rng, 404)
            h.send_error(404, "not found")
            return
        data = local.read_bytes()
        start = 0
        if rng:
            m = re.match(r"bytes=(\d+)-$", rng.strip())
            start = int(m.group(1)) if m else 0
            if start >= len(data):
                self._record(path, rng, 416)
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
        status = 206 if rng else 200
        self._record(path, rng, status)
        h.send_response(status)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data) - start))
        if rng:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        body = data[start:]
        if fault and fault.startswith("drop:"):
            h.wfile.write(body[: int(fault[5:])])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)  # the peer sees the stream end before Content-Length bytes
            return
        if self.throttle and path.endswith(".xml.gz"):
            step, pause = self.throttle
            for i in range(0, len(body), step):
                h.wfile.write(body[i : i + step])
                h.wfile.flush()
                time.sleep(pause)
            return
        h.wfile.write(body)
