"""Stance by a sequence-classification model: medcite's trained classifier (``classifier``) or an NLI
cross-encoder by Hugging Face name (``nli``, e.g. ``cross-encoder/nli-deberta-v3-base``; Dalhousie 2025 and
CLaC 2024 judged support with NLI-style models).

medcite's reader (``models:medcite-reader``, written by ``medcite train reader``: the packaged MiniLM fine-tuned
end to end, :mod:`medcite.reader`) judges with its stance head, reading (claim, passage) with the token limit it
was trained with. A folder written by ``medcite train stance`` holds a frozen encoder and a linear head over its
features of the pair (:mod:`.probe`; its feature spec fixes the token limit). Any other folder or name is a
sequence-classification model that reads (evidence passage, claim) — premise first, as NLI models are
trained — whose labels are mapped by name: entailment/supports -> supports, contradiction/refutes ->
contradicts, neutral/not enough info -> neutral. A model whose labels cannot be mapped is refused with the
labels it has.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..devices import Device, Dtype, Placement, device_field, dtype_field, place
from ..errors import ConfigError
from ..registry import require
from .base import PassageClassifier, StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

TRAINED = "models:medcite-reader"
NLI = "cross-encoder/nli-deberta-v3-base"
_NAMES = {
    0: ("supports", "support", "supported", "entailment", "entails", "entail"),
    1: ("contradicts", "contradict", "contradiction", "refutes", "refute", "refuted"),
    2: ("neutral", "not enough info", "not_enough_info", "nei", "notenoughinfo"),
}


class ClassifierStanceConfig(StanceConfig):
    """A sequence-classification model over (evidence passage, claim) pairs."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["classifier", "nli"]
    model: str = Field(
        TRAINED, description="Model name or folder: models:medcite-reader (medcite's reader, its stance head; "
        "`medcite train reader`), a head of `medcite train stance`, an NLI cross-encoder such as "
        "cross-encoder/nli-deberta-v3-base, or a local folder."
    )
    max_length: int = Field(160, ge=16, description="Token limit of a (passage, claim) pair (a sequence-"
                            "classification model; a trained stance head keeps the limit it was trained with).")
    batch_size: int | None = Field(
        None, ge=1, description="Pairs per forward pass; None: by device (32 on the CPU, 64 on a GPU)."
    )
    device: Device = device_field("the stance model")
    dtype: Dtype = dtype_field("the stance model")

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


