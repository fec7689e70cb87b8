"""Mirror NLM's PubMed baseline and update files, every file verified against its ``.md5`` companion.

NLM publishes PubMed as numbered gzip XML files in two folders, ``baseline/`` (the yearly snapshot) and
``updatefiles/`` (the daily changes, numbered on from the baseline), each ``pubmedYYnNNNN.xml.gz`` beside
``pubmedYYnNNNN.xml.gz.md5`` (``MD5(name)= hex``); the folders are listed as HTML directory indexes. The
local mirror keeps NLM's layout under ``DEST``:

```
DEST/.medcite-sync.json         the state: one entry per file (verified, quarantined, failed, no-checksum)
DEST/.medcite-sync.lock         held by the running sync (one at a time per mirror)
DEST/baseline/NAME, NAME.md5    verified files only (a download in progress is NAME.part)
DEST/updatefiles/NAME, NAME.md5
DEST/quarantine/NAME.corrupt    a file whose checksum still failed after the retries, and NAME.report.txt
```

Guarantees:

* **Only verified files are final.** Bytes go to ``NAME.part``; it becomes ``NAME`` (an atomic rename) only
  after its MD5 matches the companion, and the state is then written atomically. A kill at any moment
  leaves at worst a ``.part`` file, which the next run resumes with an HTTP ``Range`` request.
* **A second run is cheap.** A file the state records as verified, present with its recorded size, is
  not fetched again: a run with nothing new lists the two folders and downloads nothing.
* **Bounded retries.** Connection errors are retried by the httpx transport; a dropped connection, a
  timeout or a 5xx/429 answer is retried up to ``retries`` times (resuming the ``.part``), with an
  exponential pause. A checksum mismatch discards the bytes and downloads again up to ``retries`` times,
  then the file is quarantined (never ingested; a later run leaves it alone unless asked to retry it).
  A file whose ``.md5`` is missing is not downloaded at all; a 404 is reported, not retried in the run.
* **NLM order.** :func:`ingest_plan` lists the verified files baseline first, then updates, by number,
  and stops before the first file that is not verified, so updates and deletions never apply out of order.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

from ..errors import InputError, MedciteError
from ..io import atomic_write, write_json
from ..progress import progress
from .lock import WriterLock

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://ftp.ncbi.nlm.nih.gov/pubmed/"
#: option name -> NLM folder, in NLM order
FOLDERS = {"baseline": "baseline", "updates": "updatefiles"}
STATE_NAME = ".medcite-sync.json"
LOCK_NAME = ".medcite-sync.lock"
QUARANTINE = "quarantine"
STATE_KIND = "medcite-pubmed-sync"
STATE_VERSION = 1

_NAME = re.compile(r"^pubmed(\d{2})n(\d{4,})\.xml\.gz$")
_MD5_LINE = re.compile(r"^\s*(?:MD5\s*\(([^)]*)\)\s*=\s*([0-9a-fA-F]{32})|([0-9a-fA-F]{32})\s+\*?(\S+))\s*$")


class SyncError(MedciteError):
    """The NLM server (or the one at --base-url) could not be listed."""


class _Transient(Exception):
    """Worth another try: a dropped connection, a timeout, a 5xx or 429 answer."""


class _Permanent(Exception):
    """Not worth another try in this run: 404, 403, an unexpected status."""


@dataclass(frozen=True)
class Remote:
    """One PubMed file on the server."""

    folder: str  # "baseline" or "updatefiles"
    name: str
    url: str
    md5_url: str | None  # None: the listing has no .md5 companion

    @property
    def key(self) -> tuple[int, int, int]:
        return order_key(self.name, self.folder)


@dataclass
class Outcome:
    """What a run did with one file."""

    name: str
    folder: str
    status: str  # downloaded, adopted, present, quarantined, failed, no-checksum, kept-quarantined
    bytes: int = 0
    detail: str = ""


@dataclass
class SyncReport:
    listed: dict[str, int] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def downloaded(self) -> int:
        return self.count("downloaded")

    @property
    def problems(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("quarantined", "failed", "no-checksum", "kept-quarantined")]


def order_key(name: str, folder: str = "baseline") -> tuple[int, int, int]:
    """NLM order: by release year, baseline before updates, then by file number."""
    m = _NAME.match(name)
    if not m:
        raise InputError(
            f"{name!r} is not a PubMed file name", hint="PubMed files are named like pubmed25n0001.xml.gz"
        )
    return int(m.group(1)), 0 if folder == "baseline" else 1, int(m.group(2))


def parse_listing(html: str) -> tuple[list[str], set[str]]:
    """The ``pubmedYYnNNNN.xml.gz`` names and the names that have a ``.md5`` companion, from an HTML index."""
    import lxml.html

    names: set[str] = set()
    md5s: set[str] = set()
    if not html.strip():
        return [], set()
    for href in lxml.html.fromstring(html).xpath("//a/@href"):
        base = str(href).rsplit("/", 1)[-1]
        if _NAME.match(base):
            names.add(base)
        elif base.endswith(".md5") and _NAME.match(base[:-4]):
            md5s.add(base[:-4])
    return sorted(names), md5s


def parse_md5(text: str, name: str) -> str:
    """The hex digest of ``name`` from an NLM ``.md5`` file (``MD5(name)= hex``; ``hex  name`` also read)."""
    for line in text.splitlines():
        m = _MD5_LINE.match(line)
        if not m:
            continue
        listed, digest = (m.group(1), m.group(2)) if m.group(2) else (m.group(4), m.group(3))
        if listed.strip().lstrip("*") in (name, ""):
            return digest.lower()
        raise InputError(f"the checksum file of {name} names another file, {listed!r}")
    raise InputError(f"the checksum file of {name} holds no MD5 digest ({text[:80]!r})")


def file_md5(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- state -----------------------------------------------------------------------------------
class SyncEntry(TypedDict, total=False):
    """One file's entry in the state file (``status``: verified, quarantined, failed or no-checksum)."""

    folder: str
    status: str
    url: str
    size: int
    md5: str
    received_md5: str
    quarantined_as: str
    error: str
    at: str


