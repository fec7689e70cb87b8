"""What a medcite Milvus collection holds (:class:`Layout`: the settings' indexes that Milvus serves), the
names of its fields, and the analyzer of its BM25 fields."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...io import JSONObject
from ..base import digest
from .configs import MilvusBM25Config, MilvusDenseConfig

if TYPE_CHECKING:
    from ...config import Settings
    from ...milvus_settings import MilvusSettings

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")


def field_name(prefix: str, index: str) -> str:
    name = f"{prefix}_{index}"
    if not _NAME.match(name):
        raise ConfigError(
            f"index name {index!r} cannot name a Milvus field ({name!r}): use letters, digits and underscores",
            hint="rename the entry of `indexes` (and the branches that point at it)",
        )
    return name


@dataclass
class Layout:
    """What the collection holds: the sparse and vector indexes of the settings that Milvus serves."""

    sparse: dict[str, MilvusBM25Config] = field(default_factory=dict)
    vector: dict[str, MilvusDenseConfig] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings | Mapping[str, object]) -> Layout:
        """The Milvus indexes of ``settings`` (or of its ``indexes`` mapping, as a build context hands it over)."""
        indexes = settings if isinstance(settings, Mapping) else settings.indexes
        layout = cls()
        for name, cfg in sorted(indexes.items()):
            if isinstance(cfg, MilvusBM25Config):
                layout.sparse[name] = cfg
            elif isinstance(cfg, MilvusDenseConfig):
                layout.vector[name] = cfg
        return layout

    def identity(self) -> JSONObject:
        return {"sparse": {n: c.identity() for n, c in self.sparse.items()},
                "vector": {n: c.identity() for n, c in self.vector.items()}}

    def collection_name(self, server: MilvusSettings, store_id: str) -> str:
        if server.collection:
            return server.collection
        return f"medcite_{store_id[:12]}_{digest(self.identity())[:8]}"


def analyzer_params(cfg: MilvusBM25Config) -> JSONObject:
    """Milvus's analyzer for the same analysis as the embedded BM25 backends: lowercase, tokens of at most
    100 characters, Lucene's stop words (+ the possessive "s"), Snowball English stemmer."""
    from ..sparse.base import MAX_TOKEN_CHARS, stopword_list

    filters: list[Any] = ["lowercase", {"type": "length", "max": MAX_TOKEN_CHARS},
                          {"type": "stop", "stop_words": stopword_list(cfg)}]
    if cfg.stemmer == "english":
        filters.append({"type": "stemmer", "language": "english"})
    return {"tokenizer": "standard", "filter": filters}
