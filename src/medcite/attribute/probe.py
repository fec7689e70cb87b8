"""medcite's trained stance model: a linear head over features of a frozen encoder.

A fine-tune of the packaged MiniLM on HealthVer's ~1,900 training pairs over-fits its claims (macro-F1 about
0.45-0.48 on claims it never saw); a linear head over the frozen encoder's features of the pair generalises
better (docs/BENCHMARKS.md "stance"). The features of a (claim, evidence) pair:

- ``pair``: the encoder reads evidence and claim together (premise first); for each layer in ``layers``, the
  [CLS] vector and the masked mean of the token vectors (the middle layers of MiniLM-L6 carry more of the
  pair's relation than the last one, tuned for similarity: docs/BENCHMARKS.md "stance");
- ``siamese``: the mean-pooled, normalised vectors u (claim) and v (evidence) read apart: |u - v|, u * v and
  u . v (each distinct text is encoded once per call);
- ``cues``: negation in the claim, in the evidence, and whether they differ; the share of the claim's words
  found in the evidence; both lengths.

The model folder holds ``stance_head.json``: the feature spec and version, the frozen encoder it reads (by name:
``minilm`` is the packaged MiniLM, so the folder is the head alone, never a copy of the encoder), the
standardisation and the multinomial logistic-regression weights over (supports, contradicts, neutral). A
folder that also holds a Hugging Face model (``config.json``; heads written before the encoder was named) reads
that encoder. Inference needs only torch, transformers and numpy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..generate.attribution import negated
from ..io import write_json

HEAD_FILE = "stance_head.json"
#: the version of the feature code (:class:`Featurizer`, :func:`cues`), stored in every head trained on it (stance
#: and yes/no); bump it whenever a feature's definition changes, so a head trained on the old features is refused
#: (the shipped models' test fails until they are rebuilt: tests/unit/test_shipped_models.py)
FEATURE_VERSION = 1
FORMAT = "medcite-stance-head/1"
PARTS = ("pair", "siamese", "cues")
_WORD = re.compile(r"[^\W_]{4,}")


@dataclass(frozen=True)
class FeatureSpec:
    """Which features the head reads (stored with the head; a model is used with the spec it was trained on)."""

    max_length: int = 128
    layers: tuple[int, ...] = (1, 2, 3, 4)
    parts: tuple[str, ...] = PARTS

    def __post_init__(self) -> None:
        unknown = [p for p in self.parts if p not in PARTS]
        if unknown or not self.parts:
            raise ConfigError(f"unknown stance feature parts {unknown or '(none)'}; known: {', '.join(PARTS)}")

    def as_dict(self) -> dict[str, object]:
        return {"max_length": self.max_length, "layers": list(self.layers), "parts": list(self.parts)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        return cls(int(data["max_length"]), tuple(int(x) for x in data["layers"]), tuple(data["parts"]))


def cues(claim: str, evidence: str) -> list[float]:
    """The six surface features: negation (claim, evidence, differ), claim-word overlap, lengths."""
    neg_c, neg_e = negated(claim), negated(evidence)
    cw = {w.lower() for w in _WORD.findall(claim)}
    ew = {w.lower() for w in _WORD.findall(evidence)}
    return [float(neg_c), float(neg_e), float(neg_c != neg_e), len(cw & ew) / max(1, len(cw)),
            len(claim.split()) / 50.0, len(evidence.split()) / 200.0]


class Featurizer:
    """Features of (claim, evidence) pairs from a frozen Hugging Face encoder, in length-sorted batches."""

    def __init__(self, tokenizer: Any, model: Any, spec: FeatureSpec, *, batch_size: int = 32,
                 device: str = "cpu", progress: str | None = None) -> None:
        import torch

        self._torch = torch
        self.progress = progress  # a progress-bar label for long jobs (training); None: no bar
        self.tokenizer, self.model, self.spec = tokenizer, model, spec
        self.batch_size, self.device = batch_size, device
        layers = int(model.config.num_hidden_layers) + 1
        bad = [i for i in spec.layers if not -layers <= i < layers]
        if bad:
            raise ConfigError(f"the encoder has {layers} hidden-state layers; the stance head asks for {bad}")

    def _batches(self, n: int, length: Any, what: str) -> Any:
        from ..progress import progress

        order = sorted(range(n), key=length)
        off: dict[str, Any] = {"disable": True} if self.progress is None else {}
        with progress(total=n, desc=f"{self.progress}: {what}", unit="text", **off) as bar:
            for start in range(0, n, self.batch_size):
                batch = order[start: start + self.batch_size]
                yield batch
                bar.update(len(batch))

    def _forward(self, first: list[str], second: list[str] | None, hidden: bool) -> tuple[Any, Any]:
        enc = self.tokenizer(first, second, truncation="longest_first" if second else True,
                             max_length=self.spec.max_length, padding=True, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        out = self.model(**enc, output_hidden_states=hidden)
        return out, enc["attention_mask"].unsqueeze(-1).float()

    @contextmanager
    def _only_layers_needed(self) -> Any:
        """Skip the encoder layers above those the pair features read (layers 1-4 of MiniLM's 6: the sixth).

        Applies to BERT-style models (``model.encoder.layer``) when every requested layer is counted from the
        bottom. One layer above the deepest one read still runs: with transformers 5 the top layer of a cut
        stack came out different on padded batches, while every layer below the top was bit-identical
        (checked by ``test_skipping_layers_keeps_features``)."""
        stack = getattr(getattr(self.model, "encoder", None), "layer", None)
        deepest = max(self.spec.layers) if self.spec.layers and min(self.spec.layers) >= 0 else None
        if stack is None or deepest is None or deepest >= len(stack):
            yield
            return
        self.model.encoder.layer = self._torch.nn.ModuleList(list(stack)[:deepest + 1])
        try:
            yield
        finally:
            self.model.encoder.layer = stack

    def pair_vectors(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        torch = self._torch
        width = 2 * len(self.spec.layers) * int(self.model.config.hidden_size)
        out = np.zeros((len(claims), width), dtype=np.float32)
        with torch.inference_mode(), self._only_layers_needed():
            for idx in self._batches(len(claims), lambda i: len(claims[i]) + len(evidence[i]), "pairs"):
                res, mask = self._forward([evidence[i] for i in idx], [claims[i] for i in idx], hidden=True)
                parts = []
                for layer in self.spec.layers:
                    h = res.hidden_states[layer]
                    parts += [h[:, 0], (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)]
                out[idx] = torch.cat(parts, -1).float().cpu().numpy()
        return out

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled, L2-normalised last-layer vectors, one per text."""
        torch = self._torch
        out = np.zeros((len(texts), int(self.model.config.hidden_size)), dtype=np.float32)
        with torch.inference_mode():
            for idx in self._batches(len(texts), lambda i: len(texts[i]), "texts"):
                res, mask = self._forward([texts[i] for i in idx], None, hidden=False)
                v = (res.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                out[idx] = torch.nn.functional.normalize(v, dim=-1).float().cpu().numpy()
        return out

    def __call__(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        if len(claims) != len(evidence):
            raise ValueError("claims and evidence differ in length")
        blocks = []
        if "pair" in self.spec.parts:
            blocks.append(self.pair_vectors(claims, evidence))
        if "siamese" in self.spec.parts:
            distinct = sorted(set(claims) | set(evidence))
            at = {t: i for i, t in enumerate(distinct)}
            vecs = self.text_vectors(distinct)
            u = vecs[[at[c] for c in claims]]
            v = vecs[[at[e] for e in evidence]]
            blocks += [np.abs(u - v), u * v, (u * v).sum(1, keepdims=True)]
        if "cues" in self.spec.parts:
            blocks.append(np.array([cues(c, e) for c, e in zip(claims, evidence, strict=True)], dtype=np.float32))
        return np.hstack(blocks) if claims else np.zeros((0, 0), dtype=np.float32)


def encoder_source(name: str) -> str:
    """The folder of a head's frozen encoder: ``minilm`` -> the packaged all-MiniLM-L6-v2; any other value is a
    local model folder."""
    if name.strip().lower() in ("minilm", "packaged-minilm"):
        from ..index.dense.encoders import packaged_minilm_dir

        return str(packaged_minilm_dir())
    return name


@dataclass
class LinearHead:
    """Standardise, then a multinomial logistic regression over (supports, contradicts, neutral)."""

    spec: FeatureSpec
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (3, d)
    intercept: np.ndarray  # (3,)
    meta: dict[str, object] = field(default_factory=dict)
    encoder: str | None = None  # None: the encoder is the Hugging Face model in the head's own folder

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        if features.shape[1] != self.coef.shape[1]:
            raise ConfigError(f"the stance head expects {self.coef.shape[1]} features, got {features.shape[1]}",
                              hint="the encoder folder and stance_head.json come from different training runs")
        z = ((features - self.mean) / self.scale) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, folder: Path) -> Path:
        data = {"format": FORMAT, "feature_version": FEATURE_VERSION, "labels": ["supports", "contradicts", "neutral"],
                "features": self.spec.as_dict(), **({"encoder": self.encoder} if self.encoder else {}),
                "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(),
                "intercept": self.intercept.tolist(), **({"meta": self.meta} if self.meta else {})}
        path = folder / HEAD_FILE
        write_json(path, data)
        return path

    @classmethod
    def load(cls, folder: Path) -> LinearHead:
        path = folder / HEAD_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
            if data.get("labels") != ["supports", "contradicts", "neutral"]:
                raise ValueError(f"labels {data.get('labels')!r}")
            if data.get("feature_version", 1) != FEATURE_VERSION:
                raise ValueError(f"a stale head: trained on feature version {data.get('feature_version', 1)!r}, "
                                 f"and this medcite computes version {FEATURE_VERSION}")
            head = cls(FeatureSpec.from_dict(data["features"]), np.asarray(data["mean"], dtype=np.float64),
                       np.asarray(data["scale"], dtype=np.float64), np.asarray(data["coef"], dtype=np.float64),
                       np.asarray(data["intercept"], dtype=np.float64), data.get("meta") or {},
                       data.get("encoder"))
            d = head.coef.shape[1] if head.coef.ndim == 2 else -1
            if head.coef.shape[0] != 3 or head.mean.shape != (d,) or head.scale.shape != (d,) \
                    or head.intercept.shape != (3,) or not np.all(head.scale > 0):
                raise ValueError("weights of inconsistent shapes")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            from ..trained_models import make_command

            raise ConfigError(f"{path} is not a readable stance head ({exc})",
                              hint=f"rebuild it with `{make_command('medcite-stance-healthver')}`") from None
        return head

    def describe(self) -> dict[str, object]:
        return {"spec": asdict(self.spec), "features": int(self.coef.shape[1])}


def is_probe_folder(folder: Path) -> bool:
    return (folder / HEAD_FILE).is_file()
