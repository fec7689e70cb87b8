"""Embedding-similarity reranking: cosine similarity between the query vector and each article vector,
from any dense encoder (Reimers & Gurevych 2019, "Sentence-BERT"; PJs-team BioASQ 13b uses such
rerankers as ensemble members).

The encoder is anything with the :class:`medcite.index.dense.encoders.Encoder` shape
(``encode_queries(texts)``, ``encode_documents(articles)``); by default the packaged all-MiniLM-L6-v2.
Article vectors are not encoded twice: when a vector index that the retrieval branches opened was built
with the same encoder (same fingerprint), its stored vectors are used; the others are kept in a cache,
so overlapping candidates of several sub-queries are encoded once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from ..registry import stage_field
from ..types import Article
from .base import RerankConfig, swapped
from .scoring import LRU, PointwiseReranker, article_key

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

DEFAULT_MODEL = "minilm"

#: PMIDs -> stored vectors of those an index holds (a :meth:`VectorIndex.get_vectors`)
VectorLookup = Callable[[Sequence[str]], Mapping[str, np.ndarray]]


class TextEncoder(Protocol):
    """What this reranker needs from an encoder (a subset of the dense index's Encoder protocol)."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray: ...


class EmbeddingConfig(RerankConfig):
    """Cosine similarity of encoder vectors (query vs title + abstract)."""

    backend: Literal["embedding"] = "embedding"
    model: stage_field("encoder") = Field(  # type: ignore[valid-type]
        DEFAULT_MODEL, validate_default=True,
        description="The encoder: 'minilm' (packaged), a name or folder, models:NAME, or a full encoder config.",
    )

    def model_names(self) -> list[str]:
        return self.model.model_names()  # type: ignore[no-any-return,attr-defined]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """A hub encoder is replaced by the packaged MiniLM."""
        return swapped(self, {"model": "minilm"})


def cosine(query: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Cosine similarity of one query vector with each row of ``docs`` (a zero vector scores 0)."""
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    d = np.asarray(docs, dtype=np.float64)
    qn = np.linalg.norm(q)
    dn = np.linalg.norm(d, axis=1)
    denom = np.where(dn * qn > 0, dn * qn, 1.0)
    return np.asarray((d @ q) / denom, dtype=np.float64)


@runtime_checkable
class StoredVectors(Protocol):
    """An index that keeps its articles' vectors and the encoder that made them (a reranker may reuse them)."""

    encoder: object

    def get_vectors(self, pmids: Sequence[str]) -> dict[str, np.ndarray]: ...


def index_vectors(ctx: BuildContext, encoder: object) -> VectorLookup | None:
    """``get_vectors`` of a vector index the context opened with an encoder of the same fingerprint."""
    fingerprint = getattr(encoder, "fingerprint", None)
    for name, index in ctx.open_indexes().items():
        if (fingerprint and isinstance(index, StoredVectors)
                and getattr(index.encoder, "fingerprint", None) == fingerprint):
            log.info("reranker reuses the stored article vectors of index %r", name)
            return index.get_vectors
    return None


class DocumentVectors:
    """Article vectors from an index's stored ones, a cache, or the encoder (in that order)."""

    def __init__(self, encode: Callable[[Sequence[Article]], np.ndarray], lookup: VectorLookup | None = None,
                 size: int = 20_000) -> None:
        self.encode = encode
        self.lookup = lookup
        self._cache: LRU[np.ndarray] = LRU(size)
        self.encoded = 0  # articles encoded here (for logs and tests)

    def __call__(self, articles: Sequence[Article]) -> np.ndarray:
        keys = [article_key(a) for a in articles]
        found: list[np.ndarray | None] = [self._cache.lookup(k) for k in keys]
        if self.lookup is not None and any(f is None for f in found):
            stored = self.lookup([a.pmid for a, f in zip(articles, found, strict=True) if f is None])
            found = [f if f is not None else stored.get(a.pmid) for a, f in zip(articles, found, strict=True)]
        todo = [i for i, f in enumerate(found) if f is None]
        if todo:
            fresh = np.asarray(self.encode([articles[i] for i in todo]), dtype=np.float32)
            self.encoded += len(todo)
            for i, vec in zip(todo, fresh, strict=True):
                found[i] = vec
        filled = [v for v in found if v is not None]  # every one by now (zip's strict says so)
        for key, vec in zip(keys, filled, strict=True):
            self._cache.store(key, vec)
        return np.stack([np.asarray(v, dtype=np.float32) for v in filled]) if filled else np.zeros((0, 0))


class EmbeddingReranker(PointwiseReranker):
    """Reorders hits by cosine similarity of encoder vectors (query vs title + abstract)."""

    name = "embedding"
    Config = EmbeddingConfig

    def __init__(self, encoder: TextEncoder, *, top_n: int | None = 100, lookup: VectorLookup | None = None) -> None:
        super().__init__(top_n)
        self.encoder = encoder
        self.documents = DocumentVectors(encoder.encode_documents, lookup)

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig, ctx: BuildContext) -> EmbeddingReranker:
        encoder = ctx.encoder(cfg.model)
        return cls(encoder, top_n=cfg.top_n, lookup=index_vectors(ctx, encoder))

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        if not articles:
            return []
        qvec = np.asarray(self.encoder.encode_queries([query]))[0]
        return [float(s) for s in cosine(qvec, self.documents(articles))]
