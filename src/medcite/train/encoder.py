"""Adapt a bi-encoder to biomedical questions with in-batch (and optionally BM25 hard) negatives.

MultipleNegativesRankingLoss (Henderson et al. 2017, "Efficient Natural Language Response Suggestion
for Smart Reply"; the DPR recipe of Karpukhin et al. 2020): each question's gold document is the
positive and every other document in the batch a negative; with ``negatives=N`` each row also brings
N BM25 hits of its question that are not gold (DPR's "gold + one BM25 negative" batches). Batches never
hold the same question or document twice, nor a document that is gold for another question of the
batch, so no gold document is ever used as a negative of a question it answers. Evaluation: MAP@10
(BioASQ denominator) of cosine similarity over the BM25 top 100 of each held-back question, before and
after. The result is a sentence-transformers folder (``modules.json`` + a Hugging Face ``config.json``)
that the dense encoders and the embedding reranker load by path.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus.store import DocumentStore
from ..errors import InputError
from ..registry import require
from ..rerank.embedding import EmbeddingReranker
from ..types import Article
from .common import LossLog, TrainLoop, TrainOptions, base_model_dir, out_folder, seed_everything, write_report
from .data import (
    Mined,
    Pair,
    bm25_searcher,
    eval_pools,
    mine_questions,
    read_bioasq,
    split_questions,
    whole_questions,
)
from .reranker import rerank_map

log = logging.getLogger(__name__)


class _STEncoder:
    """A loaded SentenceTransformer seen through the Encoder shape the embedding reranker needs."""

    def __init__(self, model: Any, batch_size: int = 32) -> None:
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


def unique_batches(examples: Sequence[Example], batch_size: int, seed: int) -> list[list[Example]]:
    """Shuffle, then fill batches greedily so that no batch repeats a question or a document, and no
    document in a batch is gold for another question of the batch (every document in a batch is a
    negative for every question but its own, so that would teach a relevant document to score low)."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    batches: list[list[Example]] = []
    open_batches: list[tuple[list[Example], set[str], set[str], set[str]]] = []
    for ex in order:
        docs = ex.pmids
        gold = ex.gold | {ex.pair.pmid}
        for batch, qids, pmids, batch_gold in open_batches:
            if ex.pair.qid not in qids and not docs & pmids and not docs & batch_gold and not gold & pmids:
                batch.append(ex)
                qids.add(ex.pair.qid)
                pmids.update(docs)
                batch_gold.update(gold)
                break
        else:
            open_batches.append(([ex], {ex.pair.qid}, set(docs), set(gold)))
        full = [b for b in open_batches if len(b[0]) == batch_size]
        batches.extend(b[0] for b in full)
        open_batches = [b for b in open_batches if len(b[0]) < batch_size]
    batches.extend(b[0] for b in open_batches if len(b[0]) > 1)  # a batch of one has no negatives
    return batches


def train_bi_encoder(model: Any, examples: Sequence[Example], opts: TrainOptions) -> LossLog:
    """The MultipleNegativesRankingLoss loop (AdamW, warm-up then linear decay), with progress and ETA."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import batch_to_device

    loss_fn = MultipleNegativesRankingLoss(model)
    epochs = [unique_batches(examples, opts.batch_size, opts.seed + e) for e in range(opts.epochs)]
    with TrainLoop(model, opts, sum(len(b) for b in epochs)) as loop:
        for batches in epochs:
            for batch in batches:
                columns = [[ex.pair.question for ex in batch], [ex.pair.text for ex in batch]]
                columns += [[ex.negatives[j].text for ex in batch] for j in range(len(batch[0].negatives))]
                features = [batch_to_device(model.preprocess(col), model.device) for col in columns]
                loop.step(loss_fn(features, torch.zeros(len(batch))))
    return loop.losses


def train_encoder(
    data: str | Path,
    store_path: str | Path,
    out: str | Path,
    *,
    base: str = "minilm",
    opts: TrainOptions | None = None,
    index: str | Path | None = None,
) -> dict[str, Any]:
    """Adapt a sentence-transformers bi-encoder and write it (plus ``training.json``) to ``out``."""
    st = require("sentence_transformers", "train", "training a bi-encoder")
    opts = opts or TrainOptions(lr=3e-5, batch_size=32, negatives=1)
    opts.check()
    if opts.batch_size < 2:
        raise InputError("in-batch negatives need --batch-size of at least 2")
    out = out_folder(out)
    started = time.perf_counter()
    seed_everything(opts.seed, opts.threads)
    split = split_questions(read_bioasq(data), opts.dev_fraction, opts.seed)
    dev = split.dev[: opts.max_dev] if opts.max_dev else split.dev
    with DocumentStore.open(store_path) as store, bm25_searcher(store, index) as searcher:
        mined = mine_questions(split.train, store, searcher, negatives=opts.negatives, depth=opts.mine_depth)
        examples = make_examples(mined, opts.negatives, opts.max_pairs, opts.seed)
        pools = eval_pools(dev, store, searcher, opts.eval_depth)
    if not examples:
        raise InputError("no training pairs: no training question has a gold document in the store",
                         hint="check that --corpus holds the PMIDs of the --data questions")
    model = st.SentenceTransformer(base_model_dir(base), device="cpu", local_files_only=True)
    model.max_seq_length = opts.max_length
    map_bm25 = rerank_map(None, pools)
    map_before = rerank_map(EmbeddingReranker(_STEncoder(model), top_n=opts.eval_depth), pools)
    seed_everything(opts.seed, opts.threads)
    t0 = time.perf_counter()
    losses = train_bi_encoder(model, examples, opts)
    train_seconds = time.perf_counter() - t0
    model.save(str(out))
    trained = st.SentenceTransformer(str(out), device="cpu", local_files_only=True)
    map_after = rerank_map(EmbeddingReranker(_STEncoder(trained), top_n=opts.eval_depth), pools)
    report = {
        "kind": "bi-encoder",
        "base": base,
        "data": str(data),
        "store": str(store_path),
        "options": opts.as_dict(),
        "questions": {"train": len(split.train), "dev": len(split.dev), "dev_evaluated": len(pools)},
        "dev_ids": [item.question.id for item in pools],
        "pairs": {"total": len(examples) * (1 + opts.negatives), "positive": len(examples),
                  "hard_negatives": len(examples) * opts.negatives,
                  "batches_per_epoch": len(unique_batches(examples, opts.batch_size, opts.seed))},
        "loss": losses.points,
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
