"""BioASQ Task b measures: Phase A documents and snippets, Phase B exact and ideal answers.

The definitions are those of BioASQ's official evaluator, ``EvaluatorTask1b -e 9`` from
github.com/BioASQ/Evaluation-Measures (``evaluation/EvaluatorTask1b.java``, ``QuestionAnswerEvaluator.java``,
``data/Task1bData.java``, ``data/Snippet.java``, ``data/ExactAnswer.java``), as read for this module; the code
is medcite's own. docs/BIOASQ.md gives each convention with its source; in short:

- **Which questions.** Every gold question that the system file holds is scored; one it lacks is left out of
  every mean (``missing="skip"``, the official evaluator's ``continue``) or scored 0 (``"zero"``). Each measure
  also skips gold questions with nothing to score it against (``-e 9``): no gold documents, no gold snippets,
  no gold exact answer, no gold ideal answer.
- **Documents.** A repeated document is dropped (``Task1bData.readDocuments``) and the first ``cutoff`` = 10
  are scored (the rules' cap; the official code scores whatever was sent). AP divides by ``min(|R|, 10)`` and
  GMAP is ``exp(mean(log(AP + 1e-5)))``: :mod:`medcite.evaluate.bioasq_map`. P = hits / documents sent,
  R = hits / |R|, F1 their harmonic mean; an empty list scores 0.
- **Snippets.** Per question, overlapping snippets of one document and section pair are first merged, in the
  system's list and in the gold list (``concatenateSnippets``). The official ``Snippet`` treats both offsets as
  inclusive: a snippet covers ``end - begin + 1`` characters. Precision is the characters shared with gold
  snippets of the same document and sections over the characters sent, recall the same over the gold
  characters, F1 their harmonic mean; the means over questions are the reported P, R, F1.
- **yes/no.** An answer is lowercased; it says "yes" if it contains ``yes``, else "no" if it contains ``no``,
  else nothing (wrong either way). Accuracy, and F1 per class with ``F1 = 2TP / (2TP + FP + FN)`` set to 0
  when the denominator is 0 (a class absent from gold and answers); macro-F1 is their mean.
- **factoid.** The first 5 candidates (the first string of each inner list) are compared, lowercased (and,
  unlike the official code, stripped of surrounding spaces, on both sides), with every synonym of every gold
  entity: strict accuracy (the first candidate matches), lenient accuracy (any
  does), MRR (1 / rank of the first match).
- **list.** Each answered item, in order, counts as a hit when it matches a synonym of a gold entity not yet
  matched (that entity is then used up); otherwise it is a false positive. A false negative is a gold entity
  left unmatched that no answered item names. P, R, F1 per question, then their means.
- **ideal.** ROUGE-2 and ROUGE-SU4, recall and F1, against the best-matching gold ideal answer
  (:mod:`medcite.evaluate.rouge`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..types import QAAnswer, Question, Snippet
from .bioasq_map import GMAP_EPSILON, MissingPolicy, average_precision, check_missing_policy, geometric_map
from .rouge import best_of

CUTOFF = 10
"""Documents and snippets scored per question: BioASQ accepts at most 10 of each."""
MAX_FACTOID = 5
"""Factoid candidates scored per question: BioASQ accepts at most 5."""


class PRF(NamedTuple):
    precision: float
    recall: float
    f1: float


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# ---- Phase A -----------------------------------------------------------------------------------------------


def document_prf(ranking: Sequence[str], relevant: Iterable[str], cutoff: int = CUTOFF) -> PRF:
    """P, R, F1 of one question's documents: repeats dropped, the first ``cutoff`` scored; 0 for none sent."""
    sent = list(dict.fromkeys(ranking))[:cutoff]
    gold = set(relevant)
    if not sent or not gold:
        return PRF(0.0, 0.0, 0.0)
    hits = sum(1 for d in sent if d in gold)
    p, r = hits / len(sent), hits / len(gold)
    return PRF(p, r, _f1(p, r))


