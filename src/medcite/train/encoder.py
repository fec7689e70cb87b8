"""Adapt a bi-encoder to biomedical questions with in-batch (and optionally BM25 or dense hard) negatives.

MultipleNegativesRankingLoss (Henderson et al. 2017, "Efficient Natural Language Response Suggestion
for Smart Reply"; the DPR recipe of Karpukhin et al. 2020): each question's gold document is the
positive and every other document in the batch a negative; with ``negatives=N`` each row also brings
N hard negatives of its question that are not gold: BM25 hits (DPR's "gold + one BM25 negative"
batches) or, with ``negatives_from="dense"``, the nearest documents by a bi-encoder (sentence-transformers'
``mine_hard_negatives``; DS@GT's dense-index negatives). Batches never hold the same question or document
twice, nor a document that is gold for another question of the batch, so no gold document is ever used as
a negative of a question it answers. Evaluation: MAP@10 (BioASQ denominator) of cosine similarity over the
BM25 top 100 of each held-back question, before and after. The result is a sentence-transformers folder
(``modules.json`` + a Hugging Face ``config.json``) that the dense encoders and the embedding reranker load
by path.

The loop is sentence-transformers' ``SentenceTransformerTrainer`` (AdamW, warm-up and linear decay,
clipping, seeding: :func:`.common.trainer_arguments`). What stays medcite's own, because the library could
not keep it:

* the batching rule, given to the trainer as a custom batch sampler (:func:`unique_batch_sampler`): the
  library's ``NoDuplicatesBatchSampler`` only compares the texts of a batch's rows, so it cannot know that a
  document is gold for another question of the batch (gold sets are not columns of the dataset) nor that two
  rows come from the same question under different texts;
* all epochs run as one trainer epoch: the trainer sizes the learning-rate schedule as batches-per-epoch x
  epochs from the sampler's length, but the greedy fill leaves a different number of batches for each
  epoch's shuffle, so per-epoch sampling would stop early or cut the schedule short;
* the evaluation (MAP@10 over BM25 pools with the BioASQ denominator, :func:`.reranker.rerank_map`), which no
  library evaluator computes.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import tempfile
import time
from collections.abc import Iterator, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..registry import require
from ..rerank.embedding import EmbeddingReranker
from ..types import Article
from .common import (
    LossLog,
    SentenceModel,
    TrainerLike,
    TrainOptions,
    base_model_dir,
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
from .data import (
    Mined,
    Pair,
    whole_questions,
)
from .reranker import rerank_map

log = logging.getLogger(__name__)


class _STEncoder:
    """A loaded SentenceTransformer seen through the Encoder shape the embedding reranker needs."""

    def __init__(self, model: SentenceModel, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False))

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        texts = [a.text for a in articles]
        return np.asarray(self.model.encode(texts, batch_size=self.batch_size, show_progress_bar=False))


@dataclass(frozen=True)
class Example:
    """One row of a MultipleNegativesRankingLoss batch: a question, one gold document and (with
    ``--negatives N``) N BM25 hard negatives of the same question; ``gold`` is every gold PMID of it."""

    pair: Pair
    negatives: tuple[Pair, ...] = ()
    gold: frozenset[str] = frozenset()

    @property
    def pmids(self) -> set[str]:
        return {self.pair.pmid, *(n.pmid for n in self.negatives)}


def make_examples(mined: Sequence[Mined], negatives: int, max_pairs: int | None, seed: int) -> list[Example]:
    """Each gold pair with ``negatives`` hard negatives of its question (cycled through the question's
    list, so a question's gold documents get different ones), whole questions up to ``max_pairs`` gold
    pairs after a seeded shuffle. A question with no hard negative is left out when negatives are asked for.
    """
    kept = whole_questions(mined, max_pairs, seed, size=lambda m: len(m.positives),
                           keep=lambda m: not negatives or bool(m.negatives))
    without = sum(not m.negatives for m in mined) if negatives else 0
    if without:
        log.warning("%d questions have no BM25 hard negative and were left out", without)
    out: list[Example] = []
    for m in kept:
        for i, pair in enumerate(m.positives):
            negs = tuple(m.negatives[(i * negatives + j) % len(m.negatives)] for j in range(negatives))
            out.append(Example(pair, negs, m.gold))
    return out


def unique_batch_indices(examples: Sequence[Example], batch_size: int, seed: int) -> list[list[int]]:
    """Shuffle, then fill batches greedily so that no batch repeats a question or a document, and no
    document in a batch is gold for another question of the batch (every document in a batch is a
    negative for every question but its own, so that would teach a relevant document to score low).
    Returns positions in ``examples``; a leftover batch of one is dropped (it has no negatives)."""
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    batches: list[list[int]] = []
    open_batches: list[tuple[list[int], set[str], set[str], set[str]]] = []
    for i in order:
        ex = examples[i]
        docs = ex.pmids
        gold = ex.gold | {ex.pair.pmid}
        for batch, qids, pmids, batch_gold in open_batches:
            if ex.pair.qid not in qids and not docs & pmids and not docs & batch_gold and not gold & pmids:
                batch.append(i)
                qids.add(ex.pair.qid)
                pmids.update(docs)
                batch_gold.update(gold)
                break
        else:
            open_batches.append(([i], {ex.pair.qid}, set(docs), set(gold)))
        full = [b for b in open_batches if len(b[0]) == batch_size]
        batches.extend(b[0] for b in full)
        open_batches = [b for b in open_batches if len(b[0]) < batch_size]
    batches.extend(b[0] for b in open_batches if len(b[0]) > 1)  # a batch of one has no negatives
    return batches


def unique_batches(examples: Sequence[Example], batch_size: int, seed: int) -> list[list[Example]]:
    """The batches of :func:`unique_batch_indices` as examples."""
    return [[examples[i] for i in batch] for batch in unique_batch_indices(examples, batch_size, seed)]


def unique_batch_sampler(examples: Sequence[Example], epochs: int) -> type:
    """A batch-sampler factory for the sentence-transformers trainer: every epoch's
    :func:`unique_batch_indices` (seed ``seed + epoch``, the trainer's seed) in one trainer epoch.

    All epochs are one trainer epoch because the trainer sizes the learning-rate schedule as
    ``len(sampler) x epochs`` while the greedy fill leaves a different number of batches per shuffle;
    one pass over all of them keeps the schedule exact and the batches those of the hand-written loop.
    """
    from sentence_transformers.base.sampler import DefaultBatchSampler

    class UniqueBatchSampler(DefaultBatchSampler):  # type: ignore[misc]
        def __init__(self, dataset: Sized, batch_size: int, drop_last: bool,
                     valid_label_columns: list[str] | None = None, generator: Any = None, seed: int = 0) -> None:
            super().__init__(dataset, batch_size=batch_size, drop_last=drop_last,
                             valid_label_columns=valid_label_columns, generator=generator, seed=seed)
            if len(dataset) != len(examples):
                raise ValueError(f"the dataset has {len(dataset)} rows for {len(examples)} examples")
            self.batches = [b for e in range(epochs) for b in unique_batch_indices(examples, batch_size, seed + e)]

        def __iter__(self) -> Iterator[list[int]]:
            return iter(self.batches)

        def __len__(self) -> int:
            return len(self.batches)

    return UniqueBatchSampler


def examples_dataset(examples: Sequence[Example]) -> object:
    """The trainer's dataset: ``anchor``, ``positive`` and ``negative_1..N`` text columns, row i = example i."""
    from datasets import Dataset

    columns: dict[str, list[str]] = {"anchor": [ex.pair.question for ex in examples],
                                     "positive": [ex.pair.text for ex in examples]}
    for j in range(len(examples[0].negatives) if examples else 0):
        columns[f"negative_{j + 1}"] = [ex.negatives[j].text for ex in examples]
    return Dataset.from_dict(columns)


def bi_encoder_trainer(model: Any, examples: Sequence[Example], opts: TrainOptions, output_dir: str
                       ) -> TrainerLike:
    """A ``SentenceTransformerTrainer`` with MultipleNegativesRankingLoss and the unique-batch sampler."""
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    steps = sum(len(unique_batch_indices(examples, opts.batch_size, opts.seed + e)) for e in range(opts.epochs))
    args = trainer_arguments(SentenceTransformerTrainingArguments, opts, steps, output_dir, num_train_epochs=1,
                             batch_sampler=unique_batch_sampler(examples, opts.epochs))
    trainer = without_model_card(SentenceTransformerTrainer)
    return trainer(model=model, args=args, train_dataset=examples_dataset(examples),
                   loss=MultipleNegativesRankingLoss(model))


def train_bi_encoder(model: SentenceModel, examples: Sequence[Example], opts: TrainOptions) -> LossLog:
    """Train ``model`` in place on ``examples`` (see :func:`bi_encoder_trainer`), with progress and ETA."""
    with tempfile.TemporaryDirectory(prefix="medcite-train-") as tmp:
        return run_trainer(bi_encoder_trainer(model, examples, opts, tmp))


def train_encoder(
    data: str | Path,
    store_path: str | Path,
    out: str | Path,
    *,
    base: str = "minilm",
    opts: TrainOptions | None = None,
    index: str | Path | None = None,
) -> dict[str, object]:
    """Adapt a sentence-transformers bi-encoder and write it (plus ``training.json``) to ``out``."""
    st = require("sentence_transformers", "train", "training a bi-encoder")
    opts = opts or TrainOptions(lr=3e-5, batch_size=32, negatives=1)
    opts.check()
    opts = dataclasses.replace(opts, device=train_device(opts.device))  # the report names the device used
    if opts.batch_size < 2:
        raise InputError("in-batch negatives need --batch-size of at least 2")
    out = out_folder(out)
    started = time.perf_counter()
    seed_everything(opts.seed, opts.threads)
    model = st.SentenceTransformer(base_model_dir(base), device=opts.device, local_files_only=True)
    model.max_seq_length = opts.max_length
    mined_split = mine_split(data, store_path, index, opts, "medcite-minilm-bi-bioasq", default_miner=model)
    split, groups, mined, pools = mined_split.split, mined_split.groups, mined_split.mined, mined_split.pools
    examples = make_examples(mined, opts.negatives, opts.max_pairs, opts.seed)
    require_some_pairs(len(examples))
    require_pairs(len(examples), split.train, sum(len(m.positives) for m in mined), opts.min_pairs)
    map_bm25 = rerank_map(None, pools)
    map_before = rerank_map(EmbeddingReranker(_STEncoder(model), top_n=opts.eval_depth), pools)
    seed_everything(opts.seed, opts.threads)
    t0 = time.perf_counter()
    losses = train_bi_encoder(model, examples, opts)
    train_seconds = time.perf_counter() - t0
    model.save(str(out))
    trained = st.SentenceTransformer(str(out), device=opts.device, local_files_only=True)
    map_after = rerank_map(EmbeddingReranker(_STEncoder(trained), top_n=opts.eval_depth), pools)
    report: dict[str, object] = {
        "kind": "bi-encoder",
        **split_report(base, data, store_path, opts, split, pools, groups),
        "pairs": {"total": len(examples) * (1 + opts.negatives), "positive": len(examples),
                  "hard_negatives": len(examples) * opts.negatives,
                  "batches_per_epoch": len(unique_batches(examples, opts.batch_size, opts.seed))},
        "loss": losses.points,
        "trainer": {"class": "SentenceTransformerTrainer", "loss": "MultipleNegativesRankingLoss",
                    "batch_sampler": "medcite unique batches", **library_versions()},
        "metrics": {
            "map@10_bm25": round(map_bm25, 4),
            "map@10_before": round(map_before, 4),
            "map@10_after": round(map_after, 4),
            "eval": f"cosine over BM25 top {opts.eval_depth}, MAP@10 with denominator min(|gold in store|, 10)",
        },
        "seconds": {"train": round(train_seconds, 1), "total": round(time.perf_counter() - started, 1)},
    }
    write_report(out, report)
    log.info("dense MAP@10 on %d dev questions: before %.4f, after %.4f", len(pools), map_before, map_after)
    return report
