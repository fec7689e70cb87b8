"""``medcite train reader``: fine-tune the reader (:mod:`medcite.reader`) end to end on its heads' examples.

The whole trunk is trained with its heads (the word-piece embeddings stay the base's, frozen, so they need not
be stored): AdamW with linear warm-up and decay, gradient clipping, mixed batches (every batch holds one head's
examples; the heads' batches are interleaved in a seeded order each epoch). Losses: cross-entropy with balanced
class weights (``yesno``, ``stance``), binary cross-entropy (``relevance``), per-token binary cross-entropy of
the start and end targets over the passage tokens (``span``).

After each epoch the validation side (:mod:`.reader_data`) is measured; the epoch with the best mean of the
heads' validation measures is kept. On the validation side the probabilities are then calibrated (a
temperature per class head, Platt scaling of the relevance logit) and the decision thresholds chosen
(:mod:`.reader_eval`). The held-back side is measured last, with the int8 model as it is shipped, and never
used to choose anything. A checkpoint after every epoch (``checkpoint.pt`` in the output folder, or the given
path; removed at the end) lets a stopped run resume where it was.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from .reader_data import DataOptions, Example, ReaderData, build_data

if TYPE_CHECKING:
    from ..reader.model import ReaderNet, ReaderSpec

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
DEFAULT_LENGTHS = {"relevance": 160, "yesno": 192, "stance": 160, "span": 192}


@dataclass
class ReaderTrainOptions:
    """Options of one reader training run (all stored in ``training.json``)."""

    heads: tuple[str, ...] = ("relevance", "yesno", "stance", "span")
    base: str = "minilm"
    epochs: int = 2
    batch_size: int = 16
    lr: float = 8e-5
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_length: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LENGTHS))
    siamese: tuple[str, ...] = ()
    loss_weight: dict[str, float] = field(default_factory=dict)
    max_examples: dict[str, int] = field(default_factory=dict)  # per head and epoch (a seeded sample)
    seed: int = 13
    threads: int | None = None
    device: str = "auto"  # resolved by train_reader (medcite.devices): CUDA, then MPS, else the CPU
    data: DataOptions = field(default_factory=DataOptions)

    def check(self) -> None:
        from ..reader.model import HEAD_LABELS

        unknown = [h for h in self.heads if h not in HEAD_LABELS]
        if unknown or not self.heads:
            raise ConfigError(f"unknown reader heads {unknown or '(none)'}",
                              hint=f"choose from {', '.join(HEAD_LABELS)}")
        if self.epochs < 1:
            raise ConfigError(f"epochs must be at least 1, got {self.epochs}")
        if self.batch_size < 1 or self.lr <= 0:
            raise ConfigError(f"batch size and learning rate must be positive ({self.batch_size}, {self.lr})")

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["data"] = self.data.as_dict()
        return d


def encode(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, max_length: int,
           offsets: bool = False) -> Any:
    """The reader's input: ``[CLS] first [SEP] second [SEP]`` truncated to ``max_length`` (the longer text
    first), as the reader reads it at inference (:class:`medcite.reader.infer.Reader`)."""
    from ..reader.infer import encode_pairs

    return encode_pairs(tokenizer, first, second, max_length, offsets)


def span_targets(enc: Any, batch: Sequence[Example]) -> tuple[Any, Any, Any]:
    """(start targets, end targets, mask of the passage's tokens) of a span batch, from character spans."""
    import torch

    shape = enc["input_ids"].shape
    start = torch.zeros(shape)
    end = torch.zeros(shape)
    mask = torch.zeros(shape)
    for row, ex in enumerate(batch):
        seq = enc.sequence_ids(row)
        for t, sid in enumerate(seq):
            if sid == 1:
                mask[row, t] = 1.0
        for a, b in ex.spans:
            ts = enc.char_to_token(row, a, sequence_index=1)
            te = enc.char_to_token(row, b - 1, sequence_index=1)
            if ts is None or te is None:  # cut off by truncation
                continue
            start[row, ts] = 1.0
            end[row, te] = 1.0
    return start, end, mask


class Trainer:
    """One training run over :class:`ReaderData` (see the module doc)."""

    def __init__(self, opts: ReaderTrainOptions, data: ReaderData) -> None:
        import torch

        from ..reader.model import ReaderSpec, build_net
        from ..registry import require

        transformers = require("transformers", "train", "training the reader")
        from ..reader.model import base_dir

        self.torch = torch
        self.opts, self.data = opts, data
        self.spec = ReaderSpec(tuple(opts.heads), opts.base, {h: opts.max_length.get(h, DEFAULT_LENGTHS[h])
                                                               for h in opts.heads}, tuple(opts.siamese))
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(base_dir(opts.base), local_files_only=True)
        self.net: ReaderNet = build_net(opts.base, self.spec).to(opts.device)
        for name, p in self.net.named_parameters():
            if name in set(self.net.frozen()):
                p.requires_grad_(False)
        self.params = [p for p in self.net.parameters() if p.requires_grad]
        self.weights: dict[str, Any] = {h: self._class_weights(h) for h in ("yesno", "stance") if h in opts.heads}

    def _class_weights(self, head: str) -> Any:
        labels = [int(e.label) for e in self.data.train.examples.get(head, [])]
        counts = np.bincount(labels, minlength=3).astype(float)
        counts[counts == 0] = 1.0
        return self.torch.tensor(len(labels) / (3 * counts), dtype=self.torch.float32)

    def batches(self, epoch: int) -> list[tuple[str, list[Example]]]:
        rng = random.Random(self.opts.seed * 1000 + epoch)
        out: list[tuple[str, list[Example]]] = []
        for head in self.opts.heads:
            rows = list(self.data.train.examples.get(head, []))
            rng.shuffle(rows)
            cap = self.opts.max_examples.get(head)
            if cap:
                rows = rows[:cap]
            out += [(head, rows[i: i + self.opts.batch_size]) for i in range(0, len(rows), self.opts.batch_size)]
        rng.shuffle(out)
        return out

    def loss(self, head: str, batch: Sequence[Example]) -> Any:
        torch = self.torch
        length = self.spec.length(head)
        first, second = [e.first for e in batch], [e.second for e in batch]
        enc = encode(self.tokenizer, first, second, length, offsets=False)
        dev = self.opts.device
        pair = {k: v.to(dev) for k, v in enc.items()}
        single = None
        if head in self.spec.siamese:
            single = tuple({k: v.to(dev) for k, v in encode(self.tokenizer, t, None, length).items()}
                           for t in (first, second))
        out = self.net(pair, head, single)
        if head == "span":
            start, end, mask = (t.to(dev) for t in span_targets(enc, batch))
            pos = torch.tensor(8.0, device=dev)  # answers are a few tokens of a passage
            bce = torch.nn.functional.binary_cross_entropy_with_logits
            ls = bce(out[..., 0], start, pos_weight=pos, reduction="none")
            le = bce(out[..., 1], end, pos_weight=pos, reduction="none")
            return ((ls + le) * mask).sum() / mask.sum().clamp(min=1.0)
        if head == "relevance":
            y = torch.tensor([e.label for e in batch], dtype=torch.float32, device=dev)
            return torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], y)
        y = torch.tensor([int(e.label) for e in batch], device=dev)
        return torch.nn.functional.cross_entropy(out, y, weight=self.weights[head].to(dev))

    def run(self, ckpt: Path, evaluate: Callable[[ReaderNet, ReaderSpec], dict[str, float]],
            progress: bool = True) -> dict[str, object]:
        """Train every epoch (resuming from the checkpoint ``ckpt``), keep the best on validation."""
        torch = self.torch
        from ..progress import progress as bar

        epochs = [self.batches(e) for e in range(self.opts.epochs)]
        total = sum(len(b) for b in epochs)
        opt = torch.optim.AdamW(self.params, lr=self.opts.lr, weight_decay=self.opts.weight_decay)
        warm = max(1, int(self.opts.warmup * total))

        def lr_at(step: int) -> float:
            return (step + 1) / warm if step < warm else max(0.0, (total - step) / max(1, total - warm))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
        history: list[dict[str, object]] = []
        best: tuple[float, int, dict[str, Any]] | None = None
        start_epoch = 0
        if ckpt.is_file():
            state = torch.load(ckpt, map_location="cpu", weights_only=False)
            if state.get("options") == self.opts.as_dict():
                self.net.load_state_dict(state["net"])
                opt.load_state_dict(state["opt"])
                sched.load_state_dict(state["sched"])
                start_epoch, history = int(state["epoch"]) + 1, list(state["history"])
                best = (state["best_score"], state["best_epoch"], state["best_state"])
                log.info("resuming reader training after epoch %d of %d (%s)", start_epoch, self.opts.epochs, ckpt)
            else:
                log.info("a checkpoint of other options is at %s: starting afresh", ckpt)
        t0 = time.perf_counter()
        for epoch in range(start_epoch, self.opts.epochs):
            self.net.train()
            losses: dict[str, list[float]] = {}
            t_epoch = time.perf_counter()
            with bar(total=len(epochs[epoch]), desc=f"reader epoch {epoch + 1}/{self.opts.epochs}", unit="batch",
                     disable=not progress) as pbar:
                for head, batch in epochs[epoch]:
                    loss = self.loss(head, batch) * self.opts.loss_weight.get(head, 1.0)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.params, 1.0)
                    opt.step()
                    sched.step()
                    opt.zero_grad()
                    losses.setdefault(head, []).append(float(loss.item()))
                    pbar.update(1)
                    done = sum(len(v) for v in losses.values())
                    if done % 200 == 0:
                        log.info("reader epoch %d: %d of %d batches, %.1f s per batch", epoch + 1, done,
                                 len(epochs[epoch]), (time.perf_counter() - t_epoch) / done)
            self.net.eval()
            measures = evaluate(self.net, self.spec)
            score = float(np.mean(list(measures.values()))) if measures else 0.0
            history.append({"epoch": epoch + 1, "seconds": round(time.perf_counter() - t0, 1),
                            "train_loss": {h: round(float(np.mean(v)), 4) for h, v in losses.items()},
                            "valid": measures, "valid_mean": round(score, 4)})
            log.info("reader epoch %d: train loss %s, validation %s", epoch + 1, history[-1]["train_loss"], measures)
            if best is None or score > best[0]:
                best = (score, epoch + 1, copy.deepcopy(self.net.state_dict()))
            part = ckpt.with_name(ckpt.name + ".part")
            torch.save({"options": self.opts.as_dict(), "net": self.net.state_dict(), "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "epoch": epoch, "history": history, "best_score": best[0],
                        "best_epoch": best[1], "best_state": best[2]}, part)
            os.replace(part, ckpt)  # a checkpoint is whole or absent
        assert best is not None
        self.net.load_state_dict(best[2])
        self.net.eval()
        return {"history": history, "best_epoch": best[1], "steps": total,
                "train_seconds": round(time.perf_counter() - t0, 1)}


