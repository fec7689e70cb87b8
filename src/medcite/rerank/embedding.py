"""Embedding-similarity reranking: cosine similarity between the query vector and each article vector,
from any dense encoder (Reimers & Gurevych 2019, "Sentence-BERT"; PJs-team BioASQ 13b uses such
rerankers as ensemble members).

The encoder is anything with the :class:`medcite.index.dense.encoders.Encoder` shape
(``encode_queries(texts)``, ``encode_documents(articles)``); by default the packaged all-MiniLM-L6-v2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..types import Article
from .scoring import PointwiseReranker

if TYPE_CHECKING:
    from ..config import RerankSettings

DEFAULT_MODEL = "minilm"


class TextEncoder(Protocol):
    """What this reranker needs from an encoder (a subset of the dense index's Encoder protocol)."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray: ...


def cosine(query: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Cosine similarity of one query vector with each row of ``docs`` (a zero vector scores 0)."""
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    d = np.asarray(docs, dtype=np.float64)
    qn = np.linalg.norm(q)
    dn = np.linalg.norm(d, axis=1)
    denom = np.where(dn * qn > 0, dn * qn, 1.0)
    return np.asarray((d @ q) / denom, dtype=np.float64)


def load_text_encoder(model: str, *, batch_size: int = 32, device: str = "cpu") -> Any:
    """A dense encoder by name or folder, through the dense index's encoder factory."""
    from ..index.dense.encoders import load_encoder

    spec = {"encoder": model, "query_encoder": None, "normalize": True, "query_max_length": None,
            "doc_max_length": None}
    return load_encoder(spec, batch_size=batch_size, device=device)


class EmbeddingReranker(PointwiseReranker):
    """Reorders hits by cosine similarity of encoder vectors (query vs title + abstract)."""

    name = "embedding"

    def __init__(self, encoder: TextEncoder, *, top_n: int | None = 100) -> None:
        super().__init__(top_n)
        self.encoder = encoder

    @classmethod
    def from_settings(cls, settings: RerankSettings) -> EmbeddingReranker:
        encoder = load_text_encoder(
            settings.model or DEFAULT_MODEL, batch_size=settings.batch_size, device=settings.device
        )
        return cls(encoder, top_n=settings.top_n)

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        if not articles:
            return []
        qvec = np.asarray(self.encoder.encode_queries([query]))[0]
        dvecs = np.asarray(self.encoder.encode_documents(list(articles)))
        return [float(s) for s in cosine(qvec, dvecs)]