Span = tuple[int, int]  # inclusive character offsets, as the official Snippet class reads them
SpanKey = tuple[str, str, str]  # (pmid, begin section, end section)


def merged_spans(snippets: Iterable[Snippet]) -> dict[SpanKey, list[Span]]:
    """Snippets grouped by document and section pair, overlapping spans merged (``concatenateSnippets``).

    Spans are inclusive ``[begin, end]``, as the official evaluator reads the offsets; two spans overlap when
    they share a character.
    """
    groups: dict[SpanKey, list[Span]] = {}
    for s in snippets:
        groups.setdefault((s.pmid, s.begin_section, s.end_section), []).append((s.begin_offset, s.end_offset))
    out: dict[SpanKey, list[Span]] = {}
    for key, spans in groups.items():
        merged: list[Span] = []
        for begin, end in sorted(spans):
            if merged and begin <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((begin, end))
        out[key] = merged
    return out


def _size(spans: Mapping[SpanKey, list[Span]]) -> int:
    return sum(max(0, end - begin + 1) for group in spans.values() for begin, end in group)


def snippet_prf(system: Sequence[Snippet], gold: Sequence[Snippet], cutoff: int = CUTOFF) -> PRF:
    """Character-overlap P, R, F1 of one question's snippets (the first ``cutoff`` sent; see the module docstring)."""
    sent, ref = merged_spans(system[:cutoff]), merged_spans(gold)
    sent_size, ref_size = _size(sent), _size(ref)
    if sent_size == 0 or ref_size == 0:
        return PRF(0.0, 0.0, 0.0)
    overlap = 0
    for key, spans in sent.items():
        for begin, end in spans:
            for g_begin, g_end in ref.get(key, ()):
                overlap += max(0, min(end, g_end) - max(begin, g_begin) + 1)
    p, r = overlap / sent_size, overlap / ref_size
    return PRF(p, r, _f1(p, r))


# ---- Phase B: exact answers --------------------------------------------------------------------------------


def yesno_label(answer: object) -> str | None:
    """``"yes"``/``"no"`` as the official reader takes a yes/no answer (lowercased substring test, yes first);
    None when it holds neither or is not a string."""
    if not isinstance(answer, str):
        return None
    text = answer.lower()
    if "yes" in text:
        return "yes"
    if "no" in text:
        return "no"
    return None


def yesno_measures(pairs: Sequence[tuple[str, str | None]]) -> dict[str, float]:
    """Accuracy, F1 of each class and macro-F1 over ``(gold, answer)`` pairs (answer None: neither yes nor no).

    A wrong answer counts against both classes, as in ``F1ExactAnswersYesNo``: for class c, TP is a gold-c
    question answered right, and every wrong answer, whatever its gold, is a FP or FN of c. A class absent from
    both gold and answers has F1 0 (the denominator is 0), so macro-F1 is then at most 0.5.
    """
    if not pairs:
        return {"accuracy": 0.0, "f1_yes": 0.0, "f1_no": 0.0, "macro_f1": 0.0}
    right = sum(1 for g, a in pairs if a == g)
    wrong = len(pairs) - right
    f1 = {}
    for label in ("yes", "no"):
        tp = sum(1 for g, a in pairs if g == label and a == g)
        denominator = 2 * tp + wrong
        f1[label] = 2 * tp / denominator if denominator else 0.0
    return {"accuracy": right / len(pairs), "f1_yes": f1["yes"], "f1_no": f1["no"],
            "macro_f1": (f1["yes"] + f1["no"]) / 2}


def _norm(text: str) -> str:
    return text.strip().lower()


def _names(entity: Iterable[str]) -> set[str]:
    return {_norm(s) for s in entity}


def candidates(exact: str | Sequence[str] | None) -> list[str]:
    """A system's factoid/list answer as a list of strings (a bare string is one item; None none)."""
    if exact is None:
        return []
    if isinstance(exact, str):
        return [exact]
    return [e for e in exact if isinstance(e, str)]


