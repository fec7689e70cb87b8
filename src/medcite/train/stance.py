"""`medcite train stance`: the stance classifier, trained on HealthVer-style pairs with claims held back.

Two recipes, chosen by ``epochs``:

- ``epochs=0`` (default): the encoder stays frozen and a multinomial logistic regression (balanced class
  weights, standardised features, its regularisation C chosen by cross-validation over the training
  *claims*) is fitted on the features of :mod:`medcite.attribute.probe`. On the packaged MiniLM this is the
  recipe that generalises to unseen claims (docs/BENCHMARKS.md "stance"); it trains in minutes on a CPU.
- ``epochs>=1``: the whole encoder is fine-tuned as a 3-way sequence classifier with sentence-transformers'
  ``CrossEncoderTrainer`` (cross-entropy, classes balanced by oversampling, AdamW with linear warm-up and
  decay). The saved folder is an ordinary sequence-classification model labelled supports / contradicts /
  neutral. This is the recipe for a larger biomedical base model on a GPU.

Either way a seeded share of the distinct claims (never rows) is held back, and ``training.json`` reports
macro-F1, per-class F1, accuracy and the confusion matrix on them, beside the majority-class baseline.
Extra supervision (negation-rewritten claims, BioASQ yes/no snippets, PubMedQA) is added to the training
side only.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..errors import ConfigError, InputError
from ..registry import require
from .common import (
    PACKAGED,
    Classifier,
    Scaler,
    base_model_dir,
    out_folder,
    seed_everything,
    train_device,
    write_report,
)
from .stance_data import (
    LABELS,
    StancePair,
    balanced,
    bioasq_yesno,
    negated,
    pubmedqa,
    read_stance_csv,
    split_by_claim,
)

if TYPE_CHECKING:
    from ..attribute.probe import FeatureSpec, LinearHead

log = logging.getLogger(__name__)

C_GRID = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


class StanceMetrics(TypedDict):
    macro_f1: float
    per_class_f1: dict[str, float]
    accuracy: float
    confusion_matrix: dict[str, object]
    pairs: int
    gold_counts: dict[str, int]


@dataclass
class StanceTrainOptions:
    """Options of one stance training run (all stored in ``training.json``)."""

    epochs: int = 0
    dev_fraction: float = 0.25
    seed: int = 13
    c: float | None = None
    folds: int = 4
    max_length: int = 128
    layers: tuple[int, ...] = (1, 2, 3, 4)
    parts: tuple[str, ...] = ("pair", "siamese", "cues")
    negations: bool = False
    bioasq: str | None = None
    bioasq_exclude: Sequence[str] = field(default_factory=tuple)
    pubmedqa: str | None = None
    batch_size: int = 16
    lr: float = 3e-5
    warmup: float = 0.1
    threads: int | None = None
    device: str = "auto"

    def check(self) -> None:
        if self.epochs < 0:
            raise ConfigError(f"epochs must be 0 (linear head on a frozen encoder) or more, got {self.epochs}")
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(f"dev fraction must be between 0 and 1, got {self.dev_fraction}")
        if self.c is not None and self.c <= 0:
            raise ConfigError(f"C must be positive, got {self.c}")
        if self.folds < 2:
            raise ConfigError(f"cross-validation needs at least 2 folds, got {self.folds}")

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["bioasq_exclude"] = len(self.bioasq_exclude)
        return d


def stance_metrics(gold: Sequence[int], predicted: Sequence[int], *, present_only: bool = False) -> StanceMetrics:
    """Macro-F1, per-class F1, accuracy and the confusion matrix (rows gold, columns predicted); with
    ``present_only`` the macro-F1 averages the classes the gold labels hold (a set without neutral pairs)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    labels = list(range(len(LABELS)))
    per = f1_score(gold, predicted, labels=labels, average=None, zero_division=0)
    present = [i for i in labels if any(g == i for g in gold)] if present_only else labels
    return {
        "macro_f1": round(float(np.mean([per[i] for i in present])), 4),
        "per_class_f1": {name: round(float(v), 4) for name, v in zip(LABELS, per, strict=True)},
        "accuracy": round(float(accuracy_score(gold, predicted)), 4),
        "confusion_matrix": {"labels": list(LABELS),
                             "rows_gold_columns_predicted": confusion_matrix(gold, predicted, labels=labels).tolist()},
        "pairs": len(gold),
        "gold_counts": {name: int(sum(1 for g in gold if g == i)) for i, name in enumerate(LABELS)},
    }


def majority_baseline(train_labels: Sequence[int], gold: Sequence[int]) -> dict[str, object]:
    """Every held-back pair given the most frequent training label (the trivial baseline)."""
    top = max(range(len(LABELS)), key=lambda i: sum(1 for y in train_labels if y == i))
    m = stance_metrics(gold, [top] * len(gold))
    return {"label": LABELS[top], "macro_f1": m["macro_f1"], "accuracy": m["accuracy"]}


