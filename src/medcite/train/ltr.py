"""``medcite train ltr``: a LightGBM LambdaMART ranker over the cheap features of :mod:`medcite.rerank.ltr_features`.

The candidates are exactly what the reranker will see: the first stage of a preset (``hybrid`` by default:
BM25 + packaged MiniLM, RRF) run over the user's store, top ``top_n``. Questions are split by question with
near-duplicates on one side (:func:`medcite.train.data.training_split`); a slice of the training questions
stops the boosting early (the held-back questions are only measured, never used to choose anything); the
report gives MAP@10, nDCG@10 and R@100 of the first stage and of the model on the held-back questions, and
the gain importance of each feature. The model folder is written atomically (a temporary sibling renamed
into place), so an interrupted run leaves no half model that `medcite models build` would take as done.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from ..errors import InputError
from ..io import write_json
from ..progress import progress
from ..rerank.ltr_features import DEFAULT_GROUPS, GROUPS
from ..types import Hit
from .common import require_questions
from .data import Question, Split, read_bioasq, split_questions, training_split
from .dedup import Groups

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..corpus.store import DocumentStore
    from ..rerank.ltr import LTRReranker

log = logging.getLogger(__name__)

METRICS = ["MAP@10", "nDCG@10", "R@100"]


@dataclass
class LTROptions:
    """Options of one LTR training run (all kept in ``training.json``)."""

    first_stage: str = "hybrid"
    top_n: int = 100
    groups: tuple[str, ...] = DEFAULT_GROUPS
    encoders: tuple[str, ...] = ("minilm",)
    dev_fraction: float = 0.2
    valid_fraction: float = 0.15
    seed: int = 13
    max_train: int | None = None
    max_dev: int | None = None
    trees: int = 1000
    learning_rate: float = 0.05
    leaves: int = 15
    min_child_samples: int = 20
    early_stopping: int = 50
    threads: int = 1
    min_questions: int = 20
    exclude: tuple[str, ...] = field(default_factory=tuple)

    def check(self) -> None:
        bad = [g for g in self.groups if g not in GROUPS]
        if bad or not self.groups:
            raise InputError(f"unknown or no feature groups {list(bad) or []}", hint=f"groups: {', '.join(GROUPS)}")
        if not 0 < self.dev_fraction < 1 or not 0 < self.valid_fraction < 1:
            raise InputError("--dev-fraction and the validation fraction must be between 0 and 1")
        if self.top_n < 2:
            raise InputError(f"--top-n must be at least 2, got {self.top_n}")


@dataclass
class QueryRows:
    """One question's candidates, their feature rows and 0/1 labels."""

    question: Question
    hits: list[Hit]
    x: np.ndarray
    y: np.ndarray