class SequenceClassifierModel:
    """A Hugging Face sequence-classification model over (passage, claim) pairs, labels mapped by name."""

    def __init__(self, tokenizer: Any, model: Any, columns: Sequence[int], device: str = "cpu") -> None:
        # ``device``: where ``model`` already is (load_classifier placed it)
        self._torch = require("torch", "rerank", "the stance classifier")
        self.tokenizer, self.model, self.columns, self.device = tokenizer, model, list(columns), device

    def probabilities(self, claims: Sequence[str], passages: Sequence[str], *, max_length: int,
                      batch_size: int) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(claims), 3), dtype=np.float64)
        order = sorted(range(len(claims)), key=lambda i: -(len(claims[i]) + len(passages[i])))
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            enc = self.tokenizer([passages[i] for i in idx], [claims[i] for i in idx], truncation="longest_first",
                                 max_length=max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self.model(**enc).logits.float()
            out[idx] = torch.softmax(logits[:, self.columns], dim=-1).cpu().numpy()
        return out


class ProbeModel:
    """medcite's trained stance model: a frozen encoder's features and a linear head (:mod:`.probe`)."""

    def __init__(self, tokenizer: Any, encoder: Any, head: Any, device: str = "cpu") -> None:
        self.tokenizer, self.encoder, self.head, self.device = tokenizer, encoder, head, device

    def probabilities(self, claims: Sequence[str], passages: Sequence[str], *, max_length: int,
                      batch_size: int) -> np.ndarray:
        from .probe import Featurizer

        if not claims:
            return np.zeros((0, 3))
        feats = Featurizer(self.tokenizer, self.encoder, self.head.spec, batch_size=batch_size,
                           device=self.device)(claims, passages)
        return np.asarray(self.head.probabilities(feats), dtype=np.float64)


class ReaderStanceModel:
    """medcite's reader, its stance head over (claim, passage) (:mod:`medcite.reader`)."""

    def __init__(self, reader: Any) -> None:
        reader.need("stance")
        self.reader = reader

    def probabilities(self, claims: Sequence[str], passages: Sequence[str], *, max_length: int,
                      batch_size: int) -> np.ndarray:
        if not claims:
            return np.zeros((0, 3))
        return np.asarray(self.reader.probabilities("stance", list(claims), list(passages)), dtype=np.float64)


StanceModel = SequenceClassifierModel | ProbeModel | ReaderStanceModel


def stance_placement(name: str, device: str = "auto", dtype: str = "auto", batch_size: int | None = None
                     ) -> Placement:
    """Where a stance model runs (:func:`medcite.devices.place`)."""
    return place(f"stance {name}", device, dtype, setting="stance", batch_size=batch_size, batch_defaults=(32, 64))


def load_classifier(name: str, device: str = "auto", dtype: str = "auto") -> StanceModel:
    """The stance model in a folder, ``models:NAME`` or a hub name (offline: only from the HF cache).

    A reader folder (``reader.json``) is read by its stance head; a folder with ``stance_head.json`` (written by
    ``medcite train stance``) is a frozen encoder with a linear head; any other is a sequence-classification
    model whose labels are mapped by name.
    """
    from ..reader.model import SPEC_FILE, is_reader_folder
    from ..rerank.scoring import local_model_dir, not_available
    from ..trained_models import resolve
    from .probe import HEAD_FILE, LinearHead, encoder_source, is_probe_folder

    transformers = require("transformers", "rerank", "the stance classifier")
    folder = local_model_dir(resolve(name, "medcite train reader --healthver HEALTHVER.csv"),
                             heads=(HEAD_FILE, SPEC_FILE))
    source = str(folder) if folder else name
    if folder is not None and is_reader_folder(folder):
        from ..reader.infer import load_reader

        return ReaderStanceModel(load_reader(folder, device=device, dtype=dtype, setting="stance"))
    placed = stance_placement(name, device, dtype)  # before loading: a device this machine lacks fails here
    try:
        if folder is not None and is_probe_folder(folder):
            head = LinearHead.load(folder)
            if head.encoder is not None:  # the head alone: its encoder is named (the packaged MiniLM)
                source = encoder_source(head.encoder)
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=True)
            encoder = transformers.AutoModel.from_pretrained(source, local_files_only=True)
            encoder.eval()
            placed.to(encoder)
            return ProbeModel(tokenizer, encoder, head, placed.device)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=folder is not None)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            source, local_files_only=folder is not None)
    except OSError as exc:
        raise not_available(name, "stance", exc) from exc
    model.eval()
    placed.to(model)
    return SequenceClassifierModel(tokenizer, model, label_columns(dict(model.config.id2label)), placed.device)


class ClassifierStance(PassageClassifier):
    """Three-way stance probabilities from a trained stance model or a sequence-classification model."""

    name = "classifier"
    Config = ClassifierStanceConfig

    def __init__(self, model: StanceModel, *, max_length: int = 256,
                 batch_size: int = 32, whole_text_chars: int = 1500, sentences: int = 3) -> None:
        super().__init__(whole_text_chars, sentences)
        self.model, self.max_length, self.batch_size = model, max_length, batch_size

    @classmethod
    def from_config(cls, cfg: ClassifierStanceConfig, ctx: BuildContext | None) -> ClassifierStance:
        placed = stance_placement(cfg.model, cfg.device, cfg.dtype, cfg.batch_size)

        def load() -> StanceModel:
            return load_classifier(cfg.model, cfg.device, cfg.dtype)

        model = ctx.models.get(("stance", cfg.model, placed.device, placed.dtype), load) if ctx else load()
        return cls(model, max_length=cfg.max_length, batch_size=int(placed.batch_size or 32),
                   whole_text_chars=cfg.whole_text_chars, sentences=cfg.sentences)

    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        return self.model.probabilities(claims, passages, max_length=self.max_length, batch_size=self.batch_size)
