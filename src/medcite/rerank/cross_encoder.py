"""Cross-encoder reranking (Nogueira & Cho 2019, "Passage Re-ranking with BERT"): the query and each
article are read together by a transformer with a one-logit head.

Any sentence-transformers ``CrossEncoder`` loads by hub name or folder: the MS MARCO MiniLM models used
by CLaC and PJs (``cross-encoder/ms-marco-MiniLM-L-6-v2``, ``-L-12-v2``), ``ncbi/MedCPT-Cross-Encoder``,
and models trained by ``medcite train reranker`` (plain Hugging Face folders).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..devices import Device, Dtype, Placement, device_field, dtype_field, place
from ..errors import ConfigError
from ..registry import require
from ..types import Article
from .base import MINILM_STAND_IN, RerankConfig, swapped
from .scoring import PointwiseReranker, document_text, local_model_dir, not_available

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

MINILM_L6 = "cross-encoder/ms-marco-MiniLM-L-6-v2"
MINILM_L12 = "cross-encoder/ms-marco-MiniLM-L-12-v2"
# short names accepted wherever a model name is
ALIASES = {"minilm-l6": MINILM_L6, "minilm-l12": MINILM_L12, "medcpt-cross": "ncbi/MedCPT-Cross-Encoder"}

Activation = Literal["sigmoid", "raw"]


class CrossEncoderConfig(RerankConfig):
    """A cross-encoder reads [query, title + abstract] and scores relevance."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["cross-encoder"] = "cross-encoder"
    model: str = Field(
        MINILM_L6, description="Model name or folder: ms-marco MiniLM (minilm-l6, minilm-l12), "
        "ncbi/MedCPT-Cross-Encoder, or models:NAME trained by `medcite train reranker`."
    )
    batch_size: int | None = Field(
        None, ge=1, description="Pairs scored per forward pass; None: by device (32 on the CPU, 64 on a GPU)."
    )
    max_length: int = Field(512, ge=8, description="Token limit of a (query, document) pair.")
    activation: Activation = Field(
        "sigmoid", description="Scores: 'sigmoid' probabilities or 'raw' logits (same order)."
    )
    device: Device = device_field("the cross-encoder")
    dtype: Dtype = dtype_field("the cross-encoder")
    quantize: bool = Field(
        False, description="On CPU: dynamic int8 quantization of the linear layers (25-35 % less rerank time "
        "on 2 cores; scores change, see docs/BENCHMARKS.md); device 'auto' then means the CPU."
    )

    def model_names(self) -> list[str]:
        return [ALIASES.get(self.model, self.model)]

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """No cross-encoder ships in a package: the packaged MiniLM bi-encoder scores the same top_n, keeps k."""
        return swapped(self, MINILM_STAND_IN)


def cross_encoder_placement(name_or_path: str, device: str = "auto", dtype: str = "auto", *,
                            quantize: bool = False, batch_size: int | None = None) -> Placement:
    """Where the cross-encoder runs (:func:`medcite.devices.place`); int8 quantization keeps it on the CPU."""
    return place(f"rerank cross-encoder {ALIASES.get(name_or_path, name_or_path)}", device, dtype, setting="rerank",
                 batch_size=batch_size, batch_defaults=(32, 64), cpu_only="int8 quantization" if quantize else "")