def factoid_scores(answer: Sequence[str], gold: Sequence[Sequence[str]], max_candidates: int = MAX_FACTOID
                   ) -> tuple[float, float, float]:
    """(strict accuracy, lenient accuracy, reciprocal rank) of one factoid answer: the first ``max_candidates``
    candidates, lowercased and stripped, against every synonym of every gold entity."""
    synonyms = set().union(*(_names(e) for e in gold)) if gold else set()
    for rank, candidate in enumerate(answer[:max_candidates], start=1):
        if _norm(candidate) in synonyms:
            return (1.0 if rank == 1 else 0.0), 1.0, 1.0 / rank
    return 0.0, 0.0, 0.0


def list_prf(answer: Sequence[str], gold: Sequence[Sequence[str]]) -> PRF:
    """P, R, F1 of one list answer, as ``calculatePRFforListQuestions`` counts them (module docstring)."""
    items = [_norm(a) for a in answer]
    if not items or not gold:
        return PRF(0.0, 0.0, 0.0)
    unmatched = [_names(e) for e in gold]
    tp = 0
    for item in items:
        hit = next((i for i, names in enumerate(unmatched) if item in names), None)
        if hit is not None:
            tp += 1
            del unmatched[hit]
    fp = len(items) - tp
    left = list(items)  # a gold entity left over is still not missed if an answered item names it
    fn = 0
    for names in unmatched:
        hit = next((i for i, item in enumerate(left) if item in names), None)
        if hit is None:
            fn += 1
        else:
            del left[hit]
    p = tp / (tp + fp)
    r = tp / (tp + fn) if tp + fn else 0.0
    return PRF(p, r, _f1(p, r))


# ---- reports -----------------------------------------------------------------------------------------------


@dataclass
class BioASQEval:
    """Scores of one system file: ``measures[group][name]`` (means over questions), how many questions each
    group scored (``counts``), the gold questions the system lacks and how they were treated, and every
    question's own values."""

    phase: str
    measures: dict[str, dict[str, float]]
    counts: dict[str, int]
    missing: list[str] = field(default_factory=list)
    missing_policy: str = "skip"
    not_in_gold: list[str] = field(default_factory=list)
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"phase": self.phase, "measures": self.measures, "counts": self.counts,
                "missing_policy": self.missing_policy, "missing": self.missing, "not_in_gold": self.not_in_gold,
                "per_question": self.per_question}


def _pair(gold: Sequence[Question], system_ids: Iterable[str], missing: str) -> tuple[MissingPolicy, list[str],
                                                                                      list[str]]:
    policy = check_missing_policy(missing)
    ids = set(system_ids)
    gold_ids = {q.id for q in gold}
    return policy, [q.id for q in gold if q.id not in ids], sorted(ids - gold_ids)


def evaluate_phase_a(gold: Sequence[Question], system: Sequence[Question], *, missing: str = "skip",
                     cutoff: int = CUTOFF) -> BioASQEval:
    """Documents (MAP, GMAP, P, R, F1) and snippets (P, R, F1) of a Phase A system file against gold questions.

    ``system`` holds each question's ranked ``documents`` (PMIDs) and ``snippets``; nothing else is read.
    """
    by_id = {q.id: q for q in system}
    policy, absent, extra = _pair(gold, by_id, missing)
    aps: list[float] = []
    docs: list[PRF] = []
    snips: list[PRF] = []
    per_question: dict[str, dict[str, float]] = {}
    for g in gold:
        s = by_id.get(g.id)
        if s is None and policy == "skip":
            continue
        ranking = s.documents if s is not None else ()
        row: dict[str, float] = {}
        if g.documents:
            ap = average_precision(ranking, g.documents, cutoff)
            d = document_prf(ranking, g.documents, cutoff)
            aps.append(ap)
            docs.append(d)
            row.update(ap=ap, doc_precision=d.precision, doc_recall=d.recall, doc_f1=d.f1)
        if g.snippets:
            sn = snippet_prf(s.snippets if s is not None else (), g.snippets, cutoff)
            snips.append(sn)
            row.update(snippet_precision=sn.precision, snippet_recall=sn.recall, snippet_f1=sn.f1)
        per_question[g.id] = row
    measures = {
        "documents": {"MAP": _mean(aps), "GMAP": geometric_map(aps, GMAP_EPSILON), **_prf_means(docs)},
        "snippets": _prf_means(snips),
    }
    counts = {"gold": len(gold), "documents": len(docs), "snippets": len(snips), "missing": len(absent)}
    return BioASQEval("A", measures, counts, absent, policy, extra, per_question)


