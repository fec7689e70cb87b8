"""``medcite train yesno`` and ``medcite train ideal``: the retired yes/no baseline and the ideal-answer scorer of
the offline BioASQ answerer.

Both split by *question* with :func:`medcite.train.qa_data.held_out_ids` (the split that
``benchmarks/bench_bioasq_b.py`` evaluates on), train on one side only and report on the other in
``training.json``, beside a trivial baseline.

- **yes/no** (:mod:`medcite.train.yesno_baseline`, the retired baseline): (question, snippet) pairs of the
  training BioASQ yes/no questions, labelled with the question's answer, plus PubMedQA (question, abstract
  contexts) -> yes / no / maybe; frozen MiniLM features (:mod:`medcite.attribute.probe`), a multinomial logistic
  regression whose C is chosen by cross-validation grouped by question, and a question-level threshold on the
  mean P(yes | yes or no) tuned for macro-F1 on out-of-fold predictions of the training questions.
- **ideal** (:mod:`medcite.qa.ideal`): every distinct snippet of a training question, its cheap lexical
  features, and as label its ROUGE-2 F1 (rouge-score, stemmer, best over the gold ideal answers); a LightGBM
  regressor. Held-back report: ROUGE-2 F1 of the top-scored snippet against the first-gold-snippet baseline.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..registry import require
from ..types import Question
from .common import Classifier, Scaler, base_model_dir, out_folder, seed_everything, write_report
from .qa_data import PubMedQAItem, held_out_ids, read_pubmedqa, read_qa, split_pubmedqa, split_qa

if TYPE_CHECKING:
    from ..attribute.probe import FeatureSpec
    from ..qa.ideal import Candidate
    from .yesno_baseline import YesNoHead, YesNoModel

log = logging.getLogger(__name__)

C_GRID = (1e-4, 3e-4, 1e-3)
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.30, 0.81, 0.02))


@dataclass
class YesNoTrainOptions:
    """Options of ``medcite train yesno`` (stored in ``training.json``)."""

    max_length: int = 256
    layers: tuple[int, ...] = (1, 2, 3, 4)
    parts: tuple[str, ...] = ("pair", "siamese", "cues")
    max_snippets: int = 10
    folds: int = 3
    c: float | None = None
    seed: int = 13
    threads: int | None = None


def _is_bioasq(path: Path) -> bool:
    from ..io import open_maybe_gz

    try:
        with open_maybe_gz(path) as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(f"cannot read ({exc})", path=str(path)) from None
    return '"questions"' in head


def yesno_metrics(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over yes and no (BioASQ's measure since BioASQ7)."""
    from ..evaluate.bioasq import yesno_measures

    return {k: round(v, 4) for k, v in yesno_measures(list(zip(gold, predicted, strict=True))).items()}


def best_threshold(scores: Sequence[float], gold: Sequence[str], thresholds: Sequence[float] = THRESHOLDS
                   ) -> tuple[float, float]:
    """(threshold, macro-F1) maximising macro-F1 of "yes iff score >= threshold" over ``thresholds``; ties:
    nearest 0.5."""
    best = (0.5, -1.0)
    for t in thresholds:
        f1 = yesno_metrics(gold, ["yes" if s >= t else "no" for s in scores])["macro_f1"]
        if f1 > best[1] + 1e-12 or (abs(f1 - best[1]) <= 1e-12 and abs(t - 0.5) < abs(best[0] - 0.5)):
            best = (float(t), f1)
    return best


def _pairs(questions: Sequence[Question], items: Sequence[PubMedQAItem], max_snippets: int
           ) -> tuple[list[str], list[str], list[int], list[str]]:
    """(questions, texts, labels, groups): a BioASQ pair per distinct snippet, a PubMedQA pair per item."""
    from .yesno_baseline import LABELS, pair_texts

    qs: list[str] = []
    texts: list[str] = []
    labels: list[int] = []
    groups: list[str] = []
    for q in questions:
        for t in pair_texts(q.body, [s.text for s in q.snippets], max_snippets):
            qs.append(q.body)
            texts.append(t)
            labels.append(LABELS.index(str(q.exact_answer)))
            groups.append(q.id)
    for it in items:
        qs.append(it.question)
        texts.append(" ".join(it.contexts))
        labels.append(LABELS.index(it.label))
        groups.append("pubmedqa:" + it.pmid)
    return qs, texts, labels, groups


