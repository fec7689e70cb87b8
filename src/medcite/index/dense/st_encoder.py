"""Symmetric sentence-transformers encoder (Reimers & Gurevych 2019, "Sentence-BERT").

One model encodes queries and articles (``title + " " + abstract``). Any Hugging Face name or local
folder works; the default ``minilm`` is the packaged all-MiniLM-L6-v2, loaded with no network.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from ...devices import Dtype
from ...errors import ConfigError
from ...io import JSONObject
from ...registry import require
from ...types import Article
from .encoders import (
    MINILM_ALIASES,
    EncoderConfig,
    encode_batched,
    encoder_placement,
    l2_normalize,
    make_fingerprint,
    model_identity,
    packaged_minilm_dir,
    resolve_model,
)

if TYPE_CHECKING:
    from ...context import BuildContext

log = logging.getLogger(__name__)


#: model-name pattern -> (query prefix, document prefix) as each family's model card prescribes; the model was
#: trained with them, and without them its queries and passages land in the wrong places of its space
FAMILY_PREFIXES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    # E5 (Wang et al. 2022): "query: " / "passage: " on every input
    (re.compile(r"(^|/)(multilingual-)?e5-", re.I), "query: ", "passage: "),
    # nomic-embed and nomic's ModernBERT embedders: task prefixes
    (re.compile(r"^nomic-ai/(nomic-embed-text|modernbert-embed)", re.I), "search_query: ", "search_document: "),
    # BGE v1 / v1.5 English (Xiao et al. 2023): an instruction on short retrieval queries, none on passages
    (re.compile(r"^BAAI/bge-(small|base|large)-en", re.I),
     "Represent this sentence for searching relevant passages: ", ""),
)


def known_prefixes(model: str) -> tuple[str, str]:
    """The (query, document) prefixes of ``model``'s family, or ("", "") for a model that uses none."""
    for pattern, query, document in FAMILY_PREFIXES:
        if pattern.search(model.strip()):
            return query, document
    return "", ""


class STEncoderConfig(EncoderConfig):
    """A symmetric sentence-transformers bi-encoder."""

    backend: Literal["sentence-transformers"] = "sentence-transformers"
    model: str = Field(
        "minilm", description="'minilm' (the packaged all-MiniLM-L6-v2, offline), a Hugging Face name, a local "
        "folder, or models:NAME (trained by `medcite train encoder`)."
    )
    query_prefix: str | None = Field(
        None, description="Text put before every query; None = the model family's own (e5: 'query: ', nomic: "
        "'search_query: ', BGE v1/v1.5 English: its retrieval instruction; others: none); '' = none."
    )
    document_prefix: str | None = Field(
        None, description="Text put before every article; None = the model family's own (e5: 'passage: ', "
        "nomic: 'search_document: ', others: none); '' = none."
    )

    def model_names(self) -> list[str]:
        return [] if self.model.strip().lower() in MINILM_ALIASES else [self.model]

    def identity(self) -> JSONObject:
        # unset prefixes (the family's own, decided by the model name) leave the identity, and so every existing
        # index folder name, as it was before prefixes were settable; no query prefix ('' : queries embedded as
        # the articles are, DS@GT's "the query was similarly embedded") changes no stored vector either
        data = super().identity()
        for key in ("query_prefix", "document_prefix"):
            if data.get(key) is None or (key == "query_prefix" and data.get(key) == ""):
                data.pop(key, None)
        return data


class SentenceTransformerEncoder:
    """A sentence-transformers bi-encoder used for both queries and documents."""

    Config = STEncoderConfig

    def __init__(
        self,
        model: str = "minilm",
        *,
        normalize: bool | None = None,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        batch_size: int | None = None,
        device: str = "auto",
        dtype: Dtype = "auto",
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        family = known_prefixes(model)
        self.query_prefix = family[0] if query_prefix is None else query_prefix
        self.document_prefix = family[1] if document_prefix is None else document_prefix
        st = require("sentence_transformers", "dense", "the sentence-transformers encoder")
        if model.strip().lower() in MINILM_ALIASES:
            folder = str(packaged_minilm_dir())
        else:
            folder = resolve_model(model)
        # resolved before the model loads: a device this machine lacks fails here, with the fix
        self.placement = encoder_placement(model, device, dtype, batch_size)
        try:
            self._model = st.SentenceTransformer(folder, device=self.placement.device)
            self.placement.to(self._model)
        except ConfigError:
            raise
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
        self.batch_size = int(self.placement.batch_size or 32)
        self.device, self.dtype = self.placement.device, self.placement.dtype
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
            # only when set, so the vector space of a model without prefixes keeps its fingerprint
            **({"query_prefix": self.query_prefix} if self.query_prefix else {}),
            **({"document_prefix": self.document_prefix} if self.document_prefix else {}),
        )
        log.info("loaded sentence-transformers encoder %s (dim %d%s)", model, self.dim,
                 f", prefixes {self.query_prefix!r} / {self.document_prefix!r}"
                 if self.query_prefix or self.document_prefix else "")

    @classmethod
    def from_config(cls, cfg: STEncoderConfig, ctx: BuildContext | None = None) -> SentenceTransformerEncoder:
        return cls(cfg.model, normalize=cfg.normalize, query_max_length=cfg.query_max_length,
                   doc_max_length=cfg.doc_max_length, batch_size=cfg.batch_size, device=cfg.device, dtype=cfg.dtype,
                   query_prefix=cfg.query_prefix, document_prefix=cfg.document_prefix)

    def _encode(self, texts: list[str], max_length: int | None = None) -> np.ndarray:
        """Encode; a ``max_length`` other than the model's is passed per call (the shared model is not changed)."""
        extra: dict[str, Any] = {}
        if max_length is not None and max_length != self._model.max_seq_length:
            extra["processing_kwargs"] = {"text": {"max_length": max_length}}
        out: Any = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
            **extra,
        )
        vecs = np.asarray(out, dtype=np.float32)
        # half precision normalises to within ~1 %: normalise again in float32 (an index assumes unit vectors)
        return l2_normalize(vecs) if self.normalize and self.dtype != "float32" else vecs

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return encode_batched(
            [self.query_prefix + t for t in texts],
            lambda batch: self._encode(batch, self.query_max_length),
            length=len,
            batch_size=self.batch_size,
            dim=self.dim,
            desc="encode queries",
        )

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        texts = [self.document_prefix + a.text for a in articles]
        return encode_batched(
            texts, self._encode, length=len, batch_size=self.batch_size, dim=self.dim, desc="encode articles"
        )

