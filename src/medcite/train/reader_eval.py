"""The reader's measures on one side of the split (validation during training, held back in the report).

- **stance**: macro-F1, per-class F1, accuracy and confusion matrix over HealthVer pairs; baseline: the training
  side's majority class.
- **yes/no**: BioASQ questions answered from their gold snippets (the question's P(yes) is
  :func:`medcite.reader.verdict.yes_probability` of its snippets, "yes" from the validation threshold on),
  macro-F1 and accuracy by BioASQ's definition; baseline always "yes". PubMedQA items answered from their own
  abstract sections: accuracy as BioASQ's yes/no decision (never "maybe", as ``medcite bioasq phase-b`` answers
  them) and three-way (argmax of the mean probabilities); baseline the training side's majority label.
- **span**: factoid (up to 5 answers: strict and lenient accuracy, MRR) and list (answers scoring at least the
  validation threshold, at least one: mean P, R, F1) from the gold snippets, scored by
  :mod:`medcite.evaluate.bioasq` (BioASQ's official definitions); baseline: medcite's pattern-based entity
  candidates ranked by how many snippets name them (:mod:`medcite.qa.entities`).
- **relevance**: each question's gold snippets among its hard negatives: ROC AUC over all pairs, mean
  reciprocal rank of the first gold snippet and precision at 1; baseline: the share of the question's content
  words in the passage.
- **calibration**: expected calibration error and the reliability curve of each class head's top probability
  (and of P(relevant)), per pair.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .qa import best_threshold
from .qa import yesno_metrics as yesno_measures
from .reader_data import Example, Side, distinct_snippets

if TYPE_CHECKING:
    from ..reader.infer import Reader
    from ..reader.model import ReaderNet, ReaderSpec
    from ..types import Question
    from .qa_data import PubMedQAItem

THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.20, 0.81, 0.02))
_WORD = re.compile(r"[^\W_]{3,}")


#: the frozen bottom's states of the validation batches, kept across epochs (the bottom never changes in training)
_MEMO: dict[int, dict[tuple[tuple[int, ...], bytes], Any]] = {}


def _reader(net: ReaderNet, spec: ReaderSpec, tokenizer: Any, device: str) -> Reader:
    """The network being trained, read as it will ship: on a CPU its weights rounded as ``reader.safetensors``
    stores them, adapters merged, and its linear layers run as torch dynamic int8 (so the epoch, the calibration
    and the thresholds are chosen on the outputs users get, not on the fp32 network's)."""
    import copy

    from ..reader.infer import Reader, int8_safe, quantize_int8
    from ..reader.model import merge_lora, state_to_store, store_to_state

    memo = _MEMO.setdefault(id(net.trunk), {})
    net.trunk.memo = None
    shipped = copy.deepcopy(net).eval()
    if device == "cpu":
        shipped.load_state_dict(store_to_state(state_to_store(net)), strict=False)
    merge_lora(shipped)
    if device == "cpu" and int8_safe(spec.base):
        shipped = quantize_int8(shipped)
    shipped.trunk.memo = memo
    return Reader(shipped, tokenizer, spec, device=device)


# ---- stance ------------------------------------------------------------------------------------------------

def stance_report(gold: Sequence[int], predicted: Sequence[int], present_only: bool = False) -> dict[str, object]:
    from .stance import stance_metrics

    return dict(stance_metrics(list(gold), list(predicted), present_only=present_only))


def stance_by_set(examples: Sequence[Example]) -> dict[str, list[Example]]:
    """The stance examples of one side per data set (HealthVer's negated claims are training-only)."""
    out: dict[str, list[Example]] = {}
    for e in examples:
        out.setdefault(e.source, []).append(e)
    return out


def stance_probs(reader: Reader, examples: Sequence[Example]) -> np.ndarray:
    return reader.probabilities("stance", [e.first for e in examples], [e.second for e in examples])


# ---- yes/no ------------------------------------------------------------------------------------------------

def bioasq_yes_scores(reader: Reader, questions: Sequence[Question], max_snippets: int = 12) -> list[float]:
    """Each yes/no question's P(yes) from its gold snippets."""
    from ..reader.verdict import yes_probability

    firsts, seconds, owner = [], [], []
    for k, q in enumerate(questions):
        for t in distinct_snippets(q, max_snippets):
            firsts.append(q.body)
            seconds.append(t)
            owner.append(k)
    probs = reader.probabilities("yesno", firsts, seconds)
    own = np.asarray(owner)
    return [yes_probability(probs[own == k]) for k in range(len(questions))]


def pubmedqa_probs(reader: Reader, items: Sequence[PubMedQAItem]) -> tuple[np.ndarray, list[float]]:
    """(mean three-way probabilities, P(yes)) of each item from its abstract sections."""
    from ..reader.verdict import yes_probability

    firsts, seconds, owner = [], [], []
    for k, it in enumerate(items):
        for c in it.contexts or ("",):
            firsts.append(it.question)
            seconds.append(" ".join(c.split()))
            owner.append(k)
    probs = reader.probabilities("yesno", firsts, seconds)
    own = np.asarray(owner)
    mean = np.stack([probs[own == k].mean(0) for k in range(len(items))]) if items else np.zeros((0, 3))
    return mean, [yes_probability(probs[own == k]) for k in range(len(items))]


def yesno_threshold(reader: Reader, side: Side) -> float:
    """The yes/no threshold that maximises, on the validation side, the mean of each data set's own headline
    measure: BioASQ macro-F1 and PubMedQA accuracy (every item answered yes or no, as BioASQ asks; its "maybe"
    items count as wrong), among the thresholds whose answers are at least as accurate as always-yes on both
    (:func:`medcite.reader.verdict.decide`: an unsure reader keeps the prior "yes"); 0 (always yes) when none is.
    Ties: nearest 0.5."""
    from ..reader.verdict import decide

    yn = [q for q in side.bioasq if q.type == "yesno" and q.exact_answer in ("yes", "no")]
    b_scores, b_gold = (bioasq_yes_scores(reader, yn) if yn else []), [str(q.exact_answer) for q in yn]
    p_scores = pubmedqa_probs(reader, side.pubmedqa)[1] if side.pubmedqa else []
    p_gold = [it.label for it in side.pubmedqa]
    if not b_scores and not p_scores:
        return 0.5

    def accuracy(scores: list[float], gold: list[str], t: float) -> float:
        return float(np.mean([decide(s, t) == g for s, g in zip(scores, gold, strict=True)])) if scores else 1.0

    def value(t: float) -> float:
        parts = []
        if b_scores:
            parts.append(yesno_measures(b_gold, [decide(s, t) for s in b_scores])["macro_f1"])
        if p_scores:
            parts.append(accuracy(p_scores, p_gold, t))
        return float(np.mean(parts))

    safe = [t for t in THRESHOLDS if accuracy(b_scores, b_gold, t) >= accuracy(b_scores, b_gold, 0.0)
            and accuracy(p_scores, p_gold, t) >= accuracy(p_scores, p_gold, 0.0)]
    if not safe:
        return 0.0
    return max(safe, key=lambda t: (round(value(t), 12), -abs(t - 0.5)))


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """ROC AUC of ``scores`` separating the positives from the rest (None with one class only)."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(positive, dtype=int)
    if len(set(y.tolist())) < 2:
        return None
    return round(float(roc_auc_score(y, np.asarray(scores, dtype=float))), 4)


def yesno_report(reader: Reader, test: Side, train: Side) -> dict[str, object]:
    """The yes/no held-back measures: BioASQ yes/no questions from their gold snippets and PubMedQA items from
    their abstract sections, each decided by the one yes/no rule (:func:`medcite.reader.verdict.decide`) with
    the stored threshold, beside always-yes, with the AUC of P(yes) and the recall and precision of "no"."""
    from ..reader.model import reliability
    from ..reader.verdict import decide

    threshold = reader.spec.thresholds.get("yesno", 0.5)
    res: dict[str, object] = {"threshold": threshold}
    yn = [q for q in test.bioasq if q.type == "yesno" and q.exact_answer in ("yes", "no")]
    if yn:
        scores = bioasq_yes_scores(reader, yn)
        gold_yn = [str(q.exact_answer) for q in yn]
        said = [decide(s, threshold) for s in scores]
        res["bioasq"] = {"questions": len(yn), **yesno_measures(gold_yn, said), **no_measures(gold_yn, said),
                         "auc": auc(scores, [g == "yes" for g in gold_yn]),
                         "always_yes": yesno_measures(gold_yn, ["yes"] * len(yn)),
                         "calibration": reliability(np.maximum(scores, 1 - np.asarray(scores)),
                                                    (np.asarray(scores) >= 0.5) == (np.asarray(gold_yn) == "yes"))}
    if test.pubmedqa:
        mean, p_yes = pubmedqa_probs(reader, test.pubmedqa)
        labels = ("yes", "no", "maybe")
        gold_pq = [it.label for it in test.pubmedqa]
        said = [decide(p, threshold) for p in p_yes]
        majority = max(labels, key=lambda lab: sum(it.label == lab for it in train.pubmedqa))
        yes_no = [i for i, g in enumerate(gold_pq) if g != "maybe"]
        res["pubmedqa"] = {
            "items": len(gold_pq),
            "accuracy_yes_no": round(float(np.mean([a == g for a, g in zip(said, gold_pq, strict=True)])), 4),
            "always_yes_accuracy": round(float(np.mean([g == "yes" for g in gold_pq])), 4),
            **no_measures(gold_pq, said),
            "auc_yes_vs_no": auc([p_yes[i] for i in yes_no], [gold_pq[i] == "yes" for i in yes_no]),
            "accuracy_three_way": round(float(np.mean([labels[int(k)] == g
                                                       for k, g in zip(mean.argmax(1), gold_pq, strict=True)])), 4),
            "majority_class": majority,
            "majority_accuracy": round(float(np.mean([g == majority for g in gold_pq])), 4),
            "calibration": reliability(mean.max(1), np.asarray([labels[int(k)] == g for k, g in
                                                                 zip(mean.argmax(1), gold_pq, strict=True)]))}
    ex = test.examples.get("yesno") or []
    if ex:
        probs = reader.probabilities("yesno", [e.first for e in ex], [e.second for e in ex])
        res["pairs_calibration"] = reliability(probs.max(1), probs.argmax(1) == np.asarray([int(e.label)
                                                                                           for e in ex]))
    return res


def no_measures(gold: Sequence[str], said: Sequence[str]) -> dict[str, float]:
    """Recall and precision of "no" (how many "no" answers are found, how many stated are right)."""
    no_gold = sum(g == "no" for g in gold)
    no_said = sum(a == "no" for a in said)
    hit = sum(a == g == "no" for a, g in zip(said, gold, strict=True))
    return {"no_recall": round(hit / no_gold, 4) if no_gold else 0.0,
            "no_precision": round(hit / no_said, 4) if no_said else 0.0, "no_stated": no_said}


# ---- spans -------------------------------------------------------------------------------------------------

def span_answers(reader: Reader, question: str, passages: Sequence[str]) -> list[Any]:
    """Ranked answers (:class:`medcite.reader.spans.Answer`) of ``question`` from ``passages``."""
    from ..reader.spans import aggregate, decode

    hits = []
    for k, (s, e, offs) in enumerate(reader.span_logits(question, passages)):
        hits += decode(passages[k], s, e, offs, passage=k)
    return aggregate(hits, passages, question)


def exact_from_answers(answers: Sequence[Any], qtype: str, threshold: float, list_max: int = 10) -> list[str]:
    if qtype == "factoid":
        return [a.text for a in answers[:5]]
    kept = [a.text for a in answers if a.score >= threshold][:list_max]
    return kept or [a.text for a in answers[:1]]


def span_measures(gold: Sequence[Question], exact: Sequence[Sequence[str]]) -> dict[str, float]:
    from ..evaluate.bioasq import factoid_scores, list_prf

    fac = [factoid_scores(list(a), q.exact_answer or ()) for q, a in zip(gold, exact, strict=True)
           if q.type == "factoid" and q.exact_answer]
    lst = [list_prf(list(a), q.exact_answer or ()) for q, a in zip(gold, exact, strict=True)
           if q.type == "list" and q.exact_answer]
    out: dict[str, float] = {"factoid_questions": len(fac), "list_questions": len(lst)}
    if fac:
        out |= {"factoid_strict": round(float(np.mean([f[0] for f in fac])), 4),
                "factoid_lenient": round(float(np.mean([f[1] for f in fac])), 4),
                "factoid_mrr": round(float(np.mean([f[2] for f in fac])), 4)}
    if lst:
        out |= {"list_precision": round(float(np.mean([p.precision for p in lst])), 4),
                "list_recall": round(float(np.mean([p.recall for p in lst])), 4),
                "list_f1": round(float(np.mean([p.f1 for p in lst])), 4)}
    return out


def entity_baseline(questions: Sequence[Question]) -> list[list[str]]:
    """medcite's pattern-based entity candidates ranked by how many snippets name them (the extractive qa
    backend before the reader)."""
    from ..qa import entities as ent

    out = []
    for q in questions:
        found = ent.extract(q.body, q.snippets)
        out.append(ent.ranked(found, ent.frequency_scores(found), 5 if q.type == "factoid" else 10))
    return out


# ---- relevance ---------------------------------------------------------------------------------------------

def _relevance(reader: Reader, examples: Sequence[Example]) -> np.ndarray:
    return reader.logits("relevance", [e.first for e in examples], [e.second for e in examples])[:, 0]


def relevance_report(examples: Sequence[Example], scores: Sequence[float] | np.ndarray) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    y = np.asarray([e.label for e in examples])
    s = np.asarray(scores, dtype=float)
    by: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        by[e.group].append(i)
    rr, p1 = [], []
    for idx in by.values():
        if not any(y[i] for i in idx) or all(y[i] for i in idx):
            continue
        order = sorted(idx, key=lambda i: -s[i])
        first = next(r for r, i in enumerate(order) if y[i])
        rr.append(1.0 / (first + 1))
        p1.append(float(y[order[0]]))
    auc = float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else float("nan")
    return {"auc": round(auc, 4), "mrr": round(float(np.mean(rr)), 4) if rr else 0.0,
            "p_at_1": round(float(np.mean(p1)), 4) if p1 else 0.0, "questions": len(rr), "pairs": len(examples)}


def overlap_scores(examples: Sequence[Example]) -> list[float]:
    out = []
    for e in examples:
        q = {w.lower() for w in _WORD.findall(e.first)}
        t = {w.lower() for w in _WORD.findall(e.second)}
        out.append(len(q & t) / max(1, len(q)))
    return out


# ---- the three entry points ----------------------------------------------------------------------------------

def valid_measures(net: ReaderNet, spec: ReaderSpec, tokenizer: Any, side: Side, device: str) -> dict[str, float]:
    """One validation figure per head (higher is better), for choosing the epoch."""
    reader = _reader(net, spec, tokenizer, device)
    out: dict[str, float] = {}
    if "stance" in spec.heads and side.examples.get("stance"):
        # the mean of each set's macro-F1 (over the classes it has), so HealthVer's 30 validation claims are not
        # outvoted by the larger sets
        f1s = []
        for name, ex in stance_by_set(side.examples["stance"]).items():
            report = stance_report([int(e.label) for e in ex], stance_probs(reader, ex).argmax(1).tolist(),
                                   present_only=name != "healthver")
            f1s.append(float(report["macro_f1"]))  # type: ignore[arg-type]  # a float in the report
        out["stance_macro_f1"] = float(np.mean(f1s))
    if "yesno" in spec.heads:
        yn = [q for q in side.bioasq if q.type == "yesno" and q.exact_answer in ("yes", "no")]
        parts = []
        if yn:
            parts.append(best_threshold(bioasq_yes_scores(reader, yn), [str(q.exact_answer) for q in yn],
                                        THRESHOLDS)[1])
        if side.pubmedqa:
            mean, _ = pubmedqa_probs(reader, side.pubmedqa)
            labels = ("yes", "no", "maybe")
            parts.append(float(np.mean([labels[int(k)] == it.label for k, it in zip(mean.argmax(1), side.pubmedqa,
                                                                                   strict=True)])))
        if parts:
            out["yesno"] = float(np.mean(parts))
    if "relevance" in spec.heads and side.examples.get("relevance"):
        ex = side.examples["relevance"]
        out["relevance_mrr"] = relevance_report(ex, _relevance(reader, ex))["mrr"]
    if "span" in spec.heads:
        qs = [q for q in side.bioasq if q.type in ("factoid", "list") and q.exact_answer]
        if qs:
            answers = [span_answers(reader, q.body, distinct_snippets(q, 12)) for q in qs]
            m = span_measures(qs, [exact_from_answers(a, q.type, 0.5) for a, q in zip(answers, qs, strict=True)])
            out["span"] = float(np.mean([m.get("factoid_mrr", 0.0), m.get("list_f1", 0.0)]))
    return {k: round(v, 4) for k, v in out.items()}


def calibrate(net: ReaderNet, spec: ReaderSpec, tokenizer: Any, side: Side, device: str) -> ReaderSpec:
    """``spec`` with temperatures, Platt scaling and thresholds fitted on the validation side ``side``."""
    from ..reader.model import fit_platt, fit_temperature

    reader = _reader(net, spec, tokenizer, device)
    for head in ("yesno", "stance"):
        ex = side.examples.get(head) or []
        if head in spec.heads and ex:
            z = reader.logits(head, [e.first for e in ex], [e.second for e in ex])
            spec.temperature[head] = fit_temperature(z, [int(e.label) for e in ex])
    if "relevance" in spec.heads and side.examples.get("relevance"):
        ex = side.examples["relevance"]
        spec.platt["relevance"] = fit_platt(_relevance(reader, ex), [int(e.label) for e in ex])
    reader = _reader(net, spec, tokenizer, device)  # with the calibration
    if "yesno" in spec.heads:
        spec.thresholds["yesno"] = yesno_threshold(reader, side)
    if "span" in spec.heads:
        lists = [q for q in side.bioasq if q.type == "list" and q.exact_answer]
        if lists:
            answers = [span_answers(reader, q.body, distinct_snippets(q, 12)) for q in lists]
            best = max(THRESHOLDS, key=lambda t: (span_measures(lists, [exact_from_answers(a, "list", t) for a in
                                                                        answers]).get("list_f1", 0.0), -abs(t - 0.5)))
            spec.thresholds["span_list"] = best
    return spec


def measure_all(folder: Path, test: Side, train: Side, device: str) -> dict[str, object]:
    """Every held-back measure of the reader saved in ``folder``, loaded as it is shipped (int8 on a CPU), with
    the trivial baselines and the calibration report."""
    from ..reader.infer import int8_safe, load_reader
    from ..reader.model import reliability

    reader = load_reader(folder, device=device)
    spec = reader.spec
    out: dict[str, object] = {"loaded_as": "int8 dynamic quantisation" if device == "cpu" and int8_safe(spec.base)
                              else f"{device}, float32" if device == "cpu" else device}
    if "stance" in spec.heads and test.examples.get("stance"):
        by_set = stance_by_set(test.examples["stance"])
        train_sets = stance_by_set(train.examples.get("stance", []))
        reports: dict[str, object] = {}
        for name, ex in by_set.items():
            probs = stance_probs(reader, ex)
            gold = [int(e.label) for e in ex]
            train_labels = [int(e.label) for e in train_sets.get(name, [])]
            top = int(np.bincount(train_labels, minlength=3).argmax()) if train_labels else 2
            present = name != "healthver"
            reports[name] = {"claims": len({e.group for e in ex}),
                             **stance_report(gold, probs.argmax(1).tolist(), present),
                             "majority_baseline": {k: v for k, v in stance_report(gold, [top] * len(gold),
                                                                                  present).items()
                                                   if k in ("macro_f1", "accuracy")},
                             "calibration": reliability(probs.max(1), probs.argmax(1) == np.asarray(gold))}
        if "healthver" in reports:
            out["stance"] = reports.pop("healthver")
        if reports:
            out["stance_sets"] = reports
    if "yesno" in spec.heads:
        out["yesno"] = yesno_report(reader, test, train)
    if "span" in spec.heads:
        qs = [q for q in test.bioasq if q.type in ("factoid", "list") and q.exact_answer]
        if qs:
            t = spec.thresholds.get("span_list", 0.5)
            answers = [span_answers(reader, q.body, distinct_snippets(q, 12)) for q in qs]
            out["span"] = {"threshold_list": t,
                           **span_measures(qs, [exact_from_answers(a, q.type, t) for a, q in
                                                zip(answers, qs, strict=True)]),
                           "baseline_entity_frequency": span_measures(qs, entity_baseline(qs))}
    if "relevance" in spec.heads and test.examples.get("relevance"):
        ex = test.examples["relevance"]
        rel = _relevance(reader, ex)
        probs = reader.probabilities("relevance", [e.first for e in ex], [e.second for e in ex])
        out["relevance"] = {**relevance_report(ex, rel),
                            "baseline_word_overlap": relevance_report(ex, overlap_scores(ex)),
                            "calibration": reliability(np.maximum(probs, 1 - probs),
                                                       (probs >= 0.5) == (np.asarray([e.label for e in ex]) > 0.5))}
    return out
