"""Reading with a trained reader: calibrated probabilities per head, relevance scores and answer spans.

:class:`Reader` batches (first, second) pairs by length, runs the network once per batch under
``torch.inference_mode`` and returns numpy arrays. Class heads give temperature-scaled probabilities, the
relevance head a Platt-scaled probability (and its raw logit, for ranking); the span head gives candidate
answers as character spans of the passage (:mod:`.spans`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..devices import Placement, place, resolve_device
from ..errors import ConfigError
from .model import HEAD_LABELS, ReaderNet, ReaderSpec, base_dir, load_net, read_spec, sigmoid, softmax
from .trunk import Module

log = logging.getLogger(__name__)

#: what keeps a reader on the CPU (:func:`reader_placement`)
INT8 = "int8 dynamic quantisation"


def encode_pairs(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, max_length: int,
                 offsets: bool = False) -> Any:
    """The reader's input, in training and at inference alike: ``[CLS] first [SEP] second [SEP]``, cut to
    ``max_length`` tokens from the longer text first (``second`` None: the first texts alone)."""
    return tokenizer(list(first), list(second) if second is not None else None,
                     truncation="longest_first" if second is not None else True, max_length=max_length,
                     padding=True, return_tensors="pt", return_offsets_mapping=offsets)


class Reader:
    """A loaded reader: ``probabilities(head, firsts, seconds)``, ``relevance(question, passages)``,
    ``span_logits(question, passages)``."""

    def __init__(self, net: ReaderNet, tokenizer: Any, spec: ReaderSpec, *, device: str = "cpu",
                 batch_size: int = 32, folder: Path | None = None) -> None:
        self.net, self.tokenizer, self.spec = net, tokenizer, spec
        self.device, self.batch_size, self.folder = device, batch_size, folder
        self._lock = threading.Lock()  # one forward pass at a time (a shared model in a web server)

    def has(self, head: str) -> bool:
        return head in self.spec.heads

    def need(self, head: str) -> None:
        if head not in self.spec.heads:
            raise ConfigError(f"the reader at {self.folder} has no {head!r} head (it has {', '.join(self.spec.heads)})",
                              hint="train one with that head: medcite train reader --heads ...")

    def _encode(self, first: list[str], second: list[str] | None, max_length: int,
                offsets: bool = False) -> Any:
        return encode_pairs(self.tokenizer, first, second, max_length, offsets)

    def _to(self, enc: Any) -> dict[str, Any]:
        return {k: v.to(self.device) for k, v in enc.items() if k != "offset_mapping"}

    def logits(self, head: str, firsts: Sequence[str], seconds: Sequence[str]) -> np.ndarray:
        """Raw logits of a class or relevance head, one row per pair."""
        import torch

        self.need(head)
        if head == "span":
            raise ValueError("span logits are per token: use span_logits")
        if len(firsts) != len(seconds):
            raise ValueError("firsts and seconds differ in length")
        width = len(HEAD_LABELS[head])
        out = np.zeros((len(firsts), width), dtype=np.float32)
        if not len(firsts):
            return out
        length = self.spec.length(head)
        order = sorted(range(len(firsts)), key=lambda i: len(firsts[i]) + len(seconds[i]))
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start: start + self.batch_size]
                f = [firsts[i] for i in idx]
                s = [seconds[i] for i in idx]
                pair = self._to(self._encode(f, s, length))
                out[idx] = self.net(pair, head).float().cpu().numpy()
        return out

    def probabilities(self, head: str, firsts: Sequence[str], seconds: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities: (n, labels) for a class head, (n,) P(relevant) for ``relevance``."""
        z = self.logits(head, firsts, seconds)
        if head == "relevance":
            a, b = self.spec.platt.get(head, (1.0, 0.0))
            return sigmoid(a * z[:, 0] + b)
        return softmax(z, self.spec.temperature.get(head, 1.0))

    def relevance(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """The relevance logit of each passage to ``question`` (for ranking; higher is more relevant)."""
        return self.logits("relevance", [question] * len(passages), list(passages))[:, 0]

    def span_logits(self, question: str, passages: Sequence[str]
                    ) -> list[tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]]:
        """Per passage: (start logits, end logits, character offsets) of its tokens; question and special
        tokens get offsets (-1, -1), so no answer is ever taken from them."""
        import torch

        self.need("span")
        out: list[tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]] = [
            (np.zeros(0), np.zeros(0), []) for _ in passages]
        length = self.spec.length("span")
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start: start + self.batch_size]
                enc = self._encode([question] * len(idx), [passages[i] for i in idx], length, offsets=True)
                logits = self.net(self._to(enc), "span").float().cpu().numpy()
                for row, i in enumerate(idx):
                    seq = enc.sequence_ids(row)
                    offs = [(int(a), int(b)) if sid == 1 else (-1, -1)
                            for sid, (a, b) in zip(seq, enc["offset_mapping"][row].tolist(), strict=True)]
                    n = int(enc["attention_mask"][row].sum())
                    out[i] = (logits[row, :n, 0], logits[row, :n, 1], offs[:n])
        return out