def _prf_means(rows: Sequence[PRF]) -> dict[str, float]:
    return {"P": _mean([r.precision for r in rows]), "R": _mean([r.recall for r in rows]),
            "F1": _mean([r.f1 for r in rows])}


def evaluate_phase_b(gold: Sequence[Question], system: Sequence[QAAnswer], *, missing: str = "skip",
                     rouge: bool = True) -> BioASQEval:
    """Exact answers by type and ideal answers (ROUGE-2, ROUGE-SU4) of a Phase B (or A+) system file.

    ``rouge=False`` leaves the ideal answers unscored (and rouge-score unneeded).
    """
    by_id = {a.question_id: a for a in system}
    policy, absent, extra = _pair(gold, by_id, missing)
    yesno: list[tuple[str, str | None]] = []
    factoid: list[tuple[float, float, float]] = []
    lists: list[PRF] = []
    ideal: list[tuple[float, float, float, float]] = []
    per_question: dict[str, dict[str, float]] = {}
    for g in gold:
        a = by_id.get(g.id)
        if a is None:
            if policy == "skip":
                continue
            a = QAAnswer(g.id, None, "")
        row: dict[str, float] = {}
        entities = g.exact_answer if isinstance(g.exact_answer, tuple) else ()
        if g.type == "yesno" and g.exact_answer in ("yes", "no"):
            said = yesno_label(a.exact)
            yesno.append((str(g.exact_answer), said))
            row["yesno_correct"] = float(said == g.exact_answer)
        elif g.type == "factoid" and entities:
            strict, lenient, rr = factoid_scores(candidates(a.exact), entities)
            factoid.append((strict, lenient, rr))
            row.update(strict=strict, lenient=lenient, rr=rr)
        elif g.type == "list" and entities:
            prf = list_prf(candidates(a.exact), entities)
            lists.append(prf)
            row.update(list_precision=prf.precision, list_recall=prf.recall, list_f1=prf.f1)
        if rouge and g.ideal_answers:
            r2 = best_of(g.ideal_answers, a.ideal, "rouge2")
            su4 = best_of(g.ideal_answers, a.ideal, "rougesu4")
            ideal.append((r2.recall, r2.f1, su4.recall, su4.f1))
            row.update(rouge2_recall=r2.recall, rouge2_f1=r2.f1, rougesu4_recall=su4.recall, rougesu4_f1=su4.f1)
        per_question[g.id] = row
    measures = {
        "yesno": yesno_measures(yesno),
        "factoid": {"strict_accuracy": _mean([f[0] for f in factoid]),
                    "lenient_accuracy": _mean([f[1] for f in factoid]), "MRR": _mean([f[2] for f in factoid])},
        "list": _prf_means(lists),
    }
    if rouge:
        measures["ideal"] = {name: _mean([row[i] for row in ideal]) for i, name in
                             enumerate(("rouge2_recall", "rouge2_f1", "rougesu4_recall", "rougesu4_f1"))}
    counts = {"gold": len(gold), "yesno": len(yesno), "factoid": len(factoid), "list": len(lists),
              "ideal": len(ideal), "missing": len(absent)}
    return BioASQEval("B", measures, counts, absent, policy, extra, per_question)
