"""Gzip readers for the corpus: medcite's threaded zlib stream against maintained PyPI readers.

Decompress-only throughput (MB/s of decompressed XML, reads of 64 KiB as lxml does) and, for the fastest
candidates, full ``medcite ingest`` of the same file (articles/s and process CPU seconds over all threads,
a fresh store each time), every reader measured in the same run and interleaved round by round, reported
as ratios to medcite's reader.

    python benchmarks/bench_gzip.py [--file ../shared/data/pubmed_xml/pubmed20n0014.xml.gz] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import importlib.util
import io
import json
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from medcite.corpus import pubmed_xml, streams
from medcite.corpus.streams import open_stream
from medcite.paths import shared_data_dir


def _medcite(raw: IO[bytes]) -> IO[bytes]:
    streams.zlib = zlib
    return open_stream(raw)


def _medcite_isal(raw: IO[bytes]) -> IO[bytes]:
    """medcite's stream with ISA-L's zlib-compatible inflate in its helper thread (one stream at a time)."""
    from isal import isal_zlib

    streams.zlib = isal_zlib  # type: ignore[assignment]
    return open_stream(raw)


def _optional(module: str, make: Callable[[Any, IO[bytes]], IO[bytes]]) -> Callable[[IO[bytes]], IO[bytes]] | None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return lambda raw: make(mod, raw)


READERS: dict[str, Callable[[IO[bytes]], IO[bytes]] | None] = {
    "medcite (zlib, 1 helper thread)": _medcite,
    "medcite stream, isal_zlib inflate": _medcite_isal if importlib.util.find_spec("isal") else None,
    "gzip.GzipFile (stdlib)": lambda raw: gzip.GzipFile(fileobj=raw),  # type: ignore[dict-item]
    "isal.igzip": _optional("isal.igzip", lambda m, raw: m.open(raw, "rb")),
    "isal.igzip_threaded (threads=1)": _optional("isal.igzip_threaded", lambda m, raw: m.open(raw, "rb", threads=1)),
    "xopen (threads=1)": _optional("xopen", lambda m, raw: m.xopen(raw, "rb", threads=1, format="gz")),
    "zlib_ng.gzip_ng_threaded (threads=1)": _optional(
        "zlib_ng.gzip_ng_threaded", lambda m, raw: m.open(raw, "rb", threads=1)),
    "rapidgzip (parallelization=2)": _optional("rapidgzip", lambda m, raw: m.open(raw, parallelization=2)),
    "pgzip (thread=2)": _optional("pgzip", lambda m, raw: m.open(raw, "rb", thread=2)),
}


def decompress(path: Path, make: Callable[[IO[bytes]], IO[bytes]]) -> tuple[float, int]:
    start = time.perf_counter()
    n = 0
    with path.open("rb") as raw:
        stream = make(raw)
        while chunk := stream.read(1 << 16):
            n += len(chunk)
        stream.close()
    return time.perf_counter() - start, n


class _Raw(io.RawIOBase):
    """``readinto`` over ingest's byte-counting wrapper (which has only ``read``), as the readers need."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._fh.read(len(b))
        b[: len(data)] = data
        return len(data)


def ingest(path: Path, make: Callable[[IO[bytes]], IO[bytes]]) -> tuple[float, float, int]:
    """Full ``medcite ingest`` of ``path`` into a fresh store, the XML reader fed by ``make``."""
    from click.testing import CliRunner

    from medcite.cli.main import cli
    from medcite.corpus.store import DocumentStore

    original = pubmed_xml.open_stream
    pubmed_xml.open_stream = make if make in (_medcite, _medcite_isal) else lambda raw: make(_Raw(raw))  # type: ignore
    try:
        with tempfile.TemporaryDirectory(prefix="bench-gzip-") as tmp:
            start, cpu = time.perf_counter(), time.process_time()
            result = CliRunner().invoke(cli, ["-q", "ingest", "--store", f"{tmp}/store", str(path)])
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            if result.exit_code != 0:
                raise RuntimeError(f"ingest failed: {result.output} {result.exception!r}")
            with DocumentStore.open(f"{tmp}/store") as store:
                return seconds, cpu, len(store)
    finally:
        pubmed_xml.open_stream = original


