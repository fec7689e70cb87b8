"""What ``medcite cache`` does: the LLM cache's statistics, and clearing it (all of it, the old replies or the
rejected ones). Opening a cache file that is not there would create it, so each returns None for a missing file."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm.cache import CacheStats


def cache_path(cache_dir: str | None) -> Path:
    """The cache file of ``llm.cache_dir`` (None: $MEDCITE_CACHE_DIR or ~/.cache/medcite)."""
    from ..llm.cache import cache_file

    return cache_file(cache_dir)


def cache_stats(cache_dir: str | None) -> CacheStats | None:
    """What the cache holds: replies and rejected ones per backend, model and server, oldest and newest (None: no
    cache file)."""
    from ..llm.cache import LLMCache

    path = cache_path(cache_dir)
    if not path.is_file():
        return None
    cache = LLMCache(path)
    try:
        return cache.stats()
    finally:
        cache.close()


@dataclass(frozen=True)
class Cleared:
    """What ``clear_cache`` did: replies deleted, replies left, and what opening the file found (an older cache, a
    file that was not one), if anything."""

    path: Path
    deleted: int
    left: int
    found: str | None


def clear_cache(cache_dir: str | None, *, older_than: datetime | None = None,
                rejected_only: bool = False) -> Cleared | None:
    """Delete cached replies (all, those stored before ``older_than``, or only the rejected ones) and give their
    space back (None: no cache file)."""
    from ..llm.cache import LLMCache

    path = cache_path(cache_dir)
    if not path.is_file():
        return None
    cache = LLMCache(path)
    try:
        deleted = cache.clear(older_than=older_than, rejected_only=rejected_only)
        if deleted:
            cache.vacuum()
        return Cleared(path, deleted, len(cache), cache.found)
    finally:
        cache.close()
