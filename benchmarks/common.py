"""Helpers shared by the benchmark scripts: timing, peak memory of subprocesses, results, docs sections.

Every benchmark writes its numbers as JSON under ``benchmarks/results/`` and rewrites its own section of
``docs/BENCHMARKS.md`` (between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``), leaving the other
benchmarks' sections untouched.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from medcite.io import atomic_write, write_json

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"
BENCHMARKS_MD = REPO / "docs" / "BENCHMARKS.md"
MIB = 1024 * 1024


@dataclass
class Measured:
    """What one measured subprocess did: wall time, peak resident memory, exit status and output."""

    cmd: list[str]
    wall_s: float
    peak_rss_bytes: int
    returncode: int
    stdout: str = ""
    stderr: str = ""
    cpu_s: float = 0.0  # user + system CPU time of the child: much less sensitive to a busy machine

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss_bytes / MIB

    def check(self) -> Measured:
        """Raise with the command and the tail of its stderr when it failed."""
        if self.returncode != 0:
            tail = (self.stderr or self.stdout)[-3000:]
            raise RuntimeError(
                f"command failed with exit code {self.returncode}: {shlex.join(self.cmd)}\n{tail}")
        return self


def _high_water_bytes(pid: int) -> int:
    """Peak resident memory of one live process: ``VmHWM`` on Linux, else its current RSS."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    try:
        import psutil

        return int(psutil.Process(pid).memory_info().rss)
    except Exception:  # noqa: BLE001 - gone or unreadable: nothing to add
        return 0


class _PeakMemory(threading.Thread):
    """Samples the high-water RSS of a process and its descendants until stopped.

    ``ru_maxrss`` from ``wait4`` is not used for memory: on Linux it also counts the parent's memory
    inherited through fork/vfork before ``exec``, so a small child of a large parent looks large.
    ``VmHWM`` belongs to the child's own address space after ``exec``; it only grows, so sampling
    misses at most the growth of the last interval. Descendants' peaks are summed (an upper bound).
    """

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval_s = pid, interval_s
        self.peaks: dict[int, int] = {}
        self.done = threading.Event()

    def sample(self) -> None:
        pids = [self.pid]
        try:
            import psutil

            pids += [c.pid for c in psutil.Process(self.pid).children(recursive=True)]
        except Exception:  # noqa: BLE001 - psutil missing or the process already gone
            pass
        for pid in pids:
            self.peaks[pid] = max(self.peaks.get(pid, 0), _high_water_bytes(pid))

    def run(self) -> None:
        self.sample()
        while not self.done.wait(self.interval_s):
            self.sample()

    @property
    def peak_bytes(self) -> int:
        return sum(self.peaks.values())


def run_measured(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float | None = None,
) -> Measured:
    """Run ``cmd`` to completion; return its wall time, CPU time and peak RSS.

    CPU time (user + system) is the kernel's account for that child from ``os.wait4``; peak RSS is
    sampled from ``/proc`` while it runs (see :class:`_PeakMemory`). Output goes to temporary files
    so a chatty child never blocks on a full pipe.
    """
    args = [str(c) for c in cmd]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=full_env, cwd=cwd)
        memory = _PeakMemory(proc.pid)
        memory.start()
        timer = threading.Timer(timeout_s, proc.kill) if timeout_s else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            memory.done.set()
            if timer:
                timer.cancel()
        wall = time.perf_counter() - start
        memory.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(args, wall, memory.peak_bytes, proc.returncode, stdout, stderr, cpu)


@dataclass
class Stopwatch:
    """Accumulates named wall-clock durations: ``with sw("index"): ...`` then ``sw.seconds["index"]``."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/max in milliseconds of per-call latencies given in seconds."""
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds, dtype=float) * 1000.0
    return {
        "n": int(ms.size),
        "p50_ms": round(float(np.percentile(ms, 50)), 4),
        "p95_ms": round(float(np.percentile(ms, 95)), 4),
        "mean_ms": round(float(ms.mean()), 4),
        "max_ms": round(float(ms.max()), 4),
    }


def git_commit() -> str | None:
    """The checked-out commit (with ``-dirty`` when the tree has changes), or None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def machine_info() -> dict[str, Any]:
    """The facts that make timings comparable: CPUs, memory, Python, OS."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 1024**3, 1)
        info["load_avg_1m_at_start"] = round(os.getloadavg()[0], 2)
    except (ImportError, OSError):
        pass
    return info


def write_result(name: str, data: Mapping[str, Any], folder: Path | None = None) -> Path:
    """Write ``<folder>/<name>.json`` with the results plus when/where/how they were measured."""
    path = (folder or RESULTS_DIR) / f"{name}.json"
    payload = {
        "benchmark": name,
        "measured_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "machine": machine_info(),
        **data,
    }
    write_json(path, payload)
    return path


def update_markdown_section(name: str, body: str, path: Path | None = None,
                            title: str = "# Benchmarks") -> Path:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in ``path``.

    The file is created (with ``title``) when missing and the section appended when absent, so each
    benchmark owns exactly one section and never disturbs the others.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"section name {name!r} must be letters, digits, '_', '.' or '-'")
    path = path or BENCHMARKS_MD
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else f"{title}\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with atomic_write(path) as fh:
        fh.write(text)
    return path


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; floats keep what the caller formatted, None shows as '–'."""

    def cell(v: Any) -> str:
        return "–" if v is None else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def read_articles(path: Path, n: int) -> list[Any]:
    """The first ``n`` articles with an abstract of the PubMed XML file ``path`` (in file order)."""
    from medcite.corpus.pubmed_xml import iter_pubmed_xml
    from medcite.types import Article

    out: list[Article] = []
    with open(path, "rb") as fh:
        for item in iter_pubmed_xml(fh, path.name):
            if isinstance(item, Article) and item.abstract:
                out.append(item)
                if len(out) >= n:
                    break
    return out
