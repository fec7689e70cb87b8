"""Shared by the bad-input, crash and concurrency tests: a tiny corpus, snapshots, clean-error checks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import Result

BAD = Path(__file__).resolve().parents[2] / "data" / "bad"


def corpus_lines(n: int = 30) -> str:
    return "".join(
        json.dumps({"pmid": i, "title": f"Statins and LDL study {i}",
                    "abstract": f"Statins lower LDL cholesterol in adults {i}. Exercise raises HDL {i % 7}. "
                    f"Vitamin C treats scurvy in sailors {i % 5}."}) + "\n"
        for i in range(1, n + 1))


def phase_b_questions(n: int = 8) -> str:
    """BioASQ Phase B questions (JSON) of ``n`` summary questions, each with one gold snippet of 820 characters."""
    snippet = "Statins lower LDL cholesterol in adults. " * 20
    url = "http://www.ncbi.nlm.nih.gov/pubmed/"
    return json.dumps({"questions": [
        {"id": f"q{i}", "type": "summary", "body": f"What do statins do {i}?", "documents": [f"{url}{i}"],
         "snippets": [{"document": f"{url}{i}", "text": snippet, "beginSection": "abstract",
                       "offsetInBeginSection": 0, "endSection": "abstract", "offsetInEndSection": len(snippet)}]}
        for i in range(1, n + 1)]})


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (lock and SQLite WAL side files aside), or {} if absent."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))}


def store_state(store: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], str]:
    """What a store holds: articles, recorded files, and the manifest (the SQLite file's bytes vary with WAL,
    the manifest's time and store id with each store)."""
    conn = sqlite3.connect(store / "store.sqlite")
    try:
        arts = conn.execute("SELECT pmid, version, seq, title, abstract, meta FROM articles ORDER BY pmid").fetchall()
        files = conn.execute("SELECT key, status, added, skipped FROM files ORDER BY key").fetchall()
    finally:
        conn.close()
    manifest = json.loads((store / "manifest.json").read_text())
    manifest.pop("updated_at", None)
    manifest.pop("store_id", None)  # random per store by design
    return arts, files, json.dumps(manifest, sort_keys=True)


def assert_clean_error(result: Result, *needles: str) -> None:
    """A failure with exactly one ``error:`` line naming the input, and no traceback."""
    out = result.output
    assert result.exit_code in (1, 2), (result.exit_code, out, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out
    for needle in needles:
        assert needle in errors[0], (needle, out)