def load_cross_encoder(
    name_or_path: str, *, max_length: int = 512, device: str = "auto", dtype: str = "auto", quantize: bool = False,
    placement: Placement | None = None,
) -> Any:
    """Load a sentence-transformers ``CrossEncoder`` from a folder or a hub name (offline: the HF cache), on the
    device and in the dtype its settings resolve to (``placement``, when already resolved).

    ``quantize=True`` (CPU only) swaps every linear layer for a dynamically quantized int8 one
    (:func:`quantize_int8`): 25-35 % less rerank time on 2 CPU cores, at some cost in ranking quality
    (both measured in docs/BENCHMARKS.md).
    Raises ConfigError when a name cannot be loaded, saying how to supply a local copy, and when the device
    asked for is not on this machine (before anything loads).
    """
    placed = placement or cross_encoder_placement(name_or_path, device, dtype, quantize=quantize)
    st = require("sentence_transformers", "rerank", "the cross-encoder reranker")
    name = ALIASES.get(name_or_path, name_or_path)
    folder = local_model_dir(name)
    try:
        model = st.CrossEncoder(
            str(folder) if folder else name, max_length=max_length, device=placed.device,
            local_files_only=folder is not None,
        )
    except OSError as exc:
        raise not_available(name, "cross-encoder", exc) from exc
    placed.to(model)
    if model.num_labels != 1:
        raise ConfigError(
            f"cross-encoder {name!r} has {model.num_labels} output labels; a reranker needs exactly one",
            hint="use a relevance model with a one-logit head (e.g. one trained by `medcite train reranker`)",
        )
    if quantize:
        quantize_int8(model)
    log.info("loaded cross-encoder %s (max_length %d%s)", name, max_length, ", int8" if quantize else "")
    return model


def quantize_int8(module: Any) -> Any:
    """Replace, in place, each ``torch.nn.Linear`` of ``module`` by a dynamically quantized int8 linear
    layer (weights int8 once, activations quantized per batch; PyTorch's ``quantize_dynamic``)."""
    import warnings

    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch marks its eager quantization API deprecated in favour of torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(module.eval(), {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


class CrossEncoderReranker(PointwiseReranker):
    """Scores ``[query, title + abstract]`` pairs with a cross-encoder, in batches.

    ``activation="sigmoid"`` gives probabilities in (0, 1); ``"raw"`` gives the logits (the order is the
    same; raw logits suit weighted ensembles that normalise scores themselves).
    """

    name = "cross-encoder"
    Config = CrossEncoderConfig

    def __init__(
        self,
        model: str = MINILM_L6,
        *,
        batch_size: int | None = None,
        max_length: int = 512,
        activation: Activation = "sigmoid",
        top_n: int | None = 100,
        device: str = "auto",
        dtype: str = "auto",
        quantize: bool = False,
        loaded: Any | None = None,
    ) -> None:
        super().__init__(top_n)
        if activation not in ("sigmoid", "raw"):
            raise ConfigError(f"unknown activation {activation!r}", hint="use 'sigmoid' or 'raw'")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self.placement = cross_encoder_placement(model, device, dtype, quantize=quantize, batch_size=batch_size)
        self.model_name = model
        self.batch_size = int(self.placement.batch_size or 32)
        self.activation = activation
        if loaded is None:
            loaded = load_cross_encoder(model, max_length=max_length, quantize=quantize, placement=self.placement)
        self.model = loaded

    @classmethod
    def from_config(cls, cfg: CrossEncoderConfig, ctx: BuildContext) -> CrossEncoderReranker:
        """The model is loaded once per (name, length, resolved device and dtype, quantization) and shared through
        ``ctx.models``."""
        placed = cross_encoder_placement(cfg.model, cfg.device, cfg.dtype, quantize=cfg.quantize)
        key = ("cross-encoder", cfg.model, cfg.max_length, placed.device, placed.dtype, cfg.quantize)
        loaded = ctx.models.get(key, lambda: load_cross_encoder(
            cfg.model, max_length=cfg.max_length, quantize=cfg.quantize, placement=placed))
        return cls(cfg.model, batch_size=cfg.batch_size, max_length=cfg.max_length, activation=cfg.activation,
                   top_n=cfg.top_n, device=cfg.device, dtype=cfg.dtype, quantize=cfg.quantize, loaded=loaded)

    def score_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        """Scores of (query, text) pairs, in the order given."""
        if not texts:
            return []
        import torch

        act = torch.nn.Sigmoid() if self.activation == "sigmoid" else torch.nn.Identity()
        pairs = [(query, t) for t in texts]
        scores = self.model.predict(
            pairs, batch_size=self.batch_size, activation_fn=act, show_progress_bar=False
        )
        return [float(s) for s in scores]

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        return self.score_texts(query, [document_text(a) for a in articles])
