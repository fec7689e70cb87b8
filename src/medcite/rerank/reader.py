"""Reranking with medcite's reader (:mod:`medcite.reader`): its relevance head, fine-tuned end to end on BioASQ
(question, snippet) pairs with retrieval hard negatives, reads the question and each passage together.

A snippet is a sentence or two, an abstract ten times that; so an article is read as overlapping word windows
(the title, then ``window_words`` words of the abstract, a new window every ``stride_words``) and scored by its
best window: MaxP (Dai & Callan 2019, "Deeper Text Understanding for IR with Contextual Neural Language
Modeling"). The reader's score can be blended with the order it is given (``input_weight``): both min-max
normalised per query, ``(1 - w) * reader + w * input``, so a first stage or learning-to-rank model that
already orders well is refined rather than thrown away. The defaults (top 50, one window, input weight 0.8) were
chosen after ``best``'s LTR on 151 questions neither the reader nor benchmarks/bench_reader_rerank.py's 300 test
questions share; there the stage adds 0.002 MAP@10 (1.128x vs 1.125x BM25), and alone it ranks below BM25:
its relevance head learnt snippets, not abstracts (docs/BENCHMARKS.md, "The reader as best's reranker"). So
no preset uses it; ``--set rerank.backend=reader`` or a ``cascade`` after ``ltr`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ..devices import Device, Dtype, device_field, dtype_field
from ..types import Article, Hit
from .base import RerankConfig
from .scoring import PointwiseReranker, candidates, rescored

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..reader.infer import Reader

log = logging.getLogger(__name__)

DEFAULT_READER = "models:medcite-reader"


class ReaderRerankConfig(RerankConfig):
    """medcite's reader scores each candidate by its most relevant abstract window (MaxP)."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["reader"] = "reader"
    model: str = Field(DEFAULT_READER, description="The reader: models:NAME (shipped or trained by `medcite train "
                       "reader`) or its folder; it needs a relevance head.")
    top_n: int = Field(50, ge=1, description="Best input hits read (each costs up to `max_windows` forward passes).")
    window_words: int = Field(90, ge=1, description="Abstract words per window (the title is read with each).")
    stride_words: int = Field(60, ge=1, description="Words between the starts of two windows (overlap = "
                              "window_words - stride_words).")
    max_windows: int = Field(1, ge=1, description="Windows read per article at most (the first ones).")
    input_weight: float = Field(0.8, ge=0.0, le=1.0, description="Weight of the input order's score (min-max "
                                "normalised per query) against the reader's: 0 = the reader alone.")
    batch_size: int | None = Field(
        None, ge=1, description="Pairs per forward pass; None: by device (32 on the CPU, 64 on a GPU)."
    )
    device: Device = device_field("the reader (int8 on the CPU)")
    dtype: Dtype = dtype_field("the reader")

    @model_validator(mode="after")
    def _stride(self) -> ReaderRerankConfig:
        if self.stride_words > self.window_words:
            raise ValueError(f"stride_words ({self.stride_words}) must not exceed window_words "
                             f"({self.window_words}): words between windows would never be read")
        return self

    def model_names(self) -> list[str]:
        return [self.model]


def windows(article: Article, window_words: int, stride_words: int, max_windows: int) -> list[str]:
    """The passages an article is read as: its title followed by each window of abstract words."""
    title = article.title.strip()
    words = article.abstract.split()
    if not words:
        return [title] if title else []
    out: list[str] = []
    start = 0
    while len(out) < max_windows:
        chunk = " ".join(words[start: start + window_words])
        out.append(f"{title} {chunk}".strip() if title else chunk)
        if start + window_words >= len(words):
            break
        start += stride_words
    return out


def minmax(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """``values`` mapped onto [0, 1] (all equal: all 0)."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return v
    span = float(v.max() - v.min())
    return (v - v.min()) / span if span > 0 else np.zeros_like(v)


def blend(read: Sequence[float], inputs: Sequence[float], weight: float) -> np.ndarray:
    """``(1 - weight) * reader + weight * input``, both min-max normalised (``weight`` 0: the reader's scores as they
    are); an article the reader could not read (-inf) counts as the least relevant one read."""
    r = np.asarray(read, dtype=np.float64)
    if weight <= 0:
        return r
    finite = np.isfinite(r)
    r = np.where(finite, r, r[finite].min() if finite.any() else 0.0)
    return (1.0 - weight) * minmax(r) + weight * minmax(inputs)


class ReaderReranker(PointwiseReranker):
    """Scores each candidate by the reader's best relevance logit over its windows (MaxP), optionally blended
    with the input order's score."""

    name = "reader"
    Config = ReaderRerankConfig

    def __init__(self, reader: Reader, cfg: ReaderRerankConfig) -> None:
        super().__init__(cfg.top_n)
        reader.need("relevance")
        self.reader, self.cfg = reader, cfg

    @classmethod
    def from_config(cls, cfg: ReaderRerankConfig, ctx: BuildContext | None) -> ReaderReranker:
        """The reader is loaded once per (folder, resolved device and dtype) and shared through ``ctx.models`` (the
        offline answerer and the stance classifier read with the same one)."""
        from ..reader.infer import load_reader, reader_folder, reader_placement

        folder = reader_folder(cfg.model, "rerank.model")
        placed = reader_placement(folder, cfg.device, cfg.dtype, batch_size=cfg.batch_size, setting="rerank")

        def load() -> Any:
            return load_reader(folder, placement=placed)

        key = ("reader", str(folder), placed.device, placed.dtype)
        reader = load() if ctx is None else ctx.models.get(key, load)
        return cls(reader, cfg)

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        """Per article, its best window's relevance logit (an article with no text: -inf)."""
        passages: list[str] = []
        owner: list[int] = []
        for i, article in enumerate(articles):
            for text in windows(article, self.cfg.window_words, self.cfg.stride_words, self.cfg.max_windows):
                passages.append(text)
                owner.append(i)
        best = np.full(len(articles), -np.inf)
        if passages:
            logits = self.reader.relevance(query, passages)
            np.maximum.at(best, np.asarray(owner), logits.astype(np.float64))
        return [float(x) for x in best]

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        pool = candidates(hits, articles, self.top_n)
        if not pool or k <= 0:
            return []
        read = self.cached_scores(query, [articles[h.pmid] for h in pool])
        return rescored(pool, list(blend(read, [h.score for h in pool], self.cfg.input_weight)), k)