class SyncState:
    """``DEST/.medcite-sync.json``: one entry per file this mirror has dealt with, written atomically."""

    def __init__(self, dest: Path) -> None:
        self.path = dest / STATE_NAME
        self.files: dict[str, SyncEntry] = {}
        if self.path.exists():
            import json

            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if data.get("kind") != STATE_KIND:
                    raise ValueError(f"kind {data.get('kind')!r}")
                self.files = dict(data["files"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise InputError(
                    f"not a pubmed sync state file ({exc})", path=str(self.path),
                    hint="remove it: the next run checks the files already there against their .md5",
                ) from None

    def get(self, name: str) -> SyncEntry | None:
        return self.files.get(name)

    def set(self, name: str, entry: SyncEntry) -> None:
        self.files[name] = entry | {"at": _now()}
        self.save()

    def save(self) -> None:
        ordered = dict(sorted(self.files.items(), key=lambda kv: order_key(kv[0], kv[1]["folder"])))
        write_json(self.path, {"kind": STATE_KIND, "format_version": STATE_VERSION, "updated_at": _now(),
                               "files": ordered})


def verified_path(dest: Path, name: str, entry: SyncEntry) -> Path | None:
    """The file's path when the state says verified and it is on disk with its recorded size."""
    if entry.get("status") != "verified":
        return None
    path = dest / entry["folder"] / name
    try:
        return path if path.stat().st_size == entry.get("size") else None
    except FileNotFoundError:
        return None


def ingest_plan(dest: str | Path) -> tuple[list[Path], str | None]:
    """Verified files in NLM order, stopping before the first file that is not verified.

    Returns the files and, when it stopped early, the reason (the file and its status).
    """
    dest = Path(dest)
    state = SyncState(dest)
    paths: list[Path] = []
    for name, entry in sorted(state.files.items(), key=lambda kv: order_key(kv[0], kv[1]["folder"])):
        path = verified_path(dest, name, entry)
        if path is None:
            status = entry.get("status") if entry.get("status") != "verified" else "missing on disk"
            return paths, f"{entry['folder']}/{name} is {status}"
        paths.append(path)
    return paths, None


# -- the run ---------------------------------------------------------------------------------
@dataclass
class SyncOptions:
    folders: tuple[str, ...] = ("baseline", "updatefiles")
    since: str | None = None
    limit: int | None = None
    retries: int = 3
    backoff_s: float = 1.0
    timeout_s: float = 60.0
    retry_quarantined: bool = False


def sync(dest: str | Path, base_url: str = DEFAULT_BASE_URL, options: SyncOptions | None = None) -> SyncReport:
    """Bring ``dest`` up to date with the PubMed files at ``base_url`` (see the module docstring)."""
    from ..registry import require

    httpx = require("httpx", "sync", "medcite pubmed sync")
    opts = options or SyncOptions()
    if opts.since is not None:
        order_key(opts.since)  # a clear error for a name that is not NLM's
    if opts.limit is not None and opts.limit < 1:
        raise InputError(f"--limit must be at least 1, got {opts.limit}")
    if not base_url.startswith(("https://", "http://")):
        raise InputError(f"--base-url must be an http(s) URL, got {base_url!r}",
                         hint=f"NLM's is {DEFAULT_BASE_URL}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    base = base_url.rstrip("/") + "/"
    transport = httpx.HTTPTransport(retries=opts.retries)  # connect errors; the rest is retried below
    headers = {"User-Agent": "medcite-pubmed-sync"}
    # one run per mirror at a time: two would write the same .part files (the kernel drops the lock on kill -9)
    lock = WriterLock(dest, 0, name=LOCK_NAME, what="pubmed mirror",
                      hint="another `medcite pubmed sync` is writing to it: wait for it to finish")
    try:
        with httpx.Client(transport=transport, timeout=opts.timeout_s, follow_redirects=True,
                          headers=headers) as client:
            return _Syncer(client, dest, base, opts).run()
    finally:
        lock.release()


class _Syncer:
    def __init__(self, client: Any, dest: Path, base: str, opts: SyncOptions) -> None:
        import httpx

        self.httpx = httpx
        self.client, self.dest, self.base, self.opts = client, dest, base, opts
        self.state = SyncState(dest)
        self.report = SyncReport()

    def run(self) -> SyncReport:
        remotes: list[Remote] = []
        for folder in self.opts.folders:
            found = self._list(folder)
            self.report.listed[folder] = len(found)
            remotes.extend(found)
        remotes.sort(key=lambda r: r.key)
        if self.opts.since is not None:
            # NLM numbers the update files on from the baseline, so (year, number) alone places a name
            year, _, number = order_key(self.opts.since)
            remotes = [r for r in remotes if (r.key[0], r.key[2]) > (year, number)]
        if self.opts.limit is not None:
            remotes = remotes[: self.opts.limit]
        with progress(total=len(remotes), desc="pubmed sync", unit="file") as bar:
            for remote in remotes:
                outcome = self._one(remote)
                self.report.outcomes.append(outcome)
                log.info("%s/%s: %s %s", remote.folder, remote.name, outcome.status, outcome.detail)
                bar.update(1)
        return self.report

    # -- HTTP --------------------------------------------------------------------------------
    def _pause(self, attempt: int) -> None:
        if self.opts.backoff_s > 0:
            time.sleep(self.opts.backoff_s * 2 ** (attempt - 1))

    def _get_text(self, url: str) -> str:
        """GET a small text (a listing, a checksum) with the bounded retry; _Permanent on 4xx."""
        attempt = 0
        while True:
            try:
                resp = self.client.get(url)
                _check_status(resp.status_code, url)
                if resp.status_code != 200:
                    raise _Permanent(f"HTTP {resp.status_code} for {url}")
                return str(resp.text)
            except (_Transient, self.httpx.TransportError) as exc:
                attempt += 1
                if attempt > self.opts.retries:
                    raise _Transient(f"{url}: {_describe(exc)} (after {attempt} tries)") from None
                log.info("%s: %s; trying again", url, _describe(exc))
                self._pause(attempt)

    def _list(self, folder: str) -> list[Remote]:
        url = f"{self.base}{folder}/"
        try:
            names, md5s = parse_listing(self._get_text(url))
        except (_Transient, _Permanent) as exc:
            raise SyncError(
                f"cannot list {url}: {exc}",
                hint="check the network and --base-url (NLM's is " + DEFAULT_BASE_URL + "); a re-run resumes",
            ) from None
        return [Remote(folder, n, url + n, url + n + ".md5" if n in md5s else None) for n in names]

    def _download(self, remote: Remote, part: Path) -> None:
        """Fetch ``remote`` into ``part``, resuming from the bytes already there."""
        offset = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            with self.client.stream("GET", remote.url, headers=headers) as resp:
                if resp.status_code == 416 and offset:
                    return  # the .part already holds every byte: the checksum decides
                _check_status(resp.status_code, remote.url)
                if resp.status_code == 206 and _range_start(resp.headers.get("content-range")) == offset:
                    mode = "ab"
                elif resp.status_code in (200, 206):
                    offset, mode = 0, "wb"  # the server ignored the range: start over
                else:
                    raise _Permanent(f"HTTP {resp.status_code}")
                length = resp.headers.get("content-length")
                total = offset + int(length) if length and length.isdigit() else None
                with open(part, mode) as fh, progress(
                    total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
                    desc=remote.name, leave=False,
                ) as bar:
                    for chunk in resp.iter_raw():  # as they arrive, undecoded: the MD5 is of the file
                        fh.write(chunk)
                        bar.update(len(chunk))
                    fh.flush()
                    os.fsync(fh.fileno())
        except self.httpx.TransportError as exc:
            raise _Transient(_describe(exc)) from None
        if total is not None and part.stat().st_size != total:
            raise _Transient(f"got {part.stat().st_size} of {total} bytes")

    # -- one file ----------------------------------------------------------------------------
    def _one(self, remote: Remote) -> Outcome:
        folder_dir = self.dest / remote.folder
        final, part = folder_dir / remote.name, folder_dir / (remote.name + ".part")
        entry = self.state.get(remote.name)
        if entry is not None and verified_path(self.dest, remote.name, entry) is not None:
            return Outcome(remote.name, remote.folder, "present", entry.get("size", 0))
        if entry is not None and entry.get("status") == "quarantined" and not self.opts.retry_quarantined:
            return Outcome(remote.name, remote.folder, "kept-quarantined", 0,
                           "quarantined by an earlier run; pass --retry-quarantined to try it again")
        if remote.md5_url is None:
            self.state.set(remote.name, {"folder": remote.folder, "status": "no-checksum", "url": remote.url})
            return Outcome(remote.name, remote.folder, "no-checksum", 0,
                           "the server lists no .md5 companion: not downloaded (a later run tries again)")
        try:
            md5_text = self._get_text(remote.md5_url)
            expected = parse_md5(md5_text, remote.name)
        except (_Transient, _Permanent, InputError) as exc:
            return self._failed(remote, f"checksum file: {exc}")
        folder_dir.mkdir(parents=True, exist_ok=True)
        if final.exists():  # a file from an interrupted run (killed before the state was written) or a copy
            if file_md5(final) == expected:
                self._verified(remote, final, expected, md5_text)
                return Outcome(remote.name, remote.folder, "adopted", final.stat().st_size,
                               "already on disk with the right checksum")
            final.unlink()
        fetch_tries = bad_sums = 0
        while True:
            try:
                self._download(remote, part)
            except _Transient as exc:
                fetch_tries += 1
                if fetch_tries > self.opts.retries:
                    return self._failed(remote, f"{exc} (after {fetch_tries} tries; the next run resumes)")
                log.info("%s: %s; trying again", remote.name, exc)
                self._pause(fetch_tries)
                continue
            except _Permanent as exc:
                part.unlink(missing_ok=True)
                return self._failed(remote, str(exc))
            got = file_md5(part)
            if got == expected:
                size = part.stat().st_size
                os.replace(part, final)
                self._verified(remote, final, expected, md5_text)
                return Outcome(remote.name, remote.folder, "downloaded", size)
            bad_sums += 1
            log.warning("%s: MD5 %s, expected %s (try %d)", remote.name, got, expected, bad_sums)
            if bad_sums > self.opts.retries:
                return self._quarantine(remote, part, expected, got, bad_sums)
            part.unlink()
            self._pause(bad_sums)

    def _verified(self, remote: Remote, final: Path, md5: str, md5_text: str) -> None:
        with atomic_write(final.with_name(final.name + ".md5")) as fh:
            fh.write(md5_text if md5_text.endswith("\n") else md5_text + "\n")
        _fsync_dir(final.parent)
        self.state.set(remote.name, {"folder": remote.folder, "status": "verified", "size": final.stat().st_size,
                                     "md5": md5, "url": remote.url})

    def _failed(self, remote: Remote, error: str) -> Outcome:
        old = self.state.get(remote.name) or {}
        if old.get("status") != "verified":
            self.state.set(remote.name, {"folder": remote.folder, "status": "failed", "url": remote.url,
                                         "error": error})
        return Outcome(remote.name, remote.folder, "failed", 0, error)

    def _quarantine(self, remote: Remote, part: Path, expected: str, got: str, tries: int) -> Outcome:
        qdir = self.dest / QUARANTINE
        qdir.mkdir(parents=True, exist_ok=True)
        # ".corrupt": no suffix the ingester reads, so `medcite ingest DEST` can never pick it up
        target = qdir / (remote.name + ".corrupt")
        size = part.stat().st_size
        shutil.move(str(part), target)
        report = (f"file: {remote.folder}/{remote.name}\nurl: {remote.url}\nexpected md5: {expected}\n"
                  f"received md5: {got}\nbytes received: {size}\ndownloads tried: {tries}\nat: {_now()}\n"
                  f"kept as: {target.name} (never ingested)\n"
                  "to try again: medcite pubmed sync ... --retry-quarantined\n")
        with atomic_write(qdir / (remote.name + ".report.txt")) as fh:
            fh.write(report)
        self.state.set(remote.name, {"folder": remote.folder, "status": "quarantined", "url": remote.url,
                                     "md5": expected, "received_md5": got, "size": size,
                                     "quarantined_as": f"{QUARANTINE}/{target.name}"})
        return Outcome(remote.name, remote.folder, "quarantined", size,
                       f"MD5 mismatch after {tries} download(s); kept in {QUARANTINE}/ with a report")


def _check_status(code: int, url: str) -> None:
    if code >= 500 or code == 429:
        raise _Transient(f"HTTP {code}")
    if code >= 400 and code != 416:
        raise _Permanent(f"HTTP {code} for {url}")


def _range_start(content_range: str | None) -> int | None:
    m = re.match(r"^\s*bytes\s+(\d+)-", content_range or "")
    return int(m.group(1)) if m else None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, _Transient | _Permanent) else text


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def select_folders(baseline: bool, updates: bool) -> tuple[str, ...]:
    """The NLM folders for the --baseline / --updates flags (neither: both)."""
    chosen: Iterable[str] = [FOLDERS[k] for k, on in (("baseline", baseline), ("updates", updates)) if on]
    return tuple(chosen) or tuple(FOLDERS.values())
