"""The MedCPT reranking pipeline (Jin et al. 2023, "MedCPT: Contrastive Pre-trained Transformers with
large-scale PubMed search logs for zero-shot biomedical information retrieval"), as the CLaC 2025 BioGen
systems run it:

1. the query variants (original question plus reformulations) are encoded by the MedCPT query encoder
   and their vectors averaged;
2. every pooled article is encoded by the MedCPT article encoder ([title, abstract], CLS pooling) and
   rescored by inner product with that average (``similarity="cosine"``: by cosine, as CLaC 2025 §8.2 states);
   the best ``bi_top`` (80) go on;
3. the MedCPT cross-encoder reads [question, title + abstract] (at most 512 tokens); the best
   ``cross_top`` (24) are kept, and the final ``k`` (16 evidence documents) cuts further.

The encoders come from the dense index's ``hf-asymmetric`` backend; the cross-encoder is loaded like
any other (:mod:`.cross_encoder`), with raw logits as scores.

Offline stand-ins (MedCPT is hub-only): ``encoder`` replaces both MedCPT encoders by one encoder (``minilm``,
the packaged all-MiniLM-L6-v2; step 2 is then the averaged MiniLM query vector against MiniLM article vectors)
and ``cross`` replaces the cross-encoder by another pointwise reranker (``embedding``: MiniLM cosine of the
question alone, so step 3 still reorders the shortlist by the question rather than by the averaged
variants). The budgets (80 -> 24 -> k) stay. The pipeline passes the whole query set
(:class:`~medcite.rerank.base.VariantReranker`), so step 1 averages every variant; article vectors come
from a dense index built with the same MedCPT article encoder when the branches opened one, else they are
encoded once per article and cached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..devices import Device, Dtype, device_field, dtype_field
from ..errors import ConfigError
from ..registry import stage_field
from ..set_option import set_line
from ..types import Article, Hit
from .base import RerankConfig, swapped
from .cross_encoder import CrossEncoderConfig
from .embedding import DocumentVectors, TextEncoder, VectorLookup, index_vectors
from .scoring import PointwiseReranker, candidates, check_top_n, rescored

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)


class MedCPTConfig(RerankConfig):
    """The MedCPT chain: bi-encoder rescoring with averaged query variants, then the MedCPT cross-encoder."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["medcpt"] = "medcpt"
    query_model: str = Field("ncbi/MedCPT-Query-Encoder", description="MedCPT query encoder (name or folder).")
    article_model: str = Field("ncbi/MedCPT-Article-Encoder", description="MedCPT article encoder (name or folder).")
    cross_model: str = Field("ncbi/MedCPT-Cross-Encoder", description="MedCPT cross-encoder (name or folder).")
    bi_top: int = Field(80, ge=1, description="Pool hits kept after bi-encoder rescoring, read by the cross-encoder.")
    cross_top: int = Field(24, ge=1, description="Hits kept after the cross-encoder (the final k cuts further).")
    similarity: Literal["dot", "cosine"] = Field(
        "dot", description="Bi-encoder score of an article against the averaged query vector: 'dot' (inner "
        "product, MedCPT's training objective) or 'cosine' (CLaC 2025 §8.2: \"Candidates are ranked by cosine "
        "similarity\")."
    )
    query_max_length: int = Field(64, ge=8, description="Query encoder truncation in tokens.")
    article_max_length: int = Field(512, ge=8, description="Article encoder and cross-encoder truncation in tokens.")
    batch_size: int | None = Field(
        None, ge=1, description="Texts or pairs per forward pass; None: by device (32 on the CPU; on a GPU 128 for "
        "the encoders and 64 for the cross-encoder)."
    )
    device: Device = device_field("the MedCPT encoders and cross-encoder")
    dtype: Dtype = dtype_field("the MedCPT encoders and cross-encoder")
    encoder: stage_field("encoder") | None = Field(  # type: ignore[valid-type]
        None, description="Stand-in for both MedCPT encoders (e.g. 'minilm', the packaged all-MiniLM-L6-v2, "
        "offline); None: query_model and article_model.")
    cross: stage_field("rerank") | None = Field(  # type: ignore[valid-type]
        None, description="A pointwise reranker standing in for the MedCPT cross-encoder (e.g. 'embedding': "
        "MiniLM cosine of the question alone, offline); None: cross_model.")

    def model_names(self) -> list[str]:
        encoders = self.encoder.model_names() if self.encoder is not None else [self.query_model, self.article_model]
        cross = self.cross.model_names() if self.cross is not None else [self.cross_model]
        return [*encoders, *cross]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """The packaged MiniLM for the encoders and the cross-encoder that are not ``available``; budgets kept."""
        changes: dict[str, object] = {}
        if self.encoder is None and not (available(self.query_model) and available(self.article_model)):
            changes["encoder"] = "minilm"
        elif self.encoder is not None and not all(available(m) for m in self.encoder.model_names()):
            changes["encoder"] = "minilm"
        if self.cross is None and not available(self.cross_model):
            changes["cross"] = "embedding"
        elif self.cross is not None and not all(available(m) for m in self.cross.model_names()):
            cross = self.cross.offline_swap(available)
            if cross is None:
                return None
            changes["cross"] = cross
        return swapped(self, changes)


