"""Stance by a sequence-classification model: medcite's trained classifier (``classifier``) or an NLI
cross-encoder by Hugging Face name (``nli``, e.g. ``cross-encoder/nli-deberta-v3-base``; Dalhousie 2025 and
CLaC 2024 judged support with NLI-style models).

The model reads (evidence passage, claim) — premise first, as NLI models are trained — and its labels are
mapped by name: entailment/supports -> supports, contradiction/refutes -> contradicts, neutral/not enough
info -> neutral. A model whose labels cannot be mapped is refused with the labels it has.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..errors import ConfigError
from ..registry import require
from .base import PassageClassifier, StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

TRAINED = "models:medcite-stance-healthver"
NLI = "cross-encoder/nli-deberta-v3-base"
_NAMES = {
    0: ("supports", "support", "supported", "entailment", "entails", "entail"),
    1: ("contradicts", "contradict", "contradiction", "refutes", "refute", "refuted"),
    2: ("neutral", "not enough info", "not_enough_info", "nei", "notenoughinfo"),
}


class ClassifierStanceConfig(StanceConfig):
    """A sequence-classification model over (evidence passage, claim) pairs."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device"})

    backend: Literal["classifier", "nli"]
    model: str = Field(
        TRAINED, description="Model name or folder: models:medcite-stance-healthver (trained by `medcite train "
        "stance`), an NLI cross-encoder such as cross-encoder/nli-deberta-v3-base, or a local folder."
    )
    max_length: int = Field(160, ge=16, description="Token limit of a (passage, claim) pair.")
    batch_size: int = Field(32, ge=1, description="Pairs per forward pass.")
    device: str = Field("cpu", description="Torch device ('cpu', 'cuda', ...).")

    def model_names(self) -> list[str]:
        return [self.model]


def label_columns(id2label: dict[int, str]) -> list[int]:
    """For each of (supports, contradicts, neutral), the model's output column; ConfigError if unmappable."""
    names = {int(i): str(v).strip().lower().replace("-", " ") for i, v in id2label.items()}
    cols = []
    for want in range(3):
        found = [i for i, n in names.items() if n in _NAMES[want] or n.replace(" ", "_") in _NAMES[want]]
        if len(found) != 1:
            raise ConfigError(
                f"cannot tell which output of the stance model means {_NAMES[want][0]!r}: its labels are "
                f"{sorted(names.values())}",
                hint="use a 3-way model labelled supports/contradicts/neutral (medcite train stance) or "
                "entailment/contradiction/neutral (an NLI model)",
            )
        cols.append(found[0])
    return cols


def load_classifier(name: str, device: str = "cpu") -> tuple[Any, Any, list[int]]:
    """(tokenizer, model, label columns) from a folder, models:NAME, or a hub name (offline: the HF cache)."""
    from ..paths import resolve_models_ref
    from ..rerank.scoring import local_model_dir, not_available

    transformers = require("transformers", "rerank", "the stance classifier")
    folder = local_model_dir(resolve_models_ref(name, "medcite train stance"))
    source = str(folder) if folder else name
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=folder is not None)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            source, local_files_only=folder is not None)
    except OSError as exc:
        raise not_available(name, "stance", exc) from exc
    model.eval()
    model.to(device)
    return tokenizer, model, label_columns(dict(model.config.id2label))


class ClassifierStance(PassageClassifier):
    """Three-way stance probabilities from a sequence-classification model, in length-sorted batches."""

    name = "classifier"
    Config = ClassifierStanceConfig

    def __init__(self, tokenizer: Any, model: Any, columns: Sequence[int], *, max_length: int = 256,
                 batch_size: int = 32, device: str = "cpu", whole_text_chars: int = 1500,
                 sentences: int = 3) -> None:
        super().__init__(whole_text_chars, sentences)
        self._torch = require("torch", "rerank", "the stance classifier")
        self.tokenizer, self.model, self.columns = tokenizer, model, list(columns)
        self.max_length, self.batch_size, self.device = max_length, batch_size, device

    @classmethod
    def from_config(cls, cfg: ClassifierStanceConfig, ctx: BuildContext | None) -> ClassifierStance:
        def load() -> tuple[Any, Any, list[int]]:
            return load_classifier(cfg.model, cfg.device)

        tokenizer, model, columns = ctx.models.get(("stance", cfg.model, cfg.device), load) if ctx else load()
        return cls(tokenizer, model, columns, max_length=cfg.max_length, batch_size=cfg.batch_size,
                   device=cfg.device, whole_text_chars=cfg.whole_text_chars, sentences=cfg.sentences)

    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(claims), 3), dtype=np.float64)
        order = sorted(range(len(claims)), key=lambda i: -(len(claims[i]) + len(passages[i])))
        for start in range(0, len(order), self.batch_size):
            idx = order[start: start + self.batch_size]
            enc = self.tokenizer([passages[i] for i in idx], [claims[i] for i in idx], truncation="longest_first",
                                 max_length=self.max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self.model(**enc).logits.float()
            probs = torch.softmax(logits[:, self.columns], dim=-1).cpu().numpy()
            out[idx] = probs
        return out
