"""Symmetric sentence-transformers encoder (Reimers & Gurevych 2019, "Sentence-BERT").

One model encodes queries and articles (``title + " " + abstract``). Any Hugging Face name or local
folder works; the default ``minilm`` is the packaged all-MiniLM-L6-v2, loaded with no network.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...registry import require
from ...types import Article
from .encoders import (
    MINILM_ALIASES,
    encode_batched,
    make_fingerprint,
    model_identity,
    packaged_minilm_dir,
    resolve_model,
)

log = logging.getLogger(__name__)


class SentenceTransformerEncoder:
    """A sentence-transformers bi-encoder used for both queries and documents."""

    def __init__(
        self,
        model: str = "minilm",
        *,
        query_model: str | None = None,
        normalize: bool | None = None,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        if query_model:
            raise ConfigError(
                "the sentence-transformers backend is symmetric: it takes no separate query encoder",
                hint="use backend 'hf-asymmetric' for separate query/article models, or drop query_encoder",
            )
        st = require("sentence_transformers", "dense", "the sentence-transformers encoder")
        if model.strip().lower() in MINILM_ALIASES:
            folder = str(packaged_minilm_dir())
        else:
            folder = resolve_model(model)
        try:
            self._model = st.SentenceTransformer(folder, device=device)
        except Exception as exc:  # a folder with a config but unusable weights, or a failed download
            raise ConfigError(
                f"cannot load sentence-transformers model {model!r} ({type(exc).__name__}: {exc})",
                hint="give a folder saved with SentenceTransformer.save() or save_pretrained(), or a "
                "Hugging Face name that is in the local cache",
            ) from None
        if doc_max_length:
            self._model.max_seq_length = int(doc_max_length)
        self.query_max_length = int(query_max_length) if query_max_length else self._model.max_seq_length
        self.doc_max_length = int(self._model.max_seq_length)
        self.normalize = True if normalize is None else bool(normalize)
        self.batch_size = batch_size
        self.name = model
        getter = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = getter()
        if not dim:
            raise ConfigError(f"model {model!r} does not report its embedding size", hint="use another model")
        self.dim = int(dim)
        self.fingerprint = make_fingerprint(
            kind="symmetric",
            identity=model_identity(folder),
            max_length=self.doc_max_length,
            query_max_length=self.query_max_length,
            normalize=self.normalize,
            dim=self.dim,
        )
        log.info("loaded sentence-transformers encoder %s (dim %d)", model, self.dim)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out: Any = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        doc_len = self._model.max_seq_length
        self._model.max_seq_length = self.query_max_length
        try:
            return encode_batched(
                list(texts),
                self._encode,
                length=len,
                batch_size=self.batch_size,
                dim=self.dim,
                desc="encode queries",
            )
        finally:
            self._model.max_seq_length = doc_len

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        texts = [a.text for a in articles]
        return encode_batched(
            texts, self._encode, length=len, batch_size=self.batch_size, dim=self.dim, desc="encode articles"
        )