def medcpt_encoder_spec(query_model: str, article_model: str, *, query_max_length: int = 64,
                       article_max_length: int = 512, batch_size: int | None = None, device: str = "auto",
                       dtype: str = "auto") -> dict[str, object]:
    """The encoder config of MedCPT's query and article encoders (CLS pooling, inner product) by name or folder;
    the build context loads it (``ctx.encoder(spec)``)."""
    return {"backend": "hf-asymmetric", "model": article_model, "query_model": query_model,
            "normalize": False, "query_max_length": query_max_length, "doc_max_length": article_max_length,
            "batch_size": batch_size, "device": device, "dtype": dtype}


class MedCPTReranker:
    """Averaged query-variant vectors -> bi-encoder top ``bi_top`` -> cross-encoder top ``cross_top`` -> ``k``."""

    name = "medcpt"
    Config = MedCPTConfig

    def __init__(self, encoder: TextEncoder, cross: PointwiseReranker, *, bi_top: int = 80,
                 cross_top: int = 24, top_n: int | None = None, lookup: VectorLookup | None = None,
                 similarity: str = "dot") -> None:
        if bi_top < 1 or cross_top < 1:
            raise ConfigError(f"MedCPT budgets must be at least 1, got bi_top={bi_top}, cross_top={cross_top}",
                              hint="the paper's values are rerank.medcpt.bi_top=80 and cross_top=24")
        self.encoder = encoder
        self.cross = cross
        self.bi_top = bi_top
        self.cross_top = cross_top
        if similarity not in ("dot", "cosine"):
            raise ConfigError(f"unknown MedCPT similarity {similarity!r}", hint="choose 'dot' or 'cosine'")
        self.similarity = similarity
        self.top_n = check_top_n(top_n)
        self.documents = DocumentVectors(encoder.encode_documents, lookup)

    @classmethod
    def from_config(cls, cfg: MedCPTConfig, ctx: BuildContext) -> MedCPTReranker:
        encoder = ctx.encoder(cfg.encoder if cfg.encoder is not None else medcpt_encoder_spec(
            cfg.query_model, cfg.article_model, query_max_length=cfg.query_max_length,
            article_max_length=cfg.article_max_length, batch_size=cfg.batch_size, device=cfg.device,
            dtype=cfg.dtype))
        # the paper's cross-encoder (raw logits, the article length of the bi-encoder) unless `cross` names one
        cross_cfg = cfg.cross if cfg.cross is not None else CrossEncoderConfig(
            model=cfg.cross_model, batch_size=cfg.batch_size, max_length=cfg.article_max_length, activation="raw",
            device=cfg.device, dtype=cfg.dtype)
        cross = ctx.build("rerank", cross_cfg)
        if not isinstance(cross, PointwiseReranker):
            raise ConfigError(f"rerank.cross must be a pointwise reranker, got {cross_cfg.backend!r}",
                              hint=f"e.g. {set_line('rerank.cross', 'embedding')} or rerank.cross=cross-encoder:DIR")
        return cls(encoder, cross, bi_top=cfg.bi_top, cross_top=cfg.cross_top, top_n=cfg.top_n,
                   lookup=index_vectors(ctx, encoder), similarity=cfg.similarity)

    def query_vector(self, queries: Sequence[str]) -> np.ndarray:
        """The mean of the query variants' vectors."""
        vecs = np.asarray(self.encoder.encode_queries(list(queries)), dtype=np.float64)
        return vecs.mean(axis=0)

    def bi_encoder_stage(self, queries: Sequence[str], pool: Sequence[Hit],
                         articles: Mapping[str, Article]) -> list[Hit]:
        """The pool rescored by inner product (or cosine) with the averaged query vector, best ``bi_top``."""
        docs = np.asarray(self.documents([articles[h.pmid] for h in pool]), dtype=np.float64)
        query = self.query_vector(queries)
        if self.similarity == "cosine":
            docs = docs / np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
            query = query / max(float(np.linalg.norm(query)), 1e-12)
        return rescored(pool, list(docs @ query), self.bi_top)

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
        scores = self.cross.cached_scores(queries[0], [articles[h.pmid] for h in shortlist])
        log.debug("MedCPT: %d pooled -> %d by bi-encoder -> %d", len(pool), len(shortlist),
                  min(self.cross_top, k))
        return rescored(shortlist, scores, min(self.cross_top, k))

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        return self.rerank_variants([query], hits, articles, k)
