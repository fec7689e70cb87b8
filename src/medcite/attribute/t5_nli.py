"""Stance by a text-to-text NLI model (``t5-nli``): SciFive-large-Pubmed_PMC-MedNLI (Phan et al. 2021, "SciFive: a
text-to-text transformer model for biomedical literature"), the NLI model of CLaC 2024's System 2.

The model reads ``mednli: sentence1: PREMISE sentence2: HYPOTHESIS`` (the model card's input; the premise is the
evidence passage, the hypothesis the claim) and writes one of the words ``entailment``, ``contradiction``,
``neutral``. Rather than decode a word, each label word is scored as the model's continuation (the sum of its
tokens' log-probabilities, teacher-forced) and the three scores are normalised by a softmax, so the stance has
probabilities like the sequence-classification backends: entailment -> supports, contradiction -> contradicts.
The long texts are handled as every model backend does (:class:`~.base.PassageClassifier`: the closest
sentences, and the whole text when short).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..devices import Device, Dtype, device_field, dtype_field, place
from ..errors import ConfigError
from ..registry import require
from ..rerank.scoring import load_t5
from ..set_option import set_line
from .base import PassageClassifier, StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext

SCIFIVE_MEDNLI = "razent/SciFive-large-Pubmed_PMC-MedNLI"


class T5NLIConfig(StanceConfig):
    """A T5 model fine-tuned on NLI as text to text (SciFive-MedNLI)."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})

    backend: Literal["t5-nli"] = "t5-nli"
    model: str = Field(SCIFIVE_MEDNLI, description="T5 NLI model: Hugging Face name or folder (CLaC 2024: "
                       "razent/SciFive-large-Pubmed_PMC-MedNLI).")
    template: str = Field(
        "mednli: sentence1: {premise} sentence2: {hypothesis}", description="The model's input, {premise} the "
        "evidence passage and {hypothesis} the claim (SciFive-MedNLI's model card).")
    labels: tuple[str, str, str] = Field(
        ("entailment", "contradiction", "neutral"), description="The words the model writes for supports, "
        "contradicts and neutral (MedNLI's labels).")
    max_length: int = Field(256, ge=16, description="Input tokens (SciFive-MedNLI's card: 256).")
    batch_size: int | None = Field(
        None, ge=1, description="Pairs per forward pass; None: by device (16 on the CPU, 32 on a GPU)."
    )
    device: Device = device_field("the T5 NLI model")
    dtype: Dtype = dtype_field("the T5 NLI model (never float16 by default: T5 overflows it)")

    def model_names(self) -> list[str]:
        return [self.model]


class T5NLIStance(PassageClassifier):
    """Three-way stance from a text-to-text NLI model: softmax of the three label words' log-likelihoods."""

    name = "t5-nli"
    Config = T5NLIConfig

    def __init__(self, tokenizer: Any, model: Any, *, template: str = T5NLIConfig.model_fields["template"].default,
                 labels: Sequence[str] = ("entailment", "contradiction", "neutral"), max_length: int = 256,
                 batch_size: int = 16, device: str = "cpu", whole_text_chars: int = 1500, sentences: int = 3) -> None:
        # ``device``: where ``model`` already is (from_config placed it when it was loaded)
        super().__init__(whole_text_chars, sentences)
        if "{premise}" not in template or "{hypothesis}" not in template:
            raise ConfigError(f"the T5 NLI template {template!r} must hold {{premise}} and {{hypothesis}}",
                              hint="e.g. 'mednli: sentence1: {premise} sentence2: {hypothesis}'")
        self._torch = require("torch", "rerank", "the T5 NLI stance model")
        self.tokenizer, self.model, self.template = tokenizer, model, template
        self.max_length, self.batch_size, self.device = max_length, batch_size, device
        eos = tokenizer.eos_token_id
        self.label_ids = [list(tokenizer(w, add_special_tokens=False).input_ids) + ([eos] if eos is not None else [])
                          for w in labels]
        if len({tuple(ids) for ids in self.label_ids}) != 3 or any(tokenizer.unk_token_id in ids
                                                                    for ids in self.label_ids):
            raise ConfigError(f"the T5 NLI tokenizer cannot tell the label words {list(labels)} apart",
                              hint=f"name the words the model was trained to write: {set_line('...labels', '[...]')}")

    @classmethod
    def from_config(cls, cfg: T5NLIConfig, ctx: BuildContext | None) -> T5NLIStance:
        placed = place(f"stance t5-nli {cfg.model}", cfg.device, cfg.dtype, setting="stance", half=False,
                       batch_size=cfg.batch_size, batch_defaults=(16, 32))

        def load() -> tuple[Any, Any]:
            return load_t5(cfg.model, placed, "T5 NLI stance", "the T5 NLI stance model")

        key = ("t5-nli", cfg.model, placed.device, placed.dtype)
        tokenizer, model = ctx.models.get(key, load) if ctx else load()
        return cls(tokenizer, model, template=cfg.template, labels=cfg.labels, max_length=cfg.max_length,
                   batch_size=int(placed.batch_size or 16), device=placed.device,
                   whole_text_chars=cfg.whole_text_chars,
                   sentences=cfg.sentences)

    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(claims), 3), dtype=np.float64)
        for start in range(0, len(claims), self.batch_size):
            idx = range(start, min(start + self.batch_size, len(claims)))
            texts = [self.template.format(premise=passages[i], hypothesis=claims[i]) for i in idx]
            enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True,
                                 return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
            scores = []
            with torch.inference_mode():
                encoded = self.model.get_encoder()(**enc)
                for ids in self.label_ids:
                    labels = torch.tensor([ids] * len(texts), device=self.device)
                    logits = self.model(encoder_outputs=encoded, attention_mask=enc["attention_mask"],
                                        labels=labels).logits.float()
                    logp = torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
                    scores.append(logp.sum(dim=-1))
            out[list(idx)] = torch.softmax(torch.stack(scores, dim=-1), dim=-1).cpu().numpy()
        return out
