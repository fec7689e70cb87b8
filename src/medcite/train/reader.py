"""``medcite train reader``: train the reader (:mod:`medcite.reader`) on its heads' examples.

The base encoder is split at layer ``trained_from``: its bottom stays frozen and is run once per example
(:mod:`.reader_cache`, cached on disk), and each branch trains its own copy of the layers above (fully, or LoRA
adapters when ``lora_rank`` > 0) with its heads: AdamW with linear warm-up and decay, gradient clipping, mixed
batches (every batch holds one head's examples, near-equal in length; the heads' batches are interleaved in a
seeded order each epoch). Losses, weighted per example: cross-entropy with balanced class weights (``yesno``,
``stance``), binary cross-entropy (``relevance``), per-token binary cross-entropy of the start and end targets
over the passage tokens (``span``).

After each epoch the validation side (:mod:`.reader_data`) is measured, read as the reader ships (int8 on a
CPU); each branch keeps its own best epoch (the mean of its heads' validation measures). On the validation side
the probabilities are then calibrated (a temperature per class head, Platt scaling of the relevance logit) and
the decision thresholds chosen (:mod:`.reader_eval`). The held-back side is measured last, with the reader as it
is shipped, and never used to choose anything. A checkpoint after every epoch (``checkpoint.pt`` in the output
folder, or the given path; removed at the end) lets a stopped run resume where it was.
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
from .reader_data import DataOptions, ReaderData, build_data

if TYPE_CHECKING:
    from ..reader.model import ReaderNet, ReaderSpec
    from ..reader.trunk import Tensor
    from .reader_cache import HeadStates

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
#: recorded in training.json beside the stance sets a reader was trained on (../shared/data/stance/SOURCE.md)
STANCE_LICENCES = {"healthver": "HealthVer (Sarrouti et al., 2021)", "check_covid": "MIT",
                   "citation_integrity": "no licence stated upstream; research use",
                   "covidfact": "no licence stated; research use"}
DEFAULT_LENGTHS = {"relevance": 160, "yesno": 160, "stance": 160, "span": 192}
#: the validation measure of each head (reader_eval.valid_measures) that chooses its branch's epoch
MEASURE_OF = {"stance": "stance_macro_f1", "yesno": "yesno", "relevance": "relevance_mrr", "span": "span"}


@dataclass
class ReaderTrainOptions:
    """Options of one reader training run (all stored in ``training.json``)."""

    heads: tuple[str, ...] = ("relevance", "yesno", "stance", "span")
    base: str = "minilm"
    trained_from: int = 0  # the first trained layer (0: every layer; the embeddings stay the base's)
    # a lower layer whose cached states the states at trained_from are derived from (None: from the texts): the
    # frozen layers between run once, so variants split at different layers share the expensive bottom
    cache_from: int | None = None
    branches: dict[str, tuple[str, ...]] = field(default_factory=dict)  # {} = one shared branch
    lora_rank: int = 0
    lora_alpha: float = 16.0
    epochs: int = 2
    batch_size: int = 16
    lr: float = 8e-5
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_length: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LENGTHS))
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
        if self.branches and sorted(h for hs in self.branches.values() for h in hs) != sorted(self.heads):
            raise ConfigError(f"the branches {dict(self.branches)} do not hold each head {list(self.heads)} once",
                              hint="e.g. --branches qa=relevance,span --branches verdict=yesno "
                                   "--branches stance=stance")
        if self.cache_from is not None and not 0 <= self.cache_from <= self.trained_from:
            raise ConfigError(f"cache_from {self.cache_from} must be between 0 and trained_from {self.trained_from}")
        if self.epochs < 1:
            raise ConfigError(f"epochs must be at least 1, got {self.epochs}")
        if self.batch_size < 1 or self.lr <= 0:
            raise ConfigError(f"batch size and learning rate must be positive ({self.batch_size}, {self.lr})")

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["data"] = self.data.as_dict()
        d["branches"] = {b: list(hs) for b, hs in self.branches.items()}
        return d


def encode(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, max_length: int,
           offsets: bool = False) -> Any:
    """The reader's input: ``[CLS] first [SEP] second [SEP]`` truncated to ``max_length`` (the longer text
    first), as the reader reads it at inference (:class:`medcite.reader.infer.Reader`)."""
    from ..reader.infer import encode_pairs

    return encode_pairs(tokenizer, first, second, max_length, offsets)


def shipped_options() -> ReaderTrainOptions:
    """The recipe ``medcite models build medcite-reader`` trains (the reader shipped today is still the first
    format's: no build of this recipe has passed the ship gate yet, docs/MODELS.md): the packaged all-MiniLM-L6-v2
    split at layer 1, a branch per job (qa: relevance and answer spans; verdict: the sentence reader; stance), each
    training its own copy of layers 1-5 fully; two epochs at lr 1e-4 over every training pair; 52 PubMedQA items
    validate (the most the 8 % validation share of :func:`.reader_data.held_back_sizes` allows of its 651; the
    300 held back are the same).

    Chosen at equal CPU time against all-mpnet-base-v2 (``benchmarks/bench_reader_bases.py``, 2 cores): on the
    same 160 yes/no batches MiniLM split at 2 reaches a progressive held-out loss of 0.868 at 1.08 s a batch, split
    at 0 0.876 at 1.59 s, mpnet with its top 4 layers trained fully 0.945 at 3.54 s (ln 3 = 1.099: the uniform
    guess); mpnet with LoRA on its top 2 layers stayed at 0.99 after a whole epoch (docs/MODELS.md). Split at 1 and
    over every pair, the qa branch beat split 2's on relevance and spans (docs/MODELS.md, "What ships today").
    ``--base mpnet`` trains the larger reader where a GPU is lent."""
    return ReaderTrainOptions(heads=("relevance", "yesno", "stance", "span"), base="minilm", trained_from=1,
                              branches={"qa": ("relevance", "span"), "verdict": ("yesno",), "stance": ("stance",)},
                              lora_rank=0, epochs=2, batch_size=16, lr=1e-4, data=DataOptions(pubmedqa_valid=52))


class Trainer:
    """One training run over :class:`ReaderData` (see the module doc)."""

    def __init__(self, opts: ReaderTrainOptions, data: ReaderData, *, progress: bool = True) -> None:
        import torch

        from ..reader.model import ReaderSpec, base_dir, build_net, embeddings_digest
        from ..registry import require
        from .reader_cache import build_states, derive_states

        transformers = require("transformers", "train", "training the reader")
        self.torch = torch
        self.opts, self.data = opts, data
        self.spec = ReaderSpec(tuple(opts.heads), opts.base, {h: opts.max_length.get(h, DEFAULT_LENGTHS[h])
                                                               for h in opts.heads}, opts.trained_from,
                               dict(opts.branches), opts.lora_rank, opts.lora_alpha)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(base_dir(opts.base), local_files_only=True)
        self.net: ReaderNet = build_net(opts.base, self.spec).to(opts.device)
        self.params = self.net.trained()
        self.weights: dict[str, Tensor] = {h: self._class_weights(h) for h in ("yesno", "stance") if h in opts.heads}
        # the bottom as the shipped reader runs it: int8 on a CPU for a base int8 keeps close (int8_safe); its
        # states cached from the texts at layer cache_from, then derived once at trained_from through the frozen
        # layers between
        from ..reader.infer import int8_safe

        quantized = opts.device == "cpu" and int8_safe(opts.base)
        at = opts.trained_from if opts.cache_from is None else opts.cache_from
        bottom = copy.deepcopy(self.net.trunk)
        middle = torch.nn.ModuleList(list(bottom.bottom)[at:])
        bottom.bottom = torch.nn.ModuleList(list(bottom.bottom)[:at])
        bottom.at = at
        if quantized:
            from ..reader.infer import quantize_int8

            bottom = quantize_int8(bottom)
            middle = quantize_int8(middle)
        digest = embeddings_digest(self.net)
        self.states: dict[str, HeadStates] = {}
        for h in opts.heads:
            examples = self.data.train.examples.get(h, [])
            if not examples:
                continue
            cap = opts.max_examples.get(h)
            if cap and cap * opts.epochs < len(examples):
                # a capped head never reads more than cap x epochs examples: only a seeded pool of them is kept
                # (and its states computed); each epoch samples its cap from the pool
                pool = random.Random(opts.seed * 7919 + len(examples)).sample(range(len(examples)), cap * opts.epochs)
                examples = [examples[i] for i in sorted(pool)]
                self.data.train.examples[h] = examples
            states = build_states(bottom, self.tokenizer, h, examples, self.spec.length(h), base_digest=digest,
                                  quantized=quantized, device=opts.device, progress=progress)
            if len(middle):
                states = derive_states(states, bottom, middle, h, examples, self.spec.length(h),
                                       at=opts.trained_from, base_digest=digest, quantized=quantized,
                                       device=opts.device, progress=progress)
            self.states[h] = states

    def _class_weights(self, head: str) -> Tensor:
        labels = [int(e.label) for e in self.data.train.examples.get(head, [])]
        counts = np.bincount(labels, minlength=3).astype(float)
        counts[counts == 0] = 1.0
        return self.torch.tensor(len(labels) / (3 * counts), dtype=self.torch.float32)

    def batches(self, epoch: int) -> list[tuple[str, list[int]]]:
        """Each head's examples in batches of near-equal length (little padding), the batches in a seeded order."""
        rng = random.Random(self.opts.seed * 1000 + epoch)
        out: list[tuple[str, list[int]]] = []
        for head in self.opts.heads:
            if head not in self.states:
                continue
            rows = list(range(len(self.data.train.examples[head])))
            rng.shuffle(rows)
            cap = self.opts.max_examples.get(head)
            if cap:
                rows = rows[:cap]
            lengths = self.states[head].length
            rows.sort(key=lambda i: lengths[i] + rng.random() * 8)  # near-equal lengths, a new grouping each epoch
            out += [(head, rows[i: i + self.opts.batch_size]) for i in range(0, len(rows), self.opts.batch_size)]
        rng.shuffle(out)
        return out

    def loss(self, head: str, idx: Sequence[int]) -> Tensor:
        torch = self.torch
        dev = self.opts.device
        examples = self.data.train.examples[head]
        states, mask = self.states[head].batch(idx)
        states, mask = states.to(dev), mask.to(dev)
        out = self.net.from_states(states, mask, head)
        w = torch.tensor([examples[i].weight for i in idx], dtype=torch.float32, device=dev)
        if head == "span":
            start, end, passage = (t.to(dev) for t in self.states[head].span_targets(idx))
            pos = torch.tensor(8.0, device=dev)  # answers are a few tokens of a passage
            bce = torch.nn.functional.binary_cross_entropy_with_logits
            ls = bce(out[..., 0], start, pos_weight=pos, reduction="none")
            le = bce(out[..., 1], end, pos_weight=pos, reduction="none")
            per = ((ls + le) * passage).sum(1) / passage.sum(1).clamp(min=1.0)
            return (per * w).sum() / w.sum()
        if head == "relevance":
            y = torch.tensor([examples[i].label for i in idx], dtype=torch.float32, device=dev)
            per = torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], y, reduction="none")
            return (per * w).sum() / w.sum()
        y = torch.tensor([int(examples[i].label) for i in idx], device=dev)
        cw = self.weights[head].to(dev)
        per = torch.nn.functional.cross_entropy(out, y, weight=cw, reduction="none")
        return (per * w).sum() / (w * cw[y]).sum()

    def trained_state(self) -> dict[str, Tensor]:
        keep = {n for n, p in self.net.named_parameters() if p.requires_grad}
        return {n: t.detach().clone().cpu() for n, t in self.net.state_dict().items() if n in keep}

    def run(self, ckpt: Path, evaluate: Callable[[ReaderNet, ReaderSpec], dict[str, float]],
            progress: bool = True) -> dict[str, object]:
        """Train every epoch (resuming from the checkpoint ``ckpt``), keep each branch's best on validation."""
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
        best: dict[str, tuple[float, int, dict[str, Tensor]]] = {}  # branch -> (score, epoch, its trained tensors)
        start_epoch = 0
        if ckpt.is_file():
            state = torch.load(ckpt, map_location="cpu", weights_only=False)
            if state.get("options") == self.opts.as_dict():
                self.net.load_state_dict(state["net"], strict=False)
                opt.load_state_dict(state["opt"])
                sched.load_state_dict(state["sched"])
                start_epoch, history, best = int(state["epoch"]) + 1, list(state["history"]), dict(state["best"])
                log.info("resuming reader training after epoch %d of %d (%s)", start_epoch, self.opts.epochs, ckpt)
            else:
                log.info("a checkpoint of other options is at %s: starting afresh", ckpt)
        t0 = time.perf_counter()
        for epoch in range(start_epoch, self.opts.epochs):
            self.net.train()
            self.net.trunk.eval()  # the frozen bottom never drops out
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
                        log.info("reader epoch %d: %d of %d batches, %.2f s per batch", epoch + 1, done,
                                 len(epochs[epoch]), (time.perf_counter() - t_epoch) / done)
            self.net.eval()
            measures = evaluate(self.net, self.spec)
            scores = {b: float(np.mean([measures[MEASURE_OF[h]] for h in hs if MEASURE_OF[h] in measures] or [0.0]))
                      for b, hs in self.spec.branches.items()}
            history.append({"epoch": epoch + 1, "seconds": round(time.perf_counter() - t0, 1),
                            "train_loss": {h: round(float(np.mean(v)), 4) for h, v in losses.items()},
                            "valid": measures, "valid_branch": {b: round(v, 4) for b, v in scores.items()}})
            log.info("reader epoch %d: train loss %s, validation %s", epoch + 1, history[-1]["train_loss"], measures)
            state_now = self.trained_state()
            for b, score in scores.items():
                if b not in best or score > best[b][0]:
                    mine = {n: t for n, t in state_now.items() if self._belongs(n, b)}
                    best[b] = (score, epoch + 1, mine)
            part = ckpt.with_name(ckpt.name + ".part")
            torch.save({"options": self.opts.as_dict(), "net": state_now, "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "epoch": epoch, "history": history, "best": best}, part)
            os.replace(part, ckpt)  # a checkpoint is whole or absent
        for _, _, tensors in best.values():
            self.net.load_state_dict(tensors, strict=False)
        self.net.eval()
        return {"history": history, "best_epoch": {b: v[1] for b, v in best.items()}, "steps": total,
                "train_seconds": round(time.perf_counter() - t0, 1)}

    def _belongs(self, name: str, branch: str) -> bool:
        if name.startswith("tops."):
            return name.split(".")[1] == branch
        if name.startswith("heads."):
            return name.split(".")[1] in self.spec.branches[branch]
        return False


def train_reader(out: str | Path, *, bioasq: str | Path | None, pubmedqa: str | Path | None,
                 healthver: str | Path | None, opts: ReaderTrainOptions | None = None,
                 command: str | None = None, progress: bool = True, checkpoint: Path | None = None,
                 bioasq_extra: Sequence[str | Path] = (), stance_dir: str | Path | None = None
                 ) -> dict[str, object]:
    """Train a reader on the given data files and write it, with ``training.json``, to ``out`` (resuming from
    ``checkpoint``, default ``out/checkpoint.pt``, when it holds a run of the same options)."""
    from ..reader.model import save_reader
    from .common import seed_everything, train_device, write_report
    from .reader_eval import calibrate, measure_all, valid_measures

    opts = opts or ReaderTrainOptions()
    opts.check()
    opts = replace(opts, device=train_device(opts.device))  # the report and the checkpoint name the device used
    needs = {"relevance": bioasq, "span": bioasq, "yesno": bioasq or pubmedqa, "stance": healthver or stance_dir}
    missing = [h for h in opts.heads if needs[h] is None]
    if missing:
        raise ConfigError(f"the heads {missing} need data that was not given",
                          hint="relevance and span read --bioasq; yesno --bioasq or --pubmedqa; stance --healthver "
                               "or --stance-sets")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    seed_everything(opts.seed, opts.threads)
    started = time.perf_counter()
    data = build_data(bioasq if {"relevance", "span", "yesno"} & set(opts.heads) else None,
                      pubmedqa if "yesno" in opts.heads else None,
                      healthver if "stance" in opts.heads else None, opts.data,
                      bioasq_extra=bioasq_extra if {"relevance", "span", "yesno"} & set(opts.heads) else (),
                      stance_dir=stance_dir if "stance" in opts.heads else None)
    log.info("reader data: %s", data.report["sides"])
    trainer = Trainer(opts, data, progress=progress)
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
                 "healthver": str(healthver) if healthver else None,
                 "bioasq_extra": [str(p) for p in bioasq_extra],
                 "stance_sets": ({"folder": str(stance_dir), "sets": list(opts.data.stance_sets),
                                  "licences": STANCE_LICENCES} if stance_dir else None)},
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
