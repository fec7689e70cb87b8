"""Asymmetric query/article encoders with CLS pooling (Jin et al. 2023, "MedCPT").

MedCPT encodes a query with ``ncbi/MedCPT-Query-Encoder`` (at most 64 tokens) and an article with
``ncbi/MedCPT-Article-Encoder`` on the pair [title, abstract] (at most 512 tokens); both take the
[CLS] vector of the last layer and compare by inner product (no normalisation), which is also how
NCBI's precomputed PubMed embeddings were made. Any two transformers folders of equal hidden size
work the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ...devices import Dtype, Placement
from ...errors import ConfigError
from ...registry import require
from ...types import Article
from .encoders import (
    ASYMMETRIC_PRESETS,
    EncoderConfig,
    encode_batched,
    encoder_placement,
    l2_normalize,
    make_fingerprint,
    model_identity,
    resolve_model,
)

if TYPE_CHECKING:
    from ...context import BuildContext

log = logging.getLogger(__name__)

QUERY_MAX_LENGTH = 64
ARTICLE_MAX_LENGTH = 512


class AsymmetricConfig(EncoderConfig):
    """Separate query and article transformers with [CLS] pooling (MedCPT by default)."""

    backend: Literal["hf-asymmetric"] = "hf-asymmetric"
    model: str = Field(ASYMMETRIC_PRESETS["medcpt"][1], description="Article encoder (name or folder).")
    query_model: str = Field(ASYMMETRIC_PRESETS["medcpt"][0], description="Query encoder (name or folder).")

    #: BERT-base at up to 512 tokens: far slower than MiniLM
    typical_docs_per_s: ClassVar[tuple[float, float]] = (5.0, 200.0)

    def model_names(self) -> list[str]:
        return [self.query_model, self.model]


def _load(name: str, role: str, placement: Placement) -> tuple[Any, Any, str]:
    transformers = require("transformers", "dense", "the hf-asymmetric encoder")
    folder = resolve_model(name, role=role)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModel.from_pretrained(folder)
    except Exception as exc:  # unusable folder or failed download: say which model and what to do
        raise ConfigError(
            f"cannot load the {role} model {name!r} ({type(exc).__name__}: {exc})",
            hint="give a folder written by save_pretrained() with both the model and its tokenizer",
        ) from None
    model.eval()
    placement.to(model)
    return tokenizer, model, folder


class AsymmetricEncoder:
    """Separate transformers for queries and articles, [CLS] pooling, MedCPT token limits."""

    Config = AsymmetricConfig

    def __init__(
        self,
        model: str = "medcpt",
        *,
        query_model: str | None = None,
        normalize: bool | None = None,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        batch_size: int | None = None,
        device: str = "auto",
        dtype: Dtype = "auto",
    ) -> None:
        preset = ASYMMETRIC_PRESETS.get(model.strip().lower())
        if preset:
            query_model = query_model or preset[0]
            model = preset[1]
        if not query_model:
            raise ConfigError(
                f"the hf-asymmetric backend needs a query encoder besides the article encoder {model!r}",
                hint="set the encoder's query_model (--query-encoder), or use --encoder medcpt",
            )
        self._torch = require("torch", "dense", "the hf-asymmetric encoder")
        # resolved before the models load: a device this machine lacks fails here, with the fix
        self.placement = encoder_placement(f"{query_model}+{model}", device, dtype, batch_size)
        self._q_tok, self._q_model, q_folder = _load(query_model, "query encoder", self.placement)
        self._d_tok, self._d_model, d_folder = _load(model, "article encoder", self.placement)
        q_dim, d_dim = int(self._q_model.config.hidden_size), int(self._d_model.config.hidden_size)
        if q_dim != d_dim:
            raise ConfigError(
                f"query encoder {query_model!r} gives {q_dim}-d vectors, "
                f"article encoder {model!r} gives {d_dim}-d",
                hint="pair a query and an article encoder trained together (same hidden size)",
            )
        self.device, self.dtype = self.placement.device, self.placement.dtype
        self.dim = d_dim
        self.query_max_length = int(query_max_length or QUERY_MAX_LENGTH)
        self.doc_max_length = int(doc_max_length or ARTICLE_MAX_LENGTH)
        self.normalize = bool(normalize) if normalize is not None else False
        self.batch_size = int(self.placement.batch_size or 32)
        self.name = f"{query_model}+{model}"
        self.fingerprint = make_fingerprint(
            kind="asymmetric-cls",
            query_identity=model_identity(q_folder),
            doc_identity=model_identity(d_folder),
            query_max_length=self.query_max_length,
            doc_max_length=self.doc_max_length,
            normalize=self.normalize,
            dim=self.dim,
        )
        log.info("loaded asymmetric encoder %s (dim %d)", self.name, self.dim)

    @classmethod
    def from_config(cls, cfg: AsymmetricConfig, ctx: BuildContext | None = None) -> AsymmetricEncoder:
        return cls(cfg.model, query_model=cfg.query_model, normalize=cfg.normalize,
                   query_max_length=cfg.query_max_length, doc_max_length=cfg.doc_max_length,
                   batch_size=cfg.batch_size, device=cfg.device, dtype=cfg.dtype)

    def _cls(self, model: Any, batch: Any) -> np.ndarray:
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with self._torch.inference_mode():
            out = model(**batch).last_hidden_state[:, 0, :]
        vecs = out.float().cpu().numpy()
        return l2_normalize(vecs) if self.normalize else vecs

    def _queries(self, texts: list[str]) -> np.ndarray:
        enc = self._q_tok(
            texts, truncation=True, padding=True, max_length=self.query_max_length, return_tensors="pt"
        )
        return self._cls(self._q_model, enc)

    def _articles(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        enc = self._d_tok(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            truncation=True,
            padding=True,
            max_length=self.doc_max_length,
            return_tensors="pt",
        )
        return self._cls(self._d_model, enc)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return encode_batched(
            list(texts),
            self._queries,
            length=len,
            batch_size=self.batch_size,
            dim=self.dim,
            desc="encode queries",
        )

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        pairs = [(a.title, a.abstract) for a in articles]
        return encode_batched(
            pairs,
            self._articles,
            length=lambda p: len(p[0]) + len(p[1]),
            batch_size=self.batch_size,
            dim=self.dim,
            desc="encode articles",
        )
