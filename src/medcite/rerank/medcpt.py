"""The MedCPT reranking pipeline (Jin et al. 2023, "MedCPT: Contrastive Pre-trained Transformers with
large-scale PubMed search logs for zero-shot biomedical information retrieval"), as the CLaC 2025 BioGen
systems run it:

1. the query variants (original question plus reformulations) are encoded by the MedCPT query encoder
   and their vectors averaged;
2. every pooled article is encoded by the MedCPT article encoder ([title, abstract], CLS pooling) and
   rescored by inner product with that average; the best ``bi_top`` (80) go on;
3. the MedCPT cross-encoder reads [question, title + abstract] (at most 512 tokens); the best
   ``cross_top`` (24) are kept, and the final ``k`` (16 evidence documents) cuts further.

The encoders come from the dense index's ``hf-asymmetric`` backend; the cross-encoder is loaded like
any other (:mod:`.cross_encoder`), with raw logits as scores.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..types import Article, Hit
from .cross_encoder import CrossEncoderReranker
from .embedding import TextEncoder
from .scoring import candidates, check_top_n, document_text, rescored

if TYPE_CHECKING:
    from ..config import RerankSettings

log = logging.getLogger(__name__)


def load_medcpt_encoder(query_model: str, article_model: str, *, query_max_length: int = 64,
                        article_max_length: int = 512, batch_size: int = 32, device: str = "cpu") -> Any:
    """MedCPT's query and article encoders (CLS pooling, inner product) by name or folder."""
    from ..index.dense.encoders import load_encoder

    spec = {"backend": "hf-asymmetric", "encoder": article_model, "query_encoder": query_model,
            "normalize": False, "query_max_length": query_max_length, "doc_max_length": article_max_length}
    return load_encoder(spec, batch_size=batch_size, device=device)


class MedCPTReranker:
    """Averaged query-variant vectors -> bi-encoder top ``bi_top`` -> cross-encoder top ``cross_top`` -> ``k``."""

    name = "medcpt"

    def __init__(self, encoder: TextEncoder, cross: CrossEncoderReranker, *, bi_top: int = 80,
                 cross_top: int = 24, top_n: int | None = None) -> None:
        if bi_top < 1 or cross_top < 1:
            raise ConfigError(f"MedCPT budgets must be at least 1, got bi_top={bi_top}, cross_top={cross_top}",
                              hint="the paper's values are rerank.medcpt.bi_top=80 and cross_top=24")
        self.encoder = encoder
        self.cross = cross
        self.bi_top = bi_top
        self.cross_top = cross_top
        self.top_n = check_top_n(top_n)

    @classmethod
    def from_settings(cls, settings: RerankSettings) -> MedCPTReranker:
        m = settings.medcpt
        encoder = load_medcpt_encoder(m.query_model, m.article_model, query_max_length=m.query_max_length,
                                      article_max_length=m.article_max_length, batch_size=settings.batch_size,
                                      device=settings.device)
        cross = CrossEncoderReranker(m.cross_model, batch_size=settings.batch_size,
                                     max_length=m.article_max_length, activation="raw", top_n=None,
                                     device=settings.device)
        return cls(encoder, cross, bi_top=m.bi_top, cross_top=m.cross_top, top_n=settings.top_n)

    def query_vector(self, queries: Sequence[str]) -> np.ndarray:
        """The mean of the query variants' vectors."""
        vecs = np.asarray(self.encoder.encode_queries(list(queries)), dtype=np.float64)
        return vecs.mean(axis=0)

    def bi_encoder_stage(self, queries: Sequence[str], pool: Sequence[Hit],
                         articles: Mapping[str, Article]) -> list[Hit]:
        """The pool rescored by inner product with the averaged query vector, best ``bi_top``."""
        docs = np.asarray(self.encoder.encode_documents([articles[h.pmid] for h in pool]), dtype=np.float64)
        return rescored(pool, list(docs @ self.query_vector(queries)), self.bi_top)

    def rerank_variants(self, queries: Sequence[str], hits: Sequence[Hit], articles: Mapping[str, Article],
                        k: int) -> list[Hit]:
        """Rerank with several query variants; ``queries[0]`` (the question) is what the cross-encoder reads."""
        queries = [q for q in queries if q and q.strip()]
        if not queries:
            raise ConfigError("MedCPT reranking needs at least one non-empty query")
        pool = candidates(hits, articles, self.top_n)
        if not pool or k <= 0:
            return []
        shortlist = self.bi_encoder_stage(queries, pool, articles)
        scores = self.cross.score_texts(queries[0], [document_text(articles[h.pmid]) for h in shortlist])
        log.debug("MedCPT: %d pooled -> %d by bi-encoder -> %d", len(pool), len(shortlist),
                  min(self.cross_top, k))
        return rescored(shortlist, scores, min(self.cross_top, k))

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        return self.rerank_variants([query], hits, articles, k)
