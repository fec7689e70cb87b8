"""BM25 full-text search on a Milvus server (``milvus-bm25``): Milvus's BM25 function over the analysed
title + abstract of each article, in the store's collection (:mod:`.collection`).

Analysis is configured to match the embedded backends (:func:`.layout.analyzer_params`): lowercase,
Lucene's English stop words, tokens of at most 100 characters, Snowball English stemmer. Differences that
remain: Milvus's ``standard`` tokenizer splits by Unicode word boundaries (UAX #29) where tantivy splits on
every non-alphanumeric character, and Milvus scores with exact document lengths where tantivy quantises
them (Lucene's one-byte norms); Milvus Lite tokenizes on ``\\w+`` and has no stemmer. BM25 is Robertson &
Zaragoza (2009) with Lucene's idf in both engines; k1 and b are set on the index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from ...types import Hit
from ..sparse.base import SparseConfig, stopword_list
from .collection import MilvusCollection
from .layout import field_name

if TYPE_CHECKING:
    from ...context import BuildContext

_WORD = re.compile(r"\w+")


class MilvusBM25Config(SparseConfig):
    """BM25 by Milvus's full-text search function, on the server of ``index.milvus``."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"heap_mb", "threads"})

    backend: Literal["milvus-bm25"] = "milvus-bm25"
    k1: float = Field(1.2, gt=0, description="BM25 k1 (Milvus index parameter bm25_k1; tantivy's 1.2 by default).")
    b: float = Field(0.75, ge=0, le=1, description="BM25 b (Milvus index parameter bm25_b; tantivy's 0.75 by default).")
    fields: list[Literal["contents"]] = Field(
        default_factory=lambda: ["contents"],  # type: ignore[arg-type,return-value]
        description="Scored fields: Milvus indexes 'contents' (title + abstract as one field) only.",
    )

    @field_validator("stemmer")
    @classmethod
    def _stemmers(cls, value: str) -> str:
        if value == "porter":
            raise ValueError("Milvus's stemmer filter is Snowball ('english'), it has no Porter (1980) stemmer: "
                             "use stemmer 'english' or 'none'")
        return value


class MilvusBM25Index:
    """A ``SparseIndex`` over the BM25 field of the store's Milvus collection."""

    Config = MilvusBM25Config

    def __init__(self, collection: MilvusCollection, name: str, settings: MilvusBM25Config) -> None:
        self.collection = collection
        self.name = name
        self.settings = settings
        self.field = field_name("bm25", name)
        self._stop = frozenset(stopword_list(settings))
        self.manifest: dict[str, Any] = {"backend": settings.backend, "collection": collection.name,
                                         "uri": collection.server.uri, "field": self.field}

    @classmethod
    def from_config(cls, cfg: MilvusBM25Config, ctx: BuildContext) -> MilvusBM25Index:
        coll = MilvusCollection.open(ctx)
        name = next((n for n, c in coll.layout.sparse.items() if c == cfg), None)
        if name is None:  # a config built by hand, not an entry of ctx.settings.indexes
            raise_unknown(cfg.backend)
        return cls(coll, name, cfg)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.collection)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def indexable(self, query: str) -> bool:
        """Whether ``query`` has a word the analyzer keeps (not a stop word)."""
        return any(w not in self._stop for w in _WORD.findall(query.lower()))

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        # a text with no indexable word (empty, punctuation, stop words only) finds nothing; the server is not
        # asked, as some Milvus versions refuse an empty BM25 query
        asked = [i for i, q in enumerate(queries) if self.indexable(q)]
        out: list[list[Hit]] = [[] for _ in queries]
        found = self.collection.search(self.field, [queries[i] for i in asked], k, {"metric_type": "BM25"})
        for i, hits in zip(asked, found, strict=True):
            out[i] = hits
        return out

    def close(self) -> None:
        """The collection (and its connection) belongs to the context's model cache, which closes it."""


def raise_unknown(backend: str) -> None:
    from ...errors import ConfigError

    raise ConfigError(f"a {backend} index must be an entry of the settings' `indexes`",
                      hint="name it under `indexes` (e.g. --set indexes.bm25.backend=milvus-bm25)")
