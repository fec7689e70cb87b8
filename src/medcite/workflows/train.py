"""``medcite train``: train one of medcite's models from the options the CLI parsed.

Each function runs one training and returns its report (also written to ``OUT/training.json``); the CLI prints
it. The option types are re-exported here, so that ``cli/`` builds them without importing ``medcite.train``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..io import JSONObject
from ..train.common import TrainOptions as TrainOptions
from ..train.ltr import LTROptions as LTROptions
from ..train.qa import YesNoTrainOptions as YesNoTrainOptions
from ..train.reader import ReaderTrainOptions as ReaderTrainOptions
from ..train.reader_data import DataOptions as DataOptions
from ..train.stance import StanceTrainOptions as StanceTrainOptions

Report = dict[str, object]


def train_reranker(data: str, corpus: str, out: str, *, base: str, index: str | None, opts: TrainOptions) -> Report:
    """Fine-tune a cross-encoder on gold and hard-negative pairs of the BioASQ file ``data`` over ``corpus``."""
    from ..train.reranker import train_reranker as train

    return train(data, corpus, out, base=base, index=index, opts=opts)


def train_dsgt(data: str, corpus: str, out: str, *, min_questions: int, overrides: JSONObject | None,
               index: str | None) -> JSONObject:
    """DS@GT's cross-encoder as paper 004 trained it (``overrides``: what the recipe leaves open)."""
    from ..train.dsgt import train_dsgt as train

    return train(data, corpus, out, min_questions=min_questions, overrides=overrides, index=index)


def train_encoder(data: str, corpus: str, out: str, *, base: str, index: str | None, opts: TrainOptions) -> Report:
    """Adapt the bi-encoder with in-batch (and hard) negatives on the BioASQ file ``data`` over ``corpus``."""
    from ..train.encoder import train_encoder as train

    return train(data, corpus, out, base=base, index=index, opts=opts)


def train_ltr(data: str, corpus: str, out: str, opts: LTROptions) -> Report:
    """The learning-to-rank reranker over the first stage of the preset ``opts.first_stage`` on ``corpus``."""
    from ..corpus.store import DocumentStore
    from ..train.ltr import train_ltr as train
    from .model_builds import first_stage_pipeline

    opts.check()
    with DocumentStore.open(corpus) as store, first_stage_pipeline(opts.first_stage, store) as (run, ctx, h):
        return train(data, store, out, run, ctx, opts, first_stage_hash=h)


def train_stance(data: str, out: str, *, base: str, opts: StanceTrainOptions) -> Report:
    """The stance classifier on a HealthVer-style CSV."""
    from ..train.stance import train_stance as train

    return train(data, out, base=base, opts=opts)


def train_yesno(data: Sequence[str], out: str, *, base: str, opts: YesNoTrainOptions) -> Report:
    """The retired yes/no baseline head (``train/yesno_baseline.py``), kept to measure medcite's reader against."""
    from ..train.qa import train_yesno as train

    return train(data, out, base=base, opts=opts)


def train_ideal(data: str, out: str, *, unit: str, seed: int) -> Report:
    """The ideal-answer scorer."""
    from ..train.qa import train_ideal as train

    return train(data, out, unit=unit, seed=seed)


def train_answer(data: str, out: str, *, seed: int) -> Report:
    """The answer-sentence scorer of the offline preset."""
    from ..train.answer import train_answer as train

    return train(data, out, seed=seed)


def train_reader(out: str, *, bioasq: str | None, pubmedqa: str | None, healthver: str | None,
                 opts: ReaderTrainOptions, bioasq_extra: Sequence[str] = (), stance_dir: str | None = None) -> Report:
    """medcite's reader: a base whose top layers each branch trains, heads for relevance, yes/no, stance and
    answer spans."""
    from ..train.reader import train_reader as train

    return train(out, bioasq=bioasq, pubmedqa=pubmedqa, healthver=healthver, opts=opts,
                 bioasq_extra=bioasq_extra, stance_dir=stance_dir)


__all__ = ["DataOptions", "LTROptions", "ReaderTrainOptions", "StanceTrainOptions", "TrainOptions",
           "YesNoTrainOptions", "train_answer", "train_dsgt", "train_encoder", "train_ideal", "train_ltr",
           "train_reader", "train_reranker", "train_stance", "train_yesno"]
