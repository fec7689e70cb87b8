"""Training data of the reader (:mod:`medcite.reader`): examples per head, split by question or claim.

Splits (never by row):

- **BioASQ**: the held-back side is :func:`medcite.train.qa_data.held_out_ids` (30 % of the questions, the split
  every medcite benchmark evaluates on). A remaining question that is a near-duplicate of a held-back one
  (:func:`medcite.train.dedup.duplicate_groups`) is dropped from training; of the rest one question per
  duplicate group is kept, and ``valid_fraction`` of them (whole groups) is the validation side, which chooses
  the epoch, calibrates the probabilities and picks decision thresholds. The test side is never used to choose
  anything.
- **PubMedQA**: PMIDs sorted and shuffled (seed); the first ``pubmedqa_test`` items are held back, the next
  ``pubmedqa_valid`` validate.
- **HealthVer**: distinct claims sorted and shuffled (seed); the first ``healthver_test`` claims (all their rows)
  are held back, the next ``healthver_valid`` validate.
- **More BioASQ files** (``bioasq_extra``, e.g. the 12B golden batches): training only; a question that nearly
  repeats a held-back question of the main file is dropped.
- **More stance sets** (Check-COVID, Citation-Integrity, COVID-Fact: :mod:`medcite.train.stance_sets`), each split
  by claim into its own train / valid / test sides and measured per set.

Examples per head:

- ``relevance``: (question, gold snippet) -> 1; (question, hard negative) -> 0, hard negatives being the BM25
  top snippets (``bm25s``) of every other question's gold snippets whose article is gold for no question of the
  question's duplicate group;
- ``yesno`` (the sentence reader): (yes/no question, each distinct gold snippet) -> its answer; PubMedQA
  (question, conclusion) -> yes / no / maybe, (question, each results section) -> the item's answer and
  (question, each background, objective or methods section) -> maybe, both with weight ``context_weight``; a
  yes/no question with hard-negative snippets of other questions -> maybe (a passage about something else does
  not settle it); on the training side, with ``counterfactuals``, each snippet and conclusion that says yes or
  no also as its counterfactuals (:mod:`medcite.train.counterfactual`: predicate swapped for its opposite in
  the sentence or in the question, negation added or removed) with the answer flipped;
- ``stance``: HealthVer (claim, evidence) -> supports / contradicts / neutral, and with ``negations`` each
  training claim negated with the label flipped (:func:`medcite.train.stance_data.negated`); the other stance
  sets' pairs, each with its own weight (COVID-Fact's machine-written counter-claims count less);
- ``span``: factoid and list questions, (question, each distinct gold snippet) with the character spans where a
  synonym of a gold answer occurs (case-insensitive, on word boundaries); snippets that name none are kept as
  examples without an answer (as many as with one, at most).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..types import Question as QAQuestion
from .data import read_bioasq, split_questions
from .dedup import duplicate_groups
from .qa_data import PubMedQAItem, held_out_ids, read_pubmedqa, read_qa
from .stance_data import StancePair, negated, read_stance_csv

log = logging.getLogger(__name__)

YESNO = {"yes": 0, "no": 1, "maybe": 2}


@dataclass(frozen=True)
class Example:
    """One training or evaluation pair of a head: (first, second) and its target."""

    head: str
    first: str
    second: str
    label: float = 0.0  # class index (yesno, stance), 1/0 (relevance); unused for spans
    spans: tuple[tuple[int, int], ...] = ()  # answer character spans in ``second`` (span head)
    group: str = ""  # the question or claim it belongs to
    source: str = ""
    weight: float = 1.0  # its weight in the training loss


@dataclass
class DataOptions:
    """How the reader's data are drawn (stored in ``training.json``)."""

    seed: int = 13
    valid_fraction: float = 0.15
    pubmedqa_test: int = 300
    pubmedqa_valid: int = 50
    healthver_test: int = 100
    healthver_valid: int = 30
    relevance_positives: int = 4
    relevance_negatives: int = 6
    negative_depth: int = 30
    yesno_offtopic: int = 2
    negations: bool = True
    max_snippets: int = 12
    counterfactuals: bool = True
    context_weight: float = 0.5
    stance_sets: tuple[str, ...] = ("check_covid", "citation_integrity", "covidfact")
    covidfact_counter: int = 1
    covidfact_weight: float = 0.5
    slice: int | None = None  # at most this many questions, items or claims per side (a quick rebuild)

    def as_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        return asdict(self)


