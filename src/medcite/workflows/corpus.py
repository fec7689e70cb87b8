"""Document-store workflows: ingest files (``medcite ingest``), inspect a store (``medcite corpus``) and mirror
PubMed from NLM (``medcite pubmed sync``). Each returns what it did; the CLI prints it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..corpus.ingest import Format as Format  # re-exported: the CLI's option types
    from ..corpus.ingest import OnError as OnError
    from ..corpus.nlm_sync import SyncReport
    from ..corpus.store import FileStats as FileStats
    from ..types import Article

@dataclass
class Ingested:
    """Per-file results of an ingest and the store's article count after it."""

    results: list[FileStats]
    total: int


def ingest_files(paths: Sequence[str], store_dir: str | Path, *, on_error: OnError, batch_size: int,
                 fmt: Format = "auto", wait_s: float = 600.0) -> Ingested:
    """Ingest ``paths`` into the store at ``store_dir`` (created if missing). A store this call created and
    filled with nothing is removed again when the ingest fails."""
    from ..corpus.ingest import ingest
    from ..corpus.store import DocumentStore

    new = not Path(store_dir).exists()
    with DocumentStore.create(store_dir, wait_s=wait_s) as store:
        try:
            results = ingest(paths, store, on_error=on_error, batch_size=batch_size, fmt=fmt)
        except BaseException:
            empty = new and not store.files()
            store.close()
            if empty:  # a store this command created and filled with nothing: leave no trace of it
                shutil.rmtree(store_dir, ignore_errors=True)
            raise
        total = len(store)
    return Ingested(results, total)


def store_stats(store_dir: str | Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A store's statistics (counts, sequence number, years) and its ingested files."""
    from ..corpus.store import DocumentStore

    with DocumentStore.open(store_dir) as store:
        return store.stats(), store.files()


def store_article(store_dir: str | Path, pmid: str) -> Article:
    """One article of a store; an ``InputError`` when the store lacks it."""
    from ..corpus.store import DocumentStore

    with DocumentStore.open(store_dir) as store:
        article = store.get(pmid)
    if article is None:
        raise InputError(f"PMID {pmid} is not in the store at {store_dir}",
                         hint=f"list what is there with `medcite corpus stats --store {store_dir}`")
    return article


def sync_mirror(dest: str, base_url: str | None, *, baseline: bool, updates: bool, since: str | None,
                limit: int | None, retries: int, backoff_s: float, timeout_s: float,
                retry_quarantined: bool) -> SyncReport:
    """Download into ``dest`` the PubMed files not yet there, each verified against its .md5."""
    from ..corpus import nlm_sync as ns

    opts = ns.SyncOptions(folders=ns.select_folders(baseline, updates), since=since, limit=limit,
                          retries=retries, backoff_s=backoff_s, timeout_s=timeout_s,
                          retry_quarantined=retry_quarantined)
    return ns.sync(dest, base_url or ns.DEFAULT_BASE_URL, opts)


def ingest_mirror(dest: str, store_dir: str, *, on_error: OnError, batch_size: int,
                  wait_s: float) -> tuple[Ingested | None, str | None]:
    """Apply a mirror's verified files to a store in NLM order: what was ingested (None when nothing was) and,
    when the plan stopped early, before which file and why."""
    from ..corpus.ingest import ingest
    from ..corpus.nlm_sync import ingest_plan
    from ..corpus.store import DocumentStore

    paths, stopped = ingest_plan(dest)
    if not paths:
        return None, stopped
    with DocumentStore.create(store_dir, wait_s=wait_s) as store:
        results = ingest(paths, store, on_error=on_error, batch_size=batch_size)
        total = len(store)
    return Ingested(results, total), stopped
