"""Index a document store in a Milvus collection (``medcite index milvus``): BM25 text fields and the vectors of
every named index of the settings, synced through the build context of those settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_settings
from ..io import JSONObject

if TYPE_CHECKING:
    from ..config import Settings


@dataclass
class MilvusSync:
    """The settings used, the collection's fields and the sync report (JSON from the collection)."""

    settings: Settings
    fields: list[str]
    report: JSONObject


def sync_milvus(store: Path, preset: str, overrides: Sequence[str], *, uri: str | None = None,
                collection: str | None = None, rebuild: bool = False) -> MilvusSync:
    """Create, resume or update the Milvus collection of ``store`` (``index.backend=milvus`` is implied)."""
    from ..corpus.store import DocumentStore
    from ..index.milvus.collection import MilvusCollection
    from ..pipeline.context import Context

    extra = ["index.backend=milvus"]
    extra += [f"index.milvus.{k}={v}" for k, v in (("uri", uri), ("collection", collection)) if v is not None]
    settings = load_settings(preset, [*overrides, *extra])
    with DocumentStore.open(store) as docs, Context(settings, docs) as ctx:
        coll = MilvusCollection.open(ctx, create=True, rebuild=rebuild)
        report = coll.last_report
    return MilvusSync(settings, [*coll.layout.sparse, *coll.layout.vector], report)
