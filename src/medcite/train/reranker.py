"""Fine-tune a cross-encoder reranker on BioASQ question / gold-document pairs (DS@GT, BioASQ 13b).

Binary cross-entropy on gold (1) and hard-negative (0) pairs (Nogueira & Cho 2019, "Passage Re-ranking
with BERT"), the negatives from BM25 or, with ``negatives_from="dense"``, from a bi-encoder
(sentence-transformers' ``mine_hard_negatives``), split by question, then MAP@10 (BioASQ denominator) of
BM25 top 100 -> rerank on the held-back questions, before and after. The offline base is the packaged
all-MiniLM-L6-v2 body with a fresh one-logit head. The result is an ordinary Hugging Face folder
(``config.json``, weights, tokenizer) that :func:`medcite.rerank.cross_encoder.load_cross_encoder` and
``transformers`` read, with ``training.json`` describing the run.

The loop is sentence-transformers' ``CrossEncoderTrainer`` with its seeded default batch sampler (pairs
need no batching rule: a cross-encoder scores each pair alone). Only the evaluation stays medcite's own
(:func:`rerank_map`: MAP@10 with the BioASQ denominator over BM25 pools, which no library evaluator computes).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..progress import progress
from ..registry import require
from ..rerank.cross_encoder import CrossEncoderReranker
from ..rerank.ensemble import mean_average_precision
from ..rerank.scoring import not_available
from .common import (
    LossLog,
    TrainerLike,
    TrainOptions,
    base_model_dir,
    hub_folder,
    library_versions,
    mine_split,
    out_folder,
    require_pairs,
    require_some_pairs,
    run_trainer,
    seed_everything,
    split_report,
    train_device,
    trainer_arguments,
    without_model_card,
    write_report,
)

if TYPE_CHECKING:
    from ..rerank.base import Reranker

from .data import (
    EvalQuery,
    Pair,
    pairs_of,
)

log = logging.getLogger(__name__)


def prepare_base(base: str, folder: Path, seed: int) -> str:
    """A cross-encoder folder to start from: ``base`` itself when it already has a one-logit
    sequence-classification head, else ``base``'s encoder body with a fresh head (seeded) saved in ``folder``.
    """
    transformers = require("transformers", "train", "training a reranker")
    src = base_model_dir(base)
    if not Path(src).exists():  # a hub name: fetched (or found in the cache), as CrossEncoder then loads it offline
        src = hub_folder(base, "base")
    try:
        config = transformers.AutoConfig.from_pretrained(src)
    except OSError as exc:
        raise not_available(base, "base", exc) from exc
    archs = getattr(config, "architectures", None) or []
    if any(a.endswith("ForSequenceClassification") for a in archs) and config.num_labels == 1:
        return src
    import torch

    torch.manual_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(src, num_labels=1)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(src).save_pretrained(folder)
    log.info("base %s: encoder body with a fresh 1-logit head", base)
    return str(folder)


def rerank_map(reranker: Reranker | None, pools: Sequence[EvalQuery], k: int = 10) -> float:
    """MAP@k (BioASQ) of ``reranker`` over the BM25 pools (None: the BM25 order itself)."""
    rankings = []
    log.info("evaluating %s on %d questions", "BM25" if reranker is None else "the reranker", len(pools))
    for item in progress(pools, desc="evaluating", unit="q", leave=False):
        hits = item.hits[:k] if reranker is None else reranker.rerank(item.question.body, item.hits,
                                                                      item.articles, k)
        rankings.append([h.pmid for h in hits])
    return mean_average_precision(rankings, [item.relevant for item in pools], k)


def pairs_dataset(pairs: Sequence[Pair]) -> object:
    """The trainer's dataset: ``query``, ``document`` and ``label`` columns (1.0 gold, 0.0 negative)."""
    from datasets import Dataset

    return Dataset.from_dict({"query": [p.question for p in pairs], "document": [p.text for p in pairs],
                              "label": [p.label for p in pairs]})