def _atomic_folder(out: Path, write: Callable[[Path], None]) -> None:
    """Write into a temporary sibling of ``out``, then rename it to ``out`` (which must be new or empty)."""
    if out.exists() and any(out.iterdir()):
        raise InputError(f"output folder {out} is not empty", hint="give a new or empty --out folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        write(tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: the first stage the model reorders: question text -> fused hits, best first (a RetrievalPipeline's
#: ``retrieve(...).rankings["retrieval"]``; built by the caller, since ``train`` sits below ``pipeline``)
FirstStage = Callable[[str], list[Hit]]


def collect(first_stage: FirstStage, store: DocumentStore, reranker: LTRReranker, questions: Sequence[Question],
            relevant: Callable[[Question], set[str]], desc: str) -> list[QueryRows]:
    """First stage + features of each question; labels from ``relevant``."""
    out = []
    for q in progress(questions, desc=desc, unit="q"):
        fused = first_stage(q.body)
        articles = store.get_many([h.pmid for h in fused[: reranker.top_n]])
        hits, x = reranker.matrix(q.body, fused, articles)
        gold = relevant(q)
        out.append(QueryRows(q, hits, x, np.array([1.0 if h.pmid in gold else 0.0 for h in hits])))
    return out


def evaluate(rows: Sequence[QueryRows], scores: Sequence[np.ndarray] | None, store_gold: dict[str, set[str]]
             ) -> dict[str, float]:
    """MAP@10 / nDCG@10 / R@100 of the first-stage order (``scores`` None) or of the model's scores."""
    from ..evaluate.retrieval import evaluate_retrieval

    run = {}
    for i, r in enumerate(rows):
        order = range(len(r.hits)) if scores is None else np.argsort(-scores[i], kind="stable")
        run[r.question.id] = [Hit(r.hits[j].pmid, 0.0, n) for n, j in enumerate(order, start=1)]
    qrels = {r.question.id: {p: 1 for p in store_gold[r.question.id]} for r in rows}
    report = evaluate_retrieval(run, qrels, METRICS)
    return {m: round(v, 4) for m, v in report.aggregate.items()}


def fit_booster(lgb: Any, fit: Sequence[QueryRows], valid: Sequence[QueryRows], names: Sequence[str],
                opts: LTROptions, columns: Sequence[int] | None = None) -> tuple[Any, int]:
    """LambdaMART on ``fit`` with early stopping on ``valid`` (NDCG@10); ``columns``: a subset of the features
    (ablations). Returns the booster and its best iteration."""
    cols = list(range(len(names))) if columns is None else list(columns)
    params = {"objective": "lambdarank", "learning_rate": opts.learning_rate, "num_leaves": opts.leaves,
              "min_data_in_leaf": opts.min_child_samples, "bagging_fraction": 0.8, "bagging_freq": 1,
              "feature_fraction": 0.8, "lambdarank_truncation_level": 20, "eval_at": [10], "metric": "ndcg",
              "seed": opts.seed, "num_threads": opts.threads, "verbose": -1, "deterministic": True}
    train_set = lgb.Dataset(np.vstack([r.x[:, cols] for r in fit]), np.concatenate([r.y for r in fit]),
                            group=[len(r.hits) for r in fit], feature_name=[names[c] for c in cols])
    valid_set = lgb.Dataset(np.vstack([r.x[:, cols] for r in valid]), np.concatenate([r.y for r in valid]),
                            group=[len(r.hits) for r in valid], reference=train_set)
    booster = lgb.train(params, train_set, num_boost_round=opts.trees, valid_sets=[valid_set],
                        callbacks=[lgb.early_stopping(opts.early_stopping, verbose=False)])
    return booster, int(booster.best_iteration or opts.trees)


@dataclass
class _LTRQuestions:
    """The questions of an LTR training: ``fit`` (those with a gold article in the store), ``valid`` (early
    stopping) and ``dev`` (held back, split by duplicate group), and the gold articles the store holds of each."""

    split: Split
    groups: Groups
    fit: list[Question]
    valid: list[Question]
    dev: list[Question]
    known: dict[str, set[str]]

    @classmethod
    def choose(cls, data: str | Path, store: DocumentStore, opts: LTROptions) -> _LTRQuestions:
        excluded = set(opts.exclude)
        questions = [q for q in read_bioasq(data) if q.id not in excluded]
        split, groups = training_split(questions, opts.dev_fraction, opts.seed)
        inner = split_questions(split.train, opts.valid_fraction, opts.seed + 1)
        fit_qs = inner.train[: opts.max_train] if opts.max_train else inner.train
        dev_qs = split.dev[: opts.max_dev] if opts.max_dev else split.dev
        require_questions(store, fit_qs, dev_qs, opts.min_questions, "medcite-ltr-bioasq")
        known = {q.id: store.existing(q.gold) for q in [*fit_qs, *inner.dev, *dev_qs]}
        return cls(split, groups, [q for q in fit_qs if known[q.id]], inner.dev, dev_qs, known)


def train_ltr(data: str | Path, store: DocumentStore, out: str | Path, first_stage: FirstStage, ctx: BuildContext,
              opts: LTROptions | None = None, *, first_stage_hash: str = "",
              rows: dict[str, list[QueryRows]] | None = None) -> dict[str, object]:
    """Train the LTR model on BioASQ ``data`` over ``store`` and write it to ``out``. Returns the report.

    ``first_stage`` runs the retrieval the model reorders (``opts.first_stage`` names it in the report);
    ``ctx`` is its build context (the features reuse its indexes and their stored vectors). ``rows``: a dict
    that receives the ``fit``, ``valid`` and ``dev`` feature rows (benchmarks reuse them for ablations).
    """
    from ..registry import require
    from ..rerank.ltr import BOOSTER, FORMAT, HEAD, LTRReranker, feature_sources
    from ..rerank.ltr_features import FEATURE_VERSION, Features

    lgb = require("lightgbm", "train", "training the ltr reranker")
    opts = opts or LTROptions()
    opts.check()
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise InputError(f"output folder {out} is not empty", hint="give a new or empty --out folder")
    started = time.perf_counter()
    qs = _LTRQuestions.choose(data, store, opts)
    split, groups, known = qs.split, qs.groups, qs.known
    fit_qs, valid_qs, dev_qs = qs.fit, qs.valid, qs.dev
    sources = feature_sources(ctx, "bm25", opts.encoders, prf="prf" in opts.groups)
    features = Features(sources, opts.groups)
    ranker = LTRReranker(None, features, top_n=opts.top_n)
    t0 = time.perf_counter()
    fit = collect(first_stage, store, ranker, fit_qs, lambda q: set(groups.gold(q.id)), "features (train)")
    valid = collect(first_stage, store, ranker, [q for q in valid_qs if known[q.id]],
                    lambda q: set(groups.gold(q.id)), "features (early stop)")
    dev = collect(first_stage, store, ranker, [q for q in dev_qs if known[q.id]], lambda q: set(q.gold),
                  "features (held back)")
    feature_seconds = time.perf_counter() - t0
    n_rows = sum(len(r.hits) for r in [*fit, *valid, *dev])
    if rows is not None:
        rows.update(fit=fit, valid=valid, dev=dev)
    fit = [r for r in fit if r.y.any()]
    valid = [r for r in valid if r.y.any()] or fit[-max(1, len(fit) // 10):]
    t0 = time.perf_counter()
    booster, best = fit_booster(lgb, fit, valid, features.names, opts)
    train_seconds = time.perf_counter() - t0
    store_gold = {r.question.id: known[r.question.id] for r in dev}
    before = evaluate(dev, None, store_gold)
    after = evaluate(dev, [booster.predict(r.x, num_iteration=best, num_threads=1) for r in dev], store_gold)
    gains = booster.feature_importance(importance_type="gain", iteration=best)
    importance = dict(sorted(((n, round(float(g), 2)) for n, g in zip(features.names, gains, strict=True)),
                             key=lambda kv: -kv[1]))
    head = {"format": FORMAT, "feature_version": FEATURE_VERSION, "groups": list(features.groups),
            "features": features.names,
            "encoders": list(opts.encoders), "first_stage": opts.first_stage, "first_stage_hash": first_stage_hash,
            "top_n": opts.top_n, "bm25_depth": sources.bm25_depth, "best_iteration": best}
    report = {
        "kind": "ltr", "medcite_version": __version__, "lightgbm": lgb.__version__,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data": str(data), "store": str(store.path), "options": asdict(opts),
        "questions": {"train": len(fit), "early_stopping": len(valid), "dev": len(split.dev),
                      "dev_evaluated": len(dev)},
        "duplicates": groups.summary(), "rows": n_rows, "best_iteration": best,
        "metrics": {"first_stage": before, "ltr": after,
                    "map@10_before": before["MAP@10"], "map@10_after": after["MAP@10"],
                    "eval": f"held-back questions, {opts.first_stage} top {opts.top_n} reordered; relevant = gold in "
                            "the store"},
        "feature_importance_gain": importance,
        "dev_ids": [r.question.id for r in dev],
        "seconds": {"features": round(feature_seconds, 1), "train": round(train_seconds, 1),
                    "total": round(time.perf_counter() - started, 1)},
    }

    def write(folder: Path) -> None:
        booster.save_model(str(folder / BOOSTER), num_iteration=best)
        write_json(folder / HEAD, head)
        write_json(folder / "training.json", report)

    _atomic_folder(out, write)
    log.info("LTR MAP@10 on %d held-back questions: first stage %.4f, ltr %.4f", len(dev), before["MAP@10"],
             after["MAP@10"])
    return report
