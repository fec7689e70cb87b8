"""Document stores for the tests: a store holding given articles, in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article


def store_of(path: Path, articles: Sequence[Article]) -> Path:
    """A new document store at ``path`` holding ``articles`` (one ingest, named ``fixture``); returns ``path``."""
    with DocumentStore.create(path) as s, s.transaction() as tx:
        tx.upsert(list(articles), FileStats("fixture"))
    return path