def behaviour(readers: dict[str, Callable[[IO[bytes]], IO[bytes]]]) -> dict[str, dict[str, str]]:
    """What each reader does with the damage the tests pin: the good bytes it hands out before the error
    (medcite keeps the records before the damage), and whether the error is one of ``GZIP_ERRORS`` (which
    the readers turn into the user-facing "truncated or corrupt gzip data" message)."""
    text = bytes(range(256)) * 4000
    data = gzip.compress(text)
    cases = {"truncated": data[: len(data) - 20], "trailing garbage": data + b"junk",
             "corrupt block": data[:10] + b"\xff" * 50 + data[60:]}
    out: dict[str, dict[str, str]] = {}
    for name, make in readers.items():
        if "rapidgzip" in name or "pgzip" in name:
            continue
        out[name] = {}
        for case, damaged in cases.items():
            stream, got = make(io.BufferedReader(io.BytesIO(damaged))), b""  # type: ignore[arg-type]
            try:
                while chunk := stream.read(4096):
                    got += chunk
                out[name][case] = "no error"
            except BaseException as exc:
                out[name][case] = (f"{len(got)} good bytes, then {type(exc).__name__}: {exc}"
                                   f"{'' if isinstance(exc, streams.GZIP_ERRORS) else ' (not in GZIP_ERRORS)'}")
    streams.zlib = zlib
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", type=Path, default=shared_data_dir() / "pubmed_xml" / "pubmed20n0014.xml.gz")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ingest", nargs="*", default=None,
                    help="readers for the ingest measurement (default: medcite and the 3 fastest others)")
    ap.add_argument("--out", type=Path, default=None, help="write the results JSON here")
    args = ap.parse_args()
    readers = {k: v for k, v in READERS.items() if v is not None}
    missing = [k for k, v in READERS.items() if v is None]
    times: dict[str, list[float]] = {k: [] for k in readers}
    sizes: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, make in readers.items():
            seconds, n = decompress(args.file, make)
            times[name].append(seconds)
            sizes[name] = n
    base = "medcite (zlib, 1 helper thread)"
    assert len(set(sizes.values())) == 1, f"readers disagree on the decompressed size: {sizes}"
    mb = sizes[base] / 1e6
    dec = {k: {"MB/s": round(mb / statistics.median(v), 1),
               "speed_vs_medcite": round(statistics.median(times[base]) / statistics.median(v), 2)}
           for k, v in times.items()}
    print(json.dumps(dec, indent=2), flush=True)
    ranked = sorted((k for k in dec if k != base), key=lambda k: -dec[k]["MB/s"])
    chosen = args.ingest if args.ingest is not None else [base, *ranked[:3]]
    ing_times: dict[str, list[float]] = {k: [] for k in chosen}
    ing_cpu: dict[str, list[float]] = {k: [] for k in chosen}
    articles = 0
    failed: dict[str, str] = {}
    for _ in range(args.rounds):
        for name in [c for c in chosen if c not in failed]:
            try:
                seconds, cpu, articles = ingest(args.file, readers[name])
            except RuntimeError as exc:  # e.g. a reader that needs a seekable file
                failed[name] = str(exc)
                ing_times.pop(name)
                ing_cpu.pop(name)
                continue
            ing_times[name].append(seconds)
            ing_cpu[name].append(cpu)
    ing = {k: {"articles/s": round(articles / statistics.median(v)),
               "speed_vs_medcite": round(statistics.median(ing_times[base]) / statistics.median(v), 2),
               "cpu_s_per_1k_articles": round(1000 * statistics.median(ing_cpu[k]) / articles, 3),
               "cpu_vs_medcite": round(statistics.median(ing_cpu[k]) / statistics.median(ing_cpu[base]), 2)}
           for k, v in ing_times.items()} if base in ing_times else {}
    result = {"behaviour": behaviour(readers), "file": str(args.file), "decompressed_MB": round(mb, 1),
              "rounds": args.rounds, "articles": articles, "decompress": dec, "ingest": ing,
              "ingest_failed": failed, "not_installed": missing,
              "raw_seconds": {"decompress": times, "ingest": ing_times, "ingest_cpu": ing_cpu}}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
