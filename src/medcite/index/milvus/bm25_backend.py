"""BM25 full-text search on a Milvus server (``milvus-bm25``): Milvus's BM25 function over the analysed
title + abstract of each article, in the store's collection (:mod:`.collection`).

Analysis is configured to match the embedded backends (:func:`.layout.analyzer_params`): lowercase,
Lucene's English stop words, tokens of at most 100 characters, Snowball English stemmer. Differences that
remain: Milvus's ``standard`` tokenizer splits by Unicode word boundaries (UAX #29) where tantivy splits on
every non-alphanumeric character, and Milvus scores with exact document lengths where tantivy quantises
them (Lucene's one-byte norms); Milvus Lite tokenizes on ``\\w+`` and has no stemmer. BM25 is Robertson &
Zaragoza (2009) with Lucene's idf in both engines; k1 and b are set on the index.

Term statistics (document count, document frequencies), which the ``ltr`` reranker's features read, come from
an embedded index of the store with this index's analysis (:meth:`MilvusBM25Index.term_statistics`): Milvus
keeps its BM25 statistics inside its segments and has no call that reports them, and its analysis can differ
from medcite's (Milvus Lite has no stemmer), where the features count the terms of medcite's own analyzer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from ...errors import ConfigError
from ...io import JSONObject
from ...types import Hit
from ..sparse.base import SparseConfig, stopword_list
from .collection import MilvusCollection
from .configs import MilvusBM25Config, raise_unknown
from .layout import field_name

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore
    from ..base import TermStatistics

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")


class MilvusBM25Index:
    """A ``SparseIndex`` over the BM25 field of the store's Milvus collection."""

    Config = MilvusBM25Config

    def __init__(self, collection: MilvusCollection, name: str, settings: MilvusBM25Config,
                 store: DocumentStore | None = None) -> None:
        self.collection = collection
        self.name = name
        self.settings = settings
        self.store = store
        self._stats: TermStatistics | None = None
        self.field = field_name("bm25", name)
        self._stop = frozenset(stopword_list(settings))
        self.manifest: JSONObject = {"backend": settings.backend, "collection": collection.name,
                                         "uri": collection.server.uri, "field": self.field}

    @classmethod
    def from_config(cls, cfg: MilvusBM25Config, ctx: BuildContext) -> MilvusBM25Index:
        coll = MilvusCollection.open(ctx)
        name = next((n for n, c in coll.layout.sparse.items() if c == cfg), None)
        if name is None:  # a config built by hand, not an entry of ctx.settings.indexes
            raise_unknown(cfg.backend)
        return cls(coll, name, cfg, ctx.store)

    def __len__(self) -> int:
        return len(self.collection)

    def term_statistics(self) -> TermStatistics:
        """The documents and document frequencies of the store's analysed terms, exactly as the tantivy backend
        reports them: a tantivy index of the store with this index's analysis (stemmer, stop words) under
        ``<store>/indexes``, the folder a tantivy entry with that analysis uses (a store indexed before with the
        embedded default reuses it; `medcite index bm25 --store STORE` builds it ahead). Built on first use,
        then brought up to date with the store's additions, replacements and deletions each time an index
        object opens it (once per pipeline, as the embedded indexes are), never per query."""
        if self._stats is None:
            if self.store is None:
                raise ConfigError(f"the term statistics of the {self.settings.backend} index {self.name!r} are "
                                  "counted from its document store, and none was given",
                                  hint="pass --corpus STORE (or build the index through a context with a store)")
            from ..base import index_folder
            from ..manifest import MANIFEST
            from ..sparse.base import ensure_sparse

            cfg = statistics_config(self.settings)
            folder = index_folder(self.store.path, cfg)
            if not (folder / MANIFEST).exists():
                log.warning("counting the term statistics of the %s index %r once, in a tantivy index of the store "
                            "(%d articles) at %s; it follows the store from then on", self.settings.backend,
                            self.name, len(self.store), folder)
            # a tantivy index: its doc_freq and len are the statistics
            self._stats = cast("TermStatistics", ensure_sparse(self.store, cfg))
        return self._stats

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


def statistics_config(cfg: MilvusBM25Config) -> SparseConfig:
    """The embedded index that counts ``cfg``'s terms: tantivy with the same analysis over the same text (title +
    abstract, one ``contents`` field), so its ``doc_freq`` and ``len`` are the tantivy backend's own."""
    from ... import registry

    made = registry.validate_config("index", {"backend": "tantivy", "stemmer": cfg.stemmer,
                                              "stopwords": cfg.stopwords, "heap_mb": cfg.heap_mb,
                                              "threads": cfg.threads})
    assert isinstance(made, SparseConfig)
    return made
