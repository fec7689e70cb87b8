"""Adapt a bi-encoder to biomedical questions with in-batch negatives.

MultipleNegativesRankingLoss (Henderson et al. 2017, "Efficient Natural Language Response Suggestion
for Smart Reply"; the DPR recipe of Karpukhin et al. 2020): each question's gold document is the
positive and every other document in the batch a negative. Batches never hold the same question or
document twice, so no gold document is ever used as a negative of its own question. Evaluation: MAP@10
(BioASQ denominator) of cosine similarity over the BM25 top 100 of each held-back question, before and
after. The result is a sentence-transformers folder (``modules.json`` + a Hugging Face ``config.json``)
that the dense encoders and the embedding reranker load by path.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus.store import DocumentStore
from ..errors import InputError
from ..registry import require
from ..rerank.embedding import EmbeddingReranker
from ..types import Article
from .common import LossLog, TrainLoop, TrainOptions, base_model_dir, out_folder, seed_everything, write_report
from .data import Pair, bm25_searcher, eval_pools, mine_pairs, read_bioasq, split_questions
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


def unique_batches(pairs: Sequence[Pair], batch_size: int, seed: int) -> list[list[Pair]]:
    """Shuffle, then fill batches greedily so that no batch repeats a question or a document."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    batches: list[list[Pair]] = []
    open_batches: list[tuple[list[Pair], set[str], set[str]]] = []
    for pair in order:
        for batch, qids, pmids in open_batches:
            if pair.qid not in qids and pair.pmid not in pmids:
                batch.append(pair)
                qids.add(pair.qid)
                pmids.add(pair.pmid)
                break
        else:
            open_batches.append(([pair], {pair.qid}, {pair.pmid}))
        full = [b for b in open_batches if len(b[0]) == batch_size]
        batches.extend(b[0] for b in full)
        open_batches = [b for b in open_batches if len(b[0]) < batch_size]
    batches.extend(b[0] for b in open_batches if len(b[0]) > 1)  # a batch of one has no negatives
    return batches


def train_bi_encoder(model: Any, pairs: Sequence[Pair], opts: TrainOptions) -> LossLog:
    """The MultipleNegativesRankingLoss loop (AdamW, warm-up then linear decay), with progress and ETA."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import batch_to_device

    loss_fn = MultipleNegativesRankingLoss(model)
    epochs = [unique_batches(pairs, opts.batch_size, opts.seed + e) for e in range(opts.epochs)]
    with TrainLoop(model, opts, sum(len(b) for b in epochs)) as loop:
        for batches in epochs:
            for batch in batches:
                features = [
                    batch_to_device(model.preprocess([p.question for p in batch]), model.device),
                    batch_to_device(model.preprocess([p.text for p in batch]), model.device),
                ]
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
    opts = opts or TrainOptions(lr=3e-5, batch_size=32)
    opts.check()
    if opts.batch_size < 2:
        raise InputError("in-batch negatives need --batch-size of at least 2")
    out = out_folder(out)
    started = time.perf_counter()
    seed_everything(opts.seed, opts.threads)
    split = split_questions(read_bioasq(data), opts.dev_fraction, opts.seed)
    dev = split.dev[: opts.max_dev] if opts.max_dev else split.dev
    with DocumentStore.open(store_path) as store, bm25_searcher(store, index) as searcher:
        pairs = [p for p in mine_pairs(split.train, store, searcher, negatives=0, max_pairs=opts.max_pairs,
                                       seed=opts.seed) if p.label > 0]
        pools = eval_pools(dev, store, searcher, opts.eval_depth)
    if not pairs:
        raise InputError("no training pairs: no training question has a gold document in the store",
                         hint="check that --corpus holds the PMIDs of the --data questions")
    model = st.SentenceTransformer(base_model_dir(base), device="cpu", local_files_only=True)
    model.max_seq_length = opts.max_length
    map_bm25 = rerank_map(None, pools)
    map_before = rerank_map(EmbeddingReranker(_STEncoder(model), top_n=opts.eval_depth), pools)
    seed_everything(opts.seed, opts.threads)
    t0 = time.perf_counter()
    losses = train_bi_encoder(model, pairs, opts)
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
        "pairs": {"total": len(pairs), "positive": len(pairs),
                  "batches_per_epoch": math.ceil(len(pairs) / opts.batch_size)},
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