#: the bases whose reader runs as torch dynamic int8 on a CPU: its states stay close to the float ones (MiniLM's
#: 4-layer bottom: cosine 0.947 per token on real pairs). all-mpnet-base-v2's 10-layer bottom in int8 drifts to
#: cosine 0.706 (min -0.11): a reader trained on those states learns nothing (benchmarks/results/
#: reader_mpnet_build.json), so an mpnet reader runs in float32 (or the GPU's dtype)
INT8_BASES = frozenset({"minilm"})


def int8_safe(base: str) -> bool:
    """Whether a reader on ``base`` may run (and be trained from states computed) as dynamic int8."""
    return base in INT8_BASES


def _int8_folder(folder: str | Path) -> bool:
    try:
        return int8_safe(read_spec(folder).base)
    except ConfigError:
        return True  # not a readable reader: loading it says what is wrong


def quantize_int8(net: Module) -> Module:
    """``net`` with its linear layers as torch dynamic int8 (for a CPU); torch's notices that this API moves to
    torchao are silenced (it still works in the pinned torch, and a user cannot act on them)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*quantiz.*", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantiz.*", category=UserWarning)
        return torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)


def reader_folder(name: str, setting: str = "qa.reader_model") -> Path:
    """``models:NAME`` (trained here or shipped) or a folder -> the folder of a reader (``reader.json``);
    ConfigError with the command that makes it and the ``setting`` that names another."""
    from ..paths import MODELS_PREFIX
    from ..trained_models import make_command, resolve
    from .model import SPEC_FILE

    if name.startswith(MODELS_PREFIX):
        folder = Path(resolve(name, "medcite train reader --bioasq BIOASQ.json.gz"))
        how = make_command(name)
    else:
        folder = Path(name).expanduser()
        how = ("medcite train reader --bioasq BIOASQ.json.gz --pubmedqa PQAL.json --healthver HEALTHVER.csv "
               f"--out {folder}")
    if not (folder / SPEC_FILE).is_file():
        raise ConfigError(f"the reader {name!r} is not at {folder} (no {SPEC_FILE})",
                          hint=f"make it with `{how}`, or set {setting} to another reader")
    return folder


def reader_placement(folder: str | Path, device: str = "auto", dtype: str = "auto", *, quantize: bool | None = None,
                     batch_size: int | None = None, setting: str = "qa") -> Placement:
    """Where the reader in ``folder`` runs (:func:`medcite.devices.place`). ``quantize`` True keeps it on the CPU
    (int8); None quantises it when it lands on the CPU, so a CPU run keeps its int8 speed and a GPU runs it in
    half precision."""
    if quantize is None:
        quantize = (dtype in ("auto", "float32") and resolve_device(device, setting_path=f"{setting}.device") == "cpu"
                    and _int8_folder(folder))
    return place(f"reader {Path(folder).name}", device, dtype, setting=setting, batch_size=batch_size,
                 batch_defaults=(32, 64), cpu_only=INT8 if quantize else "")


#: readers loaded in this process, by folder, weights and placement: a 110M-parameter base is loaded once however
#: many stages (the offline answer, BioASQ Phase B, the stance check) or pipelines read with it
_LOADED: dict[tuple[str, str, int, str, str, str, int], Reader] = {}
_LOADED_LOCK = threading.Lock()
_KEEP = 4


def load_reader(folder: str | Path, *, device: str = "auto", dtype: str = "auto", quantize: bool | None = None,
                batch_size: int | None = None, placement: Placement | None = None, setting: str = "qa") -> Reader:
    """The reader in ``folder``, on the device its settings resolve to (``placement``, when already resolved);
    on a CPU its linear layers are quantised to int8 for speed (``quantize``: None = on a CPU only). A reader
    already loaded in this process with the same weights and placement is shared (the last few are kept)."""
    from ..registry import require

    placed = placement or reader_placement(folder, device, dtype, quantize=quantize, batch_size=batch_size,
                                           setting=setting)
    weights = Path(folder) / "reader.safetensors"
    try:
        st = weights.stat()
        key = (str(Path(folder).resolve()), str(st.st_size), st.st_mtime_ns, placed.device, str(placed.dtype),
               placed.note, int(placed.batch_size or 32))
    except OSError:
        key = None  # load_net says what is wrong
    with _LOADED_LOCK:
        if key is not None and key in _LOADED:
            return _LOADED[key]
        transformers = require("transformers", "qa", "the reader's tokenizer")
        net, spec = load_net(folder)
        tokenizer = transformers.AutoTokenizer.from_pretrained(base_dir(spec.base), local_files_only=True)
        if placed.note == INT8:
            net = quantize_int8(net)
        placed.to(net)
        reader = Reader(net, tokenizer, spec, device=placed.device, batch_size=int(placed.batch_size or 32),
                        folder=Path(folder))
        if key is not None:
            while len(_LOADED) >= _KEEP:
                _LOADED.pop(next(iter(_LOADED)))
            _LOADED[key] = reader
        return reader