def cross_encoder_trainer(model: Any, pairs: Sequence[Pair], opts: TrainOptions, output_dir: str) -> TrainerLike:
    """A ``CrossEncoderTrainer`` with binary cross-entropy; the trainer's seeded random batches."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    steps = math.ceil(len(pairs) / opts.batch_size) * opts.epochs
    args = trainer_arguments(CrossEncoderTrainingArguments, opts, steps, output_dir, num_train_epochs=opts.epochs)
    trainer = without_model_card(CrossEncoderTrainer)
    return trainer(model=model, args=args, train_dataset=pairs_dataset(pairs), loss=BinaryCrossEntropyLoss(model))


def measure_pairs_per_second(model: Any, pairs: Sequence[Pair], opts: TrainOptions, batches: int = 3) -> float:
    """Training pairs per second of the sentence-transformers ``CrossEncoder`` ``model`` here: ``batches`` whole
    training steps (tokenising, forward, backward, an AdamW step) over ``pairs`` after one warm-up step, taken on a
    copy of the network, so the model itself is left exactly as it was."""
    import copy

    import torch

    net = copy.deepcopy(model.model)
    tokenizer = model.tokenizer
    device = next(net.parameters()).device
    size = opts.batch_size
    chunks = [pairs[i: i + size] for i in range(0, min(len(pairs), size * (batches + 1)), size)]
    loss = torch.nn.BCEWithLogitsLoss()
    optimizer = torch.optim.AdamW(net.parameters(), lr=opts.lr, weight_decay=0.01)
    seconds, counted = 0.0, 0
    net.train()
    for i, chunk in enumerate(chunks):
        t0 = time.perf_counter()
        batch = tokenizer([p.question for p in chunk], [p.text for p in chunk], truncation=True,
                          max_length=opts.max_length, padding=True, return_tensors="pt").to(device)
        logits = net(**batch).logits.view(-1)
        loss(logits, torch.tensor([p.label for p in chunk], device=device, dtype=logits.dtype)).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i or len(chunks) == 1:  # the first step warms up (allocations, optimiser state), unless it is the only one
            seconds += time.perf_counter() - t0
            counted += len(chunk)
    del net, optimizer
    return counted / seconds if seconds > 0 else float("inf")


def announce_training(pairs: int, epochs: int, per_second: float, device: str) -> float:
    """Say, before training starts, how long it will take (pairs x epochs at the measured rate); returns the
    estimate in seconds. A WARNING when it is a minute or more (shown at the CLI's default level), else INFO."""
    seconds = pairs * epochs / per_second if per_second > 0 else 0.0
    level = logging.WARNING if seconds >= 60 else logging.INFO
    log.log(level, "training the cross-encoder: %s pairs x %d epoch(s) at %.1f pairs/s (measured here on a few "
            "batches, %s) = about %s (an estimate; the held-back evaluation before and after adds to it)",
            f"{pairs:,}", epochs, per_second, device, _duration(seconds))
    return seconds


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def train_cross_encoder(model: object, pairs: Sequence[Pair], opts: TrainOptions) -> LossLog:
    """Train ``model`` in place on ``pairs`` (see :func:`cross_encoder_trainer`), with progress and ETA."""
    with tempfile.TemporaryDirectory(prefix="medcite-train-") as tmp:
        return run_trainer(cross_encoder_trainer(model, pairs, opts, tmp))


def train_reranker(
    data: str | Path,
    store_path: str | Path,
    out: str | Path,
    *,
    base: str = "minilm",
    opts: TrainOptions | None = None,
    index: str | Path | None = None,
) -> dict[str, object]:
    """Fine-tune a cross-encoder and write it (plus ``training.json``) to ``out``. Returns the report."""
    st = require("sentence_transformers", "train", "training a reranker")
    opts = opts or TrainOptions()
    opts.check()
    opts = dataclasses.replace(opts, device=train_device(opts.device))  # the report names the device used
    out = out_folder(out)
    started = time.perf_counter()
    seed_everything(opts.seed, opts.threads)
    mined_split = mine_split(data, store_path, index, opts, "medcite-minilm-ce-bioasq")
    split, groups, mined, pools = mined_split.split, mined_split.groups, mined_split.mined, mined_split.pools
    pairs = pairs_of(mined, opts.max_pairs, opts.seed)
    require_some_pairs(len(pairs))
    require_pairs(sum(p.label > 0 for p in pairs), split.train, sum(len(m.positives) for m in mined), opts.min_pairs)
    log.info("%d training pairs (%d positive) from %d questions; %d dev questions",
             len(pairs), sum(p.label > 0 for p in pairs), len(split.train), len(pools))
    map_bm25 = rerank_map(None, pools)
    with tempfile.TemporaryDirectory(prefix="medcite-base-") as tmp:
        base_dir = prepare_base(base, Path(tmp), opts.seed)
        model = st.CrossEncoder(base_dir, max_length=opts.max_length, device=opts.device, local_files_only=True)
        per_second = measure_pairs_per_second(model, pairs, opts)
        estimate = announce_training(len(pairs), opts.epochs, per_second, opts.device)
        before = CrossEncoderReranker(base_dir, batch_size=32, top_n=opts.eval_depth, device=opts.device,
                                      loaded=model)
        t0 = time.perf_counter()
        map_before = rerank_map(before, pools)
        eval_seconds = time.perf_counter() - t0
        seed_everything(opts.seed, opts.threads)
        t0 = time.perf_counter()
        losses = train_cross_encoder(model, pairs, opts)
        train_seconds = time.perf_counter() - t0
    model.model.save_pretrained(out)
    model.tokenizer.save_pretrained(out)
    after = CrossEncoderReranker(str(out), batch_size=32, max_length=opts.max_length, top_n=opts.eval_depth,
                                 device=opts.device)
    map_after = rerank_map(after, pools)
    report: dict[str, object] = {
        "kind": "cross-encoder",
        **split_report(base, data, store_path, opts, split, pools, groups),
        "pairs": {"total": len(pairs), "positive": sum(p.label > 0 for p in pairs)},
        "loss": losses.points,
        "trainer": {"class": "CrossEncoderTrainer", "loss": "BinaryCrossEntropyLoss",
                    "batch_sampler": "sentence-transformers default (seeded shuffle)", **library_versions()},
        "metrics": {
            "map@10_bm25": round(map_bm25, 4),
            "map@10_before": round(map_before, 4),
            "map@10_after": round(map_after, 4),
            "eval": f"BM25 top {opts.eval_depth} reranked, MAP@10 with denominator min(|gold in store|, 10)",
        },
        "seconds": {"train": round(train_seconds, 1), "eval_once": round(eval_seconds, 1),
                    "total": round(time.perf_counter() - started, 1), "train_estimate": round(estimate, 1),
                    "pairs_per_second_measured": round(per_second, 2)},
    }
    write_report(out, report)
    log.info("MAP@10 on %d dev questions: BM25 %.4f, before %.4f, after %.4f",
             len(pools), map_bm25, map_before, map_after)
    return report