@dataclass
class Side:
    """One side of the split: examples per head and the whole items the task measures read."""

    examples: dict[str, list[Example]] = field(default_factory=dict)
    bioasq: list[QAQuestion] = field(default_factory=list)
    pubmedqa: list[PubMedQAItem] = field(default_factory=list)
    healthver: list[StancePair] = field(default_factory=list)
    stance_sets: dict[str, list[StancePair]] = field(default_factory=dict)  # the other stance sets, per set

    def add(self, examples: Iterable[Example]) -> None:
        for e in examples:
            self.examples.setdefault(e.head, []).append(e)

    def counts(self) -> dict[str, object]:
        return {"examples": {h: len(v) for h, v in sorted(self.examples.items())},
                "bioasq_questions": len(self.bioasq), "pubmedqa_items": len(self.pubmedqa),
                "healthver_claims": len({p.claim for p in self.healthver}), "healthver_pairs": len(self.healthver),
                **{f"{k}_pairs": len(v) for k, v in sorted(self.stance_sets.items())}}


@dataclass
class ReaderData:
    train: Side
    valid: Side
    test: Side
    report: dict[str, object] = field(default_factory=dict)


def clean(text: str) -> str:
    return " ".join(text.split())


def distinct_snippets(q: QAQuestion, limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for s in q.snippets:
        t = clean(s.text)
        if t:
            seen.setdefault(t, None)
    return list(seen)[:limit]


def answer_spans(text: str, names: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans of ``text`` where one of ``names`` occurs (case-insensitive, on word boundaries), longest
    first where two overlap."""
    found: list[tuple[int, int]] = []
    for name in sorted({clean(n).strip(" .,;:") for n in names if clean(n).strip(" .,;:")}, key=len, reverse=True):
        pattern = re.compile(r"(?<![^\W_])" + re.escape(name) + r"(?![^\W_])", re.IGNORECASE)
        for m in pattern.finditer(text):
            if not any(m.start() < b and a < m.end() for a, b in found):
                found.append((m.start(), m.end()))
    return sorted(found)


class SnippetPool:
    """BM25 (``bm25s``) over every distinct gold snippet of a BioASQ file, with the article each comes from."""

    def __init__(self, questions: Sequence[QAQuestion]) -> None:
        from ..registry import require

        self._bm25s = require("bm25s", "train", "mining hard-negative snippets for the reader")
        texts: dict[str, str] = {}
        for q in questions:
            for s in q.snippets:
                t = clean(s.text)
                if t:
                    texts.setdefault(t, s.pmid)
        self.texts = list(texts)
        self.pmids = [texts[t] for t in self.texts]
        self.retriever = self._bm25s.BM25()
        self.retriever.index(self._bm25s.tokenize(self.texts, stopwords="en", show_progress=False),
                             show_progress=False)

    def negatives(self, question: str, not_from: frozenset[str], k: int, depth: int, rng: random.Random
                  ) -> list[str]:
        """Up to ``k`` snippets among BM25's top ``depth`` for ``question`` whose article is not in ``not_from``."""
        tokens = self._bm25s.tokenize([question], stopwords="en", show_progress=False)
        docs, _ = self.retriever.retrieve(tokens, k=min(depth, len(self.texts)), show_progress=False)
        pool = [self.texts[int(i)] for i in docs[0] if self.pmids[int(i)] not in not_from]
        return rng.sample(pool, min(k, len(pool)))


def with_counterfactuals(examples: Sequence[Example]) -> list[Example]:
    """``examples`` (yesno) and the counterfactuals of those that say yes or no (same group and weight)."""
    from .counterfactual import counterfactuals

    out = list(examples)
    for e in examples:
        if not isinstance(e.label, float) or int(e.label) == YESNO["maybe"]:
            continue
        # a rule-made negation is noisier than a swapped predicate: it counts half
        out += [Example("yesno", c.question, c.sentence, float(c.label), group=e.group,
                        source=f"{e.source}+{c.kind}", weight=e.weight * (0.5 if c.kind == "negation" else 1.0))
                for c in counterfactuals(e.first, e.second, int(e.label))]
    return out


def bioasq_examples(questions: Sequence[QAQuestion], pool: SnippetPool, gold_of: dict[str, frozenset[str]],
                    opts: DataOptions, rng: random.Random) -> list[Example]:
    """Examples of every head from BioASQ questions (see the module doc)."""
    out: list[Example] = []
    for q in questions:
        snippets = distinct_snippets(q, opts.max_snippets)
        if not snippets:
            continue
        not_from = gold_of.get(q.id, frozenset(q.documents)) | frozenset(s.pmid for s in q.snippets)
        hard = pool.negatives(q.body, not_from, max(opts.relevance_negatives, opts.yesno_offtopic),
                              opts.negative_depth, rng)
        for t in rng.sample(snippets, min(opts.relevance_positives, len(snippets))):
            out.append(Example("relevance", q.body, t, 1.0, group=q.id, source="bioasq"))
        for t in hard[: opts.relevance_negatives]:
            out.append(Example("relevance", q.body, t, 0.0, group=q.id, source="bioasq-negative"))
        if q.type == "yesno" and q.exact_answer in ("yes", "no"):
            for t in snippets:
                out.append(Example("yesno", q.body, t, float(YESNO[str(q.exact_answer)]), group=q.id,
                                   source="bioasq"))
            for t in hard[: opts.yesno_offtopic]:
                out.append(Example("yesno", q.body, t, float(YESNO["maybe"]), group=q.id, source="bioasq-offtopic"))
        if q.type in ("factoid", "list") and isinstance(q.exact_answer, tuple):
            names = [n for entity in q.exact_answer for n in entity]
            with_answer: list[Example] = []
            without: list[Example] = []
            for t in snippets:
                spans = answer_spans(t, names)
                (with_answer if spans else without).append(Example("span", q.body, t, 1.0 if spans else 0.0,
                                                                   tuple(spans), q.id, "bioasq"))
            out += with_answer + rng.sample(without, min(len(without), max(1, len(with_answer))))
    return out


#: PubMedQA section labels that state no finding: what such a section says does not settle the question
SILENT_SECTIONS = ("BACKGROUND", "INTRODUCTION", "CONTEXT", "OBJECTIVE", "AIM", "PURPOSE", "METHOD", "DESIGN",
                   "SETTING", "PATIENT", "PARTICIPANT", "MATERIAL", "SUBJECT", "INTERVENTION", "MAIN OUTCOME")


def pubmedqa_examples(items: Sequence[PubMedQAItem], context_weight: float = 0.5) -> list[Example]:
    """The conclusion says the item's answer; results sections say it less plainly (``context_weight``); the
    background, objective and methods sections say nothing about it (maybe, ``context_weight``). Items without
    section labels read every context as a results section."""
    out = []
    for it in items:
        labels = it.sections if len(it.sections) == len(it.contexts) else ("",) * len(it.contexts)
        for c, section in zip(it.contexts, labels, strict=True):
            if not clean(c):
                continue
            silent = any(section.startswith(s) for s in SILENT_SECTIONS)
            out.append(Example("yesno", it.question, clean(c), float(YESNO["maybe" if silent else it.label]),
                               group=it.pmid, source="pubmedqa-" + ("background" if silent else "context"),
                               weight=context_weight))
        if clean(it.long_answer):
            out.append(Example("yesno", it.question, clean(it.long_answer), float(YESNO[it.label]), group=it.pmid,
                               source="pubmedqa-conclusion"))
    return out


def stance_examples(pairs: Sequence[StancePair]) -> list[Example]:
    return [Example("stance", p.claim, clean(p.evidence), float(p.label), group=p.claim, source=p.source,
                    weight=p.weight) for p in pairs]


def _slice(questions: Sequence[QAQuestion], n: int) -> list[QAQuestion]:
    """The first ``n`` questions of each type (a slice that still has every head's examples)."""
    out: list[QAQuestion] = []
    for qtype in ("yesno", "factoid", "list", "summary"):
        out += [q for q in questions if q.type == qtype][:n]
    return out


def _split_bioasq(path: Path, opts: DataOptions) -> tuple[list[QAQuestion], list[QAQuestion], list[QAQuestion],
                                                           dict[str, frozenset[str]], dict[str, int]]:
    questions = read_qa(path)
    held = held_out_ids(path)
    plain = read_bioasq(path)
    groups = duplicate_groups(plain)
    held_groups = {groups.group(q) for q in held if q in groups.group_of}
    rest = [q for q in plain if q.id not in held]
    leaked = [q for q in rest if groups.group(q.id) in held_groups]
    rest = [q for q in rest if groups.group(q.id) not in held_groups]
    # one question per duplicate group on the training and validation sides
    seen: set[int] = set()
    reps = []
    for q in rest:
        g = groups.group(q.id)
        if g not in seen:
            seen.add(g)
            reps.append(q)
    split = split_questions(reps, opts.valid_fraction, opts.seed, groups)
    by_id = {q.id: q for q in questions}
    train = [by_id[q.id] for q in split.train if q.id in by_id]
    valid = [by_id[q.id] for q in split.dev if q.id in by_id]
    test = [q for q in questions if q.id in held]
    gold_of = {q.id: groups.gold(q.id) for q in plain}
    counts = {"questions": len(questions), "held_back": len(test), "dropped_near_duplicates_of_held_back":
              len(leaked), "dropped_duplicates": len(rest) - len(reps), "train": len(train), "valid": len(valid)}
    return train, valid, test, gold_of, counts


def held_back_sizes(total: int, test: int, valid: int, test_share: float, valid_share: float, what: str,
                    flag: str) -> tuple[int, int]:
    """(held-back, validation) counts of ``total`` items: at most ``test`` / ``valid``, and the given shares of a
    small file, so a slice holds back what the full file does; InputError when too few would be left to train."""
    n_test = min(test, round(test_share * total))
    n_valid = min(valid, max(1, round(valid_share * total)))
    if total < n_test + n_valid + 10:
        raise InputError(f"{what}, too few to hold back {n_test} and validate on {n_valid}",
                         hint=f"give a smaller {flag}")
    return n_test, n_valid


def _extra_bioasq(paths: Sequence[Path], main: Path, held: frozenset[str]) -> tuple[list[QAQuestion], dict[str, int]]:
    """Questions of the extra BioASQ files (training only), without those that repeat or nearly repeat a
    held-back question of the main file."""
    main_plain = read_bioasq(main)
    extra: list[QAQuestion] = []
    plain = []
    for path in paths:
        extra += read_qa(path)
        plain += read_bioasq(path)
    known = {q.id for q in main_plain} | {" ".join(q.body.lower().split()) for q in main_plain}
    groups = duplicate_groups(main_plain + plain)
    held_groups = {groups.group(q) for q in held if q in groups.group_of}
    drop = {q.id for q in plain if groups.group(q.id) in held_groups}
    kept = [q for q in extra
            if q.id not in drop and q.id not in known and " ".join(q.body.lower().split()) not in known]
    return kept, {"questions": len(extra), "near_duplicates_of_held_back": len(drop), "kept": len(kept)}


def build_data(bioasq: str | Path | None, pubmedqa: str | Path | None, healthver: str | Path | None,
               opts: DataOptions | None = None, *, bioasq_extra: Sequence[str | Path] = (),
               stance_dir: str | Path | None = None) -> ReaderData:
    """The reader's examples from whichever files are given (see the module doc)."""
    opts = opts or DataOptions()
    rng = random.Random(opts.seed)
    train, valid, test = Side(), Side(), Side()
    report: dict[str, object] = {"options": opts.as_dict()}
    if bioasq is not None:
        b_train, b_valid, b_test, gold_of, split_counts = _split_bioasq(Path(bioasq), opts)
        counts: dict[str, object] = dict(split_counts)
        if bioasq_extra:
            extra, extra_counts = _extra_bioasq([Path(p) for p in bioasq_extra], Path(bioasq),
                                                frozenset(q.id for q in b_test))
            b_train = b_train + extra
            counts["extra"] = extra_counts | {"files": [str(p) for p in bioasq_extra]}
        if opts.slice:
            b_train, b_valid, b_test = (_slice(qs, opts.slice) for qs in (b_train, b_valid, b_test))
        pool = SnippetPool(b_train + b_valid + b_test)
        for side, qs in ((train, b_train), (valid, b_valid), (test, b_test)):
            side.bioasq = qs
            side.add(bioasq_examples(qs, pool, gold_of, opts, rng))
        report["bioasq"] = counts | {"snippet_pool": len(pool.texts)}
    if pubmedqa is not None:
        items = read_pubmedqa(pubmedqa)
        order = sorted(items, key=lambda i: i.pmid)
        random.Random(opts.seed).shuffle(order)
        # a small file (a slice) holds back the same shares as the shared file: 300 and 50 of its 651 items
        n_test, n_valid = held_back_sizes(len(order), opts.pubmedqa_test, opts.pubmedqa_valid, 0.46, 0.08,
                                          f"{pubmedqa}: {len(order)} labelled items", "--pubmedqa-test")
        test.pubmedqa, valid.pubmedqa = order[:n_test], order[n_test: n_test + n_valid]
        train.pubmedqa = order[n_test + n_valid:]
        if opts.slice:
            test.pubmedqa, valid.pubmedqa, train.pubmedqa = (x[: opts.slice] for x in
                                                             (test.pubmedqa, valid.pubmedqa, train.pubmedqa))
        for side in (train, valid, test):
            side.add(pubmedqa_examples(side.pubmedqa, opts.context_weight))
        report["pubmedqa"] = {"items": len(order), "held_back": n_test, "valid": n_valid,
                              "train": len(train.pubmedqa)}
    if opts.counterfactuals and train.examples.get("yesno"):
        plain = [e for e in train.examples["yesno"] if e.source in ("bioasq", "pubmedqa-conclusion")]
        made = with_counterfactuals(plain)[len(plain):]
        train.add(made)
        report["counterfactuals"] = {k: sum(e.source.endswith(k) for e in made)
                                     for k in ("sentence-swap", "question-swap", "negation")}
    if healthver is not None:
        pairs = read_stance_csv(healthver)
        claims = sorted({p.claim for p in pairs})
        random.Random(opts.seed).shuffle(claims)
        # a small file (a slice) holds back the same shares as the shared file: 100 and 30 of its 299 claims
        n_test, n_valid = held_back_sizes(len(claims), opts.healthver_test, opts.healthver_valid, 0.33, 0.1,
                                          f"{healthver}: {len(claims)} claims", "--healthver-test")
        held, val = set(claims[:n_test]), set(claims[n_test: n_test + n_valid])
        if opts.slice:
            keep = set(claims[:opts.slice]) | set(claims[n_test: n_test + opts.slice]) | \
                set(claims[n_test + n_valid: n_test + n_valid + opts.slice])
            pairs = [p for p in pairs if p.claim in keep]
        test.healthver = [p for p in pairs if p.claim in held]
        valid.healthver = [p for p in pairs if p.claim in val]
        train.healthver = [p for p in pairs if p.claim not in held and p.claim not in val]
        train.add(stance_examples(train.healthver + (negated(train.healthver) if opts.negations else [])))
        valid.add(stance_examples(valid.healthver))
        test.add(stance_examples(test.healthver))
        report["healthver"] = {"claims": len(claims), "held_back_claims": n_test, "valid_claims": n_valid,
                               "train_claims": len(claims) - n_test - n_valid}
    if stance_dir is not None and opts.stance_sets:
        from .stance_sets import read_sets

        sets = read_sets(stance_dir, tuple(opts.stance_sets), opts.seed, opts.covidfact_counter, opts.covidfact_weight)
        for name, split in sets.items():
            for side, rows in ((train, split.train), (valid, split.valid), (test, split.test)):
                if opts.slice:
                    keep = set(sorted({p.claim for p in rows})[: opts.slice])
                    rows = [p for p in rows if p.claim in keep]
                side.stance_sets[name] = rows
                side.add(stance_examples(rows))
        report["stance_sets"] = {name: split.counts() for name, split in sets.items()}
    report["sides"] = {"train": train.counts(), "valid": valid.counts(), "test": test.counts()}
    return ReaderData(train, valid, test, report)