@dataclass
class _YesNoData:
    """The training and held-back parts of the yes/no data: BioASQ yes/no questions and PubMedQA items."""

    bio_train: list[Question]
    bio_held: list[Question]
    pq_train: list[PubMedQAItem]
    pq_held: list[PubMedQAItem]

    @classmethod
    def read(cls, data: Sequence[str | Path]) -> _YesNoData:
        out = cls([], [], [], [])
        for path in map(Path, data):
            if _is_bioasq(path):
                tr, he = split_qa([q for q in read_qa(path) if q.type == "yesno" and q.exact_answer in ("yes", "no")],
                                  held_out_ids(path))
                out.bio_train += tr
                out.bio_held += he
            else:
                tr2, he2 = split_pubmedqa(read_pubmedqa(path))
                out.pq_train += tr2
                out.pq_held += he2
        if not out.bio_train:
            raise InputError("no BioASQ yes/no training questions", hint="give a BioASQ Task b file with --data")
        return out


def _fit_yesno(xs: np.ndarray, ys: np.ndarray, c: float) -> tuple[Scaler, Classifier]:
    """A standard scaler and a balanced logistic regression fitted on ``xs``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(xs)
    return scaler, LogisticRegression(C=c, max_iter=3000, tol=1e-3, class_weight="balanced").fit(
        scaler.transform(xs), ys)


def _yesno_head(scaler: Scaler, clf: Classifier, threshold: float, spec: FeatureSpec, dim: int, max_snippets: int,
                base: str) -> YesNoHead:
    """The fitted scaler and classifier as a :class:`YesNoHead` over every label (a class absent from training
    is never predicted)."""
    from .yesno_baseline import LABELS, YesNoHead

    coef = np.zeros((len(LABELS), dim))
    intercept = np.full(len(LABELS), -30.0)  # a class never seen in training is never predicted
    classes = [int(c) for c in clf.classes_]
    if len(classes) == 2:  # sklearn keeps one row (class 1 against class 0): softmax([0, z]) = sigmoid(z)
        coef[classes[0]], intercept[classes[0]] = 0.0, 0.0
        coef[classes[1]], intercept[classes[1]] = clf.coef_[0], clf.intercept_[0]
    else:
        for col, label in enumerate(classes):
            coef[label], intercept[label] = clf.coef_[col], clf.intercept_[col]
    return YesNoHead(spec, np.asarray(scaler.mean_, dtype=np.float64),
                     np.where(scaler.scale_ > 0, scaler.scale_, 1.0).astype(np.float64), coef, intercept,
                     threshold, max_snippets, base)


def _yesno_held_back(model: YesNoModel, data: _YesNoData) -> dict[str, object]:
    """Held-back BioASQ macro F1 (beside always-yes) and PubMedQA accuracy (beside the majority class)."""
    from .yesno_baseline import LABELS

    predicted = [model.answer(q.body, [s.text for s in q.snippets]) for q in data.bio_held]
    gold = [str(q.exact_answer) for q in data.bio_held]
    held: dict[str, object] = {"bioasq": {"questions": len(data.bio_held), **yesno_metrics(gold, predicted),
                                       "always_yes": yesno_metrics(gold, ["yes"] * len(gold))}}
    pq_held = data.pq_held
    if pq_held:
        pq_probs = model.probabilities([i.question for i in pq_held], [" ".join(i.contexts) for i in pq_held])
        pq_pred = [LABELS[int(k)] for k in pq_probs.argmax(1)]
        majority = max(LABELS, key=lambda lab: sum(i.label == lab for i in data.pq_train))
        held["pubmedqa"] = {"items": len(pq_held),
                            "accuracy": round(float(np.mean([p == i.label for p, i in zip(pq_pred, pq_held,
                                                                                          strict=True)])), 4),
                            "majority_class": majority,
                            "majority_accuracy": round(float(np.mean([i.label == majority for i in pq_held])), 4)}
    return held


def train_yesno(data: Sequence[str | Path], out: str | Path, *, base: str = "minilm",
                opts: YesNoTrainOptions | None = None) -> dict[str, object]:
    """Train the yes/no head on BioASQ and PubMedQA files and write it, with ``training.json``, to ``out``."""
    from ..attribute.probe import FeatureSpec, Featurizer
    from .yesno_baseline import LABELS, YesNoModel

    opts = opts or YesNoTrainOptions()
    transformers = require("transformers", "train", "training the yes/no head")
    require("sklearn", "train", "training the yes/no head")
    from sklearn.model_selection import GroupKFold

    parts = _YesNoData.read(data)
    folder = out_folder(out)
    seed_everything(opts.seed, opts.threads)
    source = base_model_dir(base)
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    encoder = transformers.AutoModel.from_pretrained(source).eval()
    spec = FeatureSpec(opts.max_length, tuple(opts.layers), tuple(opts.parts))
    featurize = Featurizer(tokenizer, encoder, spec, progress="yes/no features")

    t0 = time.perf_counter()
    qs, texts, labels, groups = _pairs(parts.bio_train, parts.pq_train, opts.max_snippets)
    x, y = featurize(qs, texts), np.asarray(labels)
    feature_seconds = time.perf_counter() - t0

    def head_of(scaler: Scaler, clf: Classifier, threshold: float) -> YesNoHead:
        return _yesno_head(scaler, clf, threshold, spec, x.shape[1], opts.max_snippets, base)

    folds = min(opts.folds, len(set(groups)))
    is_bio = np.array([not g.startswith("pubmedqa:") for g in groups])
    cv: dict[str, dict[str, float]] = {}
    for c in (C_GRID if opts.c is None else (opts.c,)):
        probs = np.zeros((len(y), len(LABELS)))
        for tr, te in GroupKFold(n_splits=folds).split(x, y, groups):
            probs[te] = head_of(*_fit_yesno(x[tr], y[tr], c), 0.5).probabilities(x[te])
        scores, gold = _question_scores(probs[is_bio], [g for g, b in zip(groups, is_bio, strict=True) if b],
                                        {q.id: str(q.exact_answer) for q in parts.bio_train})
        t, f1 = best_threshold(scores, gold)
        cv[f"{c:g}"] = {"macro_f1": f1, "threshold": t}
    c_best = max(cv, key=lambda k: (cv[k]["macro_f1"], -float(k)))
    head = head_of(*_fit_yesno(x, y, float(c_best)), cv[c_best]["threshold"])
    head.meta = {"c": float(c_best), "trained_pairs": int(len(y))}
    head.save(folder)

    held = _yesno_held_back(YesNoModel(tokenizer, encoder, head), parts)
    report = {"kind": "yesno", "base": base, "data": [str(d) for d in data], "options": asdict(opts),
              "questions": {"bioasq_train": len(parts.bio_train), "bioasq_held_back": len(parts.bio_held),
                            "pubmedqa_train": len(parts.pq_train), "pubmedqa_held_back": len(parts.pq_held)},
              "pairs": int(len(y)), "features": int(x.shape[1]), "feature_seconds": round(feature_seconds, 1),
              "c": float(c_best), "threshold": head.threshold, "cv_by_c": cv, "metrics": {"held_back": held}}
    write_report(folder, report)
    return report


def _question_scores(probs: np.ndarray, groups: Sequence[str], gold: dict[str, str]) -> tuple[list[float],
                                                                                               list[str]]:
    from .yesno_baseline import YesNoHead

    by_q: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_q.setdefault(g, []).append(i)
    ids = sorted(by_q)
    return [YesNoHead.p_yes(probs[by_q[q]]) for q in ids], [gold[q] for q in ids]


# ---------------------------------------------------------------------------------------------------------- ideal

LGBM_PARAMS = {"n_estimators": 600, "learning_rate": 0.02, "num_leaves": 7, "min_child_samples": 20,
               "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8}


def ideal_rows(questions: Sequence[Question], unit: str = "snippet", labels: bool = True
               ) -> list[tuple[Question, list[Candidate], np.ndarray, np.ndarray]]:
    """Per question with snippets and ideal answers: (question, candidates, features, ROUGE-2 F1 labels)."""
    from ..qa import ideal

    rouge = require("rouge_score.rouge_scorer", "eval", "labelling ideal-answer candidates")
    scorer = rouge.RougeScorer(["rouge2"], use_stemmer=True)
    out = []
    for q in questions:
        if not q.snippets or not q.ideal_answers:
            continue
        cands = ideal.snippet_candidates(q.snippets) if unit == "snippet" else ideal.candidates(q.snippets)
        if not cands:
            continue
        x = ideal.features(q.body, q.type, cands, ideal.similarity(q.body, cands))
        y = np.array([max(scorer.score(r, c.text)["rouge2"].fmeasure for r in q.ideal_answers) for c in cands]
                     if labels else [0.0] * len(cands))
        out.append((q, cands, x, y))
    return out


def train_ideal(data: str | Path, out: str | Path, *, unit: str = "snippet", seed: int = 13) -> dict[str, object]:
    """Train the ideal-answer scorer on the training questions of a BioASQ file; write it to ``out``."""
    from ..qa import ideal

    lgb = require("lightgbm", "train", "training the ideal-answer scorer")
    if unit not in ("snippet", "sentence"):
        raise InputError(f"unit must be 'snippet' or 'sentence', got {unit!r}")
    t0 = time.perf_counter()
    train, held = split_qa(read_qa(data), held_out_ids(data))
    rows = ideal_rows(train, unit)
    held_rows = ideal_rows(held, unit)
    if not rows:
        raise InputError("no training question has snippets and an ideal answer", path=str(data))
    x = np.vstack([r[2] for r in rows])
    y = np.concatenate([r[3] for r in rows])
    model = lgb.LGBMRegressor(**LGBM_PARAMS, random_state=seed, n_jobs=1, verbose=-1).fit(x, y)
    folder = out_folder(out)
    scorer = ideal.IdealScorer(model.booster_, ideal.FEATURES, unit, {"trained_questions": len(rows)})
    scorer.save(folder)
    top = [float(r[3][int(np.argmax(scorer.score(r[2])))]) for r in held_rows]
    first = [float(r[3][0]) for r in held_rows]  # the first snippet (an approximation when it is a duplicate)
    report = {"kind": "ideal", "data": str(data), "unit": unit, "params": LGBM_PARAMS, "seed": seed,
              "questions": {"train": len(rows), "held_back": len(held_rows)}, "candidates": int(len(y)),
              "seconds": round(time.perf_counter() - t0, 1),
              "metrics": {"held_back": {"rouge2_f1_top_candidate": round(float(np.mean(top)), 4),
                                        "rouge2_f1_first_candidate": round(float(np.mean(first)), 4),
                                        "oracle_best_candidate": round(float(np.mean([r[3].max()
                                                                                      for r in held_rows])), 4)}},
              "feature_importance": dict(sorted(((f, int(v)) for f, v in zip(ideal.FEATURES,
                                                                              model.feature_importances_,
                                                                              strict=True)),
                                                key=lambda kv: -kv[1])[:15])}
    write_report(folder, report)
    return report


def read_report(folder: str | Path) -> dict[str, Any]:
    return json.loads((Path(folder) / "training.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]