def train_reader(out: str | Path, *, bioasq: str | Path | None, pubmedqa: str | Path | None,
                 healthver: str | Path | None, opts: ReaderTrainOptions | None = None,
                 command: str | None = None, progress: bool = True, checkpoint: Path | None = None
                 ) -> dict[str, object]:
    """Train a reader on the given data files and write it, with ``training.json``, to ``out`` (resuming from
    ``checkpoint``, default ``out/checkpoint.pt``, when it holds a run of the same options)."""
    from ..reader.model import save_reader
    from .common import seed_everything, train_device, write_report
    from .reader_eval import calibrate, measure_all, valid_measures

    opts = opts or ReaderTrainOptions()
    opts.check()
    opts = replace(opts, device=train_device(opts.device))  # the report and the checkpoint name the device used
    needs = {"relevance": bioasq, "span": bioasq, "yesno": bioasq or pubmedqa, "stance": healthver}
    missing = [h for h in opts.heads if needs[h] is None]
    if missing:
        raise ConfigError(f"the heads {missing} need data that was not given",
                          hint="relevance and span read --bioasq; yesno --bioasq or --pubmedqa; stance --healthver")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    seed_everything(opts.seed, opts.threads)
    started = time.perf_counter()
    data = build_data(bioasq if {"relevance", "span", "yesno"} & set(opts.heads) else None,
                      pubmedqa if "yesno" in opts.heads else None,
                      healthver if "stance" in opts.heads else None, opts.data)
    log.info("reader data: %s", data.report["sides"])
    trainer = Trainer(opts, data)
    pairs = sum(min(len(v), opts.max_examples.get(h) or len(v)) for h, v in data.train.examples.items()
                if h in opts.heads)
    log.info("training the reader: %d heads, %d pairs per epoch, %d epochs", len(opts.heads), pairs, opts.epochs)
    def validate(net: ReaderNet, spec: ReaderSpec) -> dict[str, float]:
        return valid_measures(net, spec, trainer.tokenizer, data.valid, opts.device)

    result = trainer.run(checkpoint or folder / CHECKPOINT, validate, progress)
    spec = calibrate(trainer.net, trainer.spec, trainer.tokenizer, data.valid, opts.device)
    save_reader(trainer.net, spec, folder)
    held = measure_all(folder, data.test, data.train, opts.device)
    report: dict[str, object] = {
        "kind": "reader",
        "base": opts.base,
        **({"command": command} if command else {}),
        "data": {"bioasq": str(bioasq) if bioasq else None, "pubmedqa": str(pubmedqa) if pubmedqa else None,
                 "healthver": str(healthver) if healthver else None},
        "options": opts.as_dict(),
        "splits": data.report,
        "training": result,
        "calibration": {"temperature": spec.temperature, "platt": {h: list(v) for h, v in spec.platt.items()},
                        "thresholds": spec.thresholds},
        "metrics": held,
        "seconds": round(time.perf_counter() - started, 1),
        "pairs_per_epoch": pairs,
    }
    write_report(folder, report)
    (checkpoint or folder / CHECKPOINT).unlink(missing_ok=True)
    log.info("reader written to %s in %.0f s", folder, time.perf_counter() - started)
    return report


def minutes_estimate(pairs: int, epochs: int, pairs_per_second: float = 8.0) -> int:
    """Training minutes on 2 CPU cores (measured: about 8 pairs/s at 160 tokens with MiniLM-L6)."""
    return max(1, math.ceil(pairs * epochs / pairs_per_second / 60))
