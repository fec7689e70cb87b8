"""The retired yes/no baseline (``models:medcite-yesno``, ``medcite train yesno``): a linear head over
frozen-encoder features of (question, snippet) pairs. No stage answers with it any more -- the offline answer and
BioASQ's exact answer read medcite's reader (:mod:`medcite.reader`) and decide by
:func:`medcite.reader.verdict.decide` -- it stays beside its trainer as the baseline the reader is measured
against, and decides through the same function.

The pattern of medcite's stance classifier (:mod:`medcite.attribute.probe`, reused here: the same feature
spec and featurizer): a fine-tune of MiniLM on a few thousand pairs over-fits, a regularised linear head on
the frozen encoder's pair features does not. Each (question, snippet) pair gets P(yes), P(no), P(maybe); a
question's answer is "yes" when the mean of P(yes) / (P(yes) + P(no)) over its snippets reaches the
``threshold`` tuned on the training questions (macro-F1 by cross-validation; answers are about 2:1 yes, so
0.5 is not the best cut). PubMedQA's maybe class is trained on and kept for its three-way measures; a BioASQ
question is answered yes or no only.

``yesno_head.json`` (written by ``medcite train yesno``): the feature spec, the encoder (``minilm``: the
packaged MiniLM), standardisation, the multinomial logistic-regression weights and the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..attribute.probe import FEATURE_VERSION, FeatureSpec
from ..errors import ConfigError
from ..io import write_json
from ..qa.models import read_head
from ..reader.verdict import decide
from ..trained_models import make_command

HEAD_FILE = "yesno_head.json"
FORMAT = "medcite-yesno-head/1"
LABELS = ("yes", "no", "maybe")


def pair_texts(question: str, snippets: Sequence[str], max_snippets: int) -> list[str]:
    """The distinct non-empty snippet texts a question is judged on, first ``max_snippets`` of them."""
    seen: dict[str, None] = {}
    for s in snippets:
        t = " ".join(s.split())
        if t:
            seen.setdefault(t, None)
    return list(seen)[:max_snippets]


@dataclass
class YesNoHead:
    """Standardise, then a multinomial logistic regression over (yes, no, maybe); a question threshold."""

    spec: FeatureSpec
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (3, d)
    intercept: np.ndarray  # (3,)
    threshold: float = 0.5
    max_snippets: int = 10
    encoder: str = "minilm"
    meta: dict[str, object] = field(default_factory=dict)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(P(yes), P(no), P(maybe)) per pair."""
        if features.shape[1] != self.coef.shape[1]:
            raise ConfigError(f"the yes/no head expects {self.coef.shape[1]} features, got {features.shape[1]}",
                              hint=f"rebuild it with `{make_command('medcite-yesno')}`")
        z = ((features - self.mean) / self.scale) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]

    @staticmethod
    def p_yes(probs: np.ndarray) -> float:
        """A question's score: the mean over its snippets of P(yes) / (P(yes) + P(no)); 0.5 without any."""
        if not len(probs):
            return 0.5
        return float(np.mean(probs[:, 0] / np.clip(probs[:, 0] + probs[:, 1], 1e-9, None)))

    def decide(self, probs: np.ndarray) -> str:
        return decide(self.p_yes(probs), self.threshold)

    def save(self, folder: Path) -> Path:
        data = {"format": FORMAT, "feature_version": FEATURE_VERSION, "labels": list(LABELS),
                "features": self.spec.as_dict(), "encoder": self.encoder,
                "threshold": self.threshold, "max_snippets": self.max_snippets, "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "coef": self.coef.tolist(), "intercept": self.intercept.tolist(),
                **({"meta": self.meta} if self.meta else {})}
        path = folder / HEAD_FILE
        write_json(path, data)
        return path

    @classmethod
    def load(cls, folder: Path) -> YesNoHead:
        data = read_head(folder, HEAD_FILE, FORMAT, "yesno", FEATURE_VERSION)
        try:
            head = cls(FeatureSpec.from_dict(data["features"]), np.asarray(data["mean"], dtype=np.float64),
                       np.asarray(data["scale"], dtype=np.float64), np.asarray(data["coef"], dtype=np.float64),
                       np.asarray(data["intercept"], dtype=np.float64), float(data["threshold"]),
                       int(data["max_snippets"]), str(data["encoder"]), data.get("meta") or {})
            d = head.coef.shape[1] if head.coef.ndim == 2 else -1
            if head.coef.shape[0] != 3 or head.mean.shape != (d,) or head.scale.shape != (d,) \
                    or head.intercept.shape != (3,) or not np.all(head.scale > 0):
                raise ValueError("weights of inconsistent shapes")
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{folder / HEAD_FILE} is not a readable yes/no head ({exc})",
                              hint=f"rebuild it with `{make_command('medcite-yesno')}`") from None
        return head


class YesNoModel:
    """A yes/no head with its frozen encoder: (question, snippet texts) -> "yes" or "no"."""

    def __init__(self, tokenizer: Any, encoder: Any, head: YesNoHead, device: str = "cpu",
                 batch_size: int = 32) -> None:
        from ..attribute.probe import Featurizer

        self.head = head
        self.featurize = Featurizer(tokenizer, encoder, head.spec, batch_size=batch_size, device=device)

    def probabilities(self, questions: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """(P(yes), P(no), P(maybe)) of each (question, text) pair."""
        if not questions:
            return np.zeros((0, len(LABELS)))
        return self.head.probabilities(self.featurize(list(questions), list(texts)))

    def p_yes(self, question: str, snippets: Sequence[str]) -> float:
        texts = pair_texts(question, snippets, self.head.max_snippets)
        return self.head.p_yes(self.probabilities([question] * len(texts), texts))

    def answer(self, question: str, snippets: Sequence[str]) -> str:
        return decide(self.p_yes(question, snippets), self.head.threshold)


def load_yesno(folder: Path, device: str = "auto", dtype: str = "auto") -> YesNoModel:
    """The yes/no model in ``folder`` (``yesno_head.json``) with the encoder the head names, on the device and in
    the dtype the settings resolve to (:func:`medcite.devices.place`)."""
    from ..attribute.probe import encoder_source
    from ..devices import place
    from ..registry import require

    placed = place(f"qa yes/no {folder.name}", device, dtype, setting="qa", batch_defaults=(32, 64))
    head = YesNoHead.load(folder)
    transformers = require("transformers", "qa", "the yes/no classifier's encoder")
    source = encoder_source(head.encoder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=True)
    encoder = transformers.AutoModel.from_pretrained(source, local_files_only=True).eval()
    placed.to(encoder)
    return YesNoModel(tokenizer, encoder, head, placed.device, batch_size=int(placed.batch_size or 32))