def training_pairs(train: Sequence[StancePair], opts: StanceTrainOptions) -> list[StancePair]:
    """The training side: the training claims' pairs plus the extra supervision asked for."""
    out = list(train)
    if opts.negations:
        out += negated(train)
    if opts.bioasq:
        out += bioasq_yesno(opts.bioasq, exclude=set(opts.bioasq_exclude))
    if opts.pubmedqa:
        out += pubmedqa(opts.pubmedqa)
    return out


def fit_head(x: np.ndarray, y: np.ndarray, groups: Sequence[str], opts: StanceTrainOptions
             ) -> tuple[Scaler, Classifier, float, dict[str, float]]:
    """(scaler, logistic regression, C, cross-validated macro-F1 per C): C by grouped CV unless given."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.preprocessing import StandardScaler

    def fit(xs: np.ndarray, ys: np.ndarray, c: float) -> tuple[Scaler, Classifier]:
        scaler = StandardScaler().fit(xs)
        clf = LogisticRegression(C=c, max_iter=5000, tol=1e-3, class_weight="balanced")
        return scaler, clf.fit(scaler.transform(xs), ys)

    cv: dict[str, float] = {}
    c = opts.c
    if c is None:
        folds = min(opts.folds, len(set(groups)))
        if folds < 2:
            raise InputError("too few training claims to choose C by cross-validation", hint="give --c")
        for cand in C_GRID:
            scores = []
            for tr, te in GroupKFold(n_splits=folds).split(x, y, groups):
                scaler, clf = fit(x[tr], y[tr], cand)
                scores.append(stance_metrics(y[te].tolist(), clf.predict(scaler.transform(x[te])).tolist())["macro_f1"])
            cv[f"{cand:g}"] = round(float(np.mean(scores)), 4)
        c = float(max(C_GRID, key=lambda k: (cv[f"{k:g}"], -k)))
        log.info("C chosen by %d-fold cross-validation over training claims: %g (macro-F1 %s)", folds, c, cv)
    scaler, clf = fit(x, y, c)
    return scaler, clf, c, cv


def _head(spec: FeatureSpec, scaler: Scaler, clf: Classifier, meta: dict[str, object], encoder: str | None
          ) -> LinearHead:
    from ..attribute.probe import LinearHead

    order = [list(clf.classes_).index(i) for i in range(len(LABELS))]
    return LinearHead(spec, np.asarray(scaler.mean_, dtype=np.float64),
                      np.where(scaler.scale_ > 0, scaler.scale_, 1.0).astype(np.float64),
                      np.asarray(clf.coef_, dtype=np.float64)[order],
                      np.asarray(clf.intercept_, dtype=np.float64)[order], meta, encoder)


def train_probe(base_dir: str, train: Sequence[StancePair], held: Sequence[StancePair], out: Path,
                opts: StanceTrainOptions, packaged: bool = True) -> dict[str, object]:
    """Frozen-encoder features + linear head; writes ``stance_head.json`` to ``out`` (``packaged``: the head
    names the packaged MiniLM; else the encoder and tokenizer are saved beside it)."""
    from ..attribute.probe import FeatureSpec, Featurizer

    transformers = require("transformers", "train", "training the stance classifier")
    require("sklearn", "train", "training the stance head")
    tokenizer = transformers.AutoTokenizer.from_pretrained(base_dir)
    encoder = transformers.AutoModel.from_pretrained(base_dir).eval().to(opts.device)
    spec = FeatureSpec(opts.max_length, tuple(opts.layers), tuple(opts.parts))
    featurize = Featurizer(tokenizer, encoder, spec, device=opts.device, progress="stance features")
    pairs = training_pairs(train, opts)
    t0 = time.perf_counter()
    x = featurize([p.claim for p in pairs], [p.evidence for p in pairs])
    y = np.array([p.label for p in pairs])
    x_held = featurize([p.claim for p in held], [p.evidence for p in held])
    feature_seconds = time.perf_counter() - t0
    log.info("features of %d training and %d held-back pairs in %.0f s", len(pairs), len(held), feature_seconds)
    scaler, clf, c, cv = fit_head(x, y, [p.claim for p in pairs], opts)
    predicted = clf.predict(scaler.transform(x_held)).tolist()
    if not packaged:
        encoder.cpu().save_pretrained(out)
        tokenizer.save_pretrained(out)
    _head(spec, scaler, clf, {"c": c, "trained_pairs": len(pairs)}, "minilm" if packaged else None).save(out)
    return {"recipe": "linear head on frozen encoder features (epochs=0)", "c": c, "cv_macro_f1_by_c": cv,
            "features": int(x.shape[1]), "feature_seconds": round(feature_seconds, 1),
            "held_back": stance_metrics([p.label for p in held], predicted)}


def train_finetune(base_dir: str, train: Sequence[StancePair], held: Sequence[StancePair], out: Path,
                   opts: StanceTrainOptions) -> dict[str, object]:
    """Fine-tune the whole encoder as a 3-way classifier (``CrossEncoderTrainer``, cross-entropy)."""
    st = require("sentence_transformers", "train", "fine-tuning the stance classifier")
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import CrossEntropyLoss

    from ..attribute.classifier import SequenceClassifierModel
    from .common import TrainOptions, run_trainer, trainer_arguments, without_model_card

    model = st.CrossEncoder(base_dir, num_labels=len(LABELS), max_length=opts.max_length, device=opts.device)
    config = model.model.config
    config.id2label = dict(enumerate(LABELS))
    config.label2id = {name: i for i, name in enumerate(LABELS)}
    pairs = balanced(training_pairs(train, opts), opts.seed)
    # premise first, as the stance backend reads a pair: (evidence, claim)
    data = Dataset.from_dict({"evidence": [p.evidence for p in pairs], "claim": [p.claim for p in pairs],
                              "label": [p.label for p in pairs]})
    loop = TrainOptions(epochs=opts.epochs, batch_size=opts.batch_size, lr=opts.lr, warmup=opts.warmup,
                        max_length=opts.max_length, seed=opts.seed, threads=opts.threads, device=opts.device)
    steps = math.ceil(len(pairs) / opts.batch_size) * opts.epochs
    with tempfile.TemporaryDirectory(prefix="medcite-train-stance-") as tmp:
        args = trainer_arguments(CrossEncoderTrainingArguments, loop, steps, tmp, num_train_epochs=opts.epochs)
        trainer = without_model_card(CrossEncoderTrainer)(model=model, args=args, train_dataset=data,
                                                          loss=CrossEntropyLoss(model))
        losses = run_trainer(trainer)
    scorer = SequenceClassifierModel(model.tokenizer, model.model, [0, 1, 2], device=opts.device)
    probs = scorer.probabilities([p.claim for p in held], [p.evidence for p in held], max_length=opts.max_length,
                                 batch_size=32)
    model.model.save_pretrained(out)
    model.tokenizer.save_pretrained(out)
    return {"recipe": f"fine-tuned sequence classifier ({opts.epochs} epochs)", "steps": steps,
            "loss": losses.points, "trained_pairs": len(pairs),
            "held_back": stance_metrics([p.label for p in held], probs.argmax(axis=1).tolist())}


def train_stance(data: str | Path, out: str | Path, *, base: str = "minilm",
                 opts: StanceTrainOptions | None = None) -> dict[str, object]:
    """Train a stance classifier on a HealthVer-style CSV and write it, with ``training.json``, to ``out``."""
    opts = opts or StanceTrainOptions()
    opts.check()
    opts = replace(opts, device=train_device(opts.device))  # the report names the device used
    pairs = read_stance_csv(data)
    train, held = split_by_claim(pairs, opts.dev_fraction, opts.seed)
    if not train or not held:
        raise InputError(f"{data}: too few distinct claims to hold some back ({len({p.claim for p in pairs})})")
    folder = out_folder(out)
    seed_everything(opts.seed, opts.threads)
    base_dir = base_model_dir(base)
    started = time.perf_counter()
    if opts.epochs == 0:
        result = train_probe(base_dir, train, held, folder, opts, packaged=base.strip().lower() in PACKAGED)
    else:
        result = train_finetune(base_dir, train, held, folder, opts)
    report: dict[str, Any] = {  # a nested JSON record, read back below for the log line
        "kind": "stance",
        "base": base,
        "data": str(data),
        "options": opts.as_dict(),
        "claims": {"train": len({p.claim for p in train}), "held_back": len({p.claim for p in held})},
        "pairs": {"train": len(train), "held_back": len(held)},
        "extra_supervision": {"negations": opts.negations, "bioasq": opts.bioasq, "pubmedqa": opts.pubmedqa},
        "metrics": {"held_back": result.pop("held_back"),
                    "majority_baseline": majority_baseline([p.label for p in train], [p.label for p in held])},
        "seconds": round(time.perf_counter() - started, 1),
        **result,
    }
    write_report(folder, report)
    m = report["metrics"]["held_back"]
    log.info("stance classifier written to %s: held-back macro-F1 %.4f (majority baseline %.4f)", folder,
             m["macro_f1"], report["metrics"]["majority_baseline"]["macro_f1"])
    return report
