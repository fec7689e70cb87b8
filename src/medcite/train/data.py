"""Training data from BioASQ: questions with gold PMIDs, a split by question, pairs with BM25 or dense hard
negatives.

DS@GT (BioASQ 13b, "Ensembling cross-encoders and GPT rerankers with LLMs") fine-tuned cross-encoders on
question / gold-document pairs with negatives mined by BM25 (gold documents removed), holding out whole
questions, the most recent ones, for evaluation. This module builds exactly that from a BioASQ JSON file
and a document store: a gold PMID that is not in the store is skipped (its text is unknown).
"""

from __future__ import annotations

import logging
import random
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.store import DocumentStore
from ..errors import InputError
from ..io import read_bioasq_questions
from ..types import Article, Hit
from .dedup import DedupOptions, Groups, duplicate_groups, representatives
from .questions import Question

if TYPE_CHECKING:
    from ..index.base import SparseIndex

log = logging.getLogger(__name__)

_PMID_URL = re.compile(r"(?:^|/)(\d+)/?$")
_BATCH = re.compile(r"(\d+)\s*[bB]\s*(\d+)")


@dataclass(frozen=True)
class Pair:
    """One training example: question text, document text, label 1 (gold) or 0 (BM25 negative)."""

    qid: str
    pmid: str
    question: str
    text: str
    label: float


@dataclass
class Split:
    train: list[Question]
    dev: list[Question]


def read_bioasq(path: str | Path) -> list[Question]:
    """Questions with at least one gold document from a BioASQ JSON file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    questions = read_bioasq_questions(path, hint="give the training JSON with --data")
    out = []
    for i, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not isinstance(q.get("body"), str):
            raise InputError("each question needs string 'id' and 'body'", path=str(path),
                             position=f"questions[{i}]")
        gold = []
        for url in q.get("documents") or []:
            m = _PMID_URL.search(str(url).strip())
            if m is None:
                raise InputError(f"no PMID in document {url!r}", path=str(path), position=f"questions[{i}]")
            if m.group(1) not in gold:
                gold.append(m.group(1))
        if gold:
            out.append(Question(q["id"], q["body"].strip(), tuple(gold), q.get("source_batch")))
    log.info("%s: %d questions with gold documents", path, len(out))
    return out


def batch_order(batch: str | None) -> tuple[int, int]:
    """``"11B4"`` -> (11, 4), so later batches sort higher; unknown -> (-1, -1)."""
    m = _BATCH.search(batch or "")
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def split_questions(questions: Sequence[Question], dev_fraction: float, seed: int,
                    groups: Groups | None = None) -> Split:
    """Split by question: no question is on both sides.

    With batch information the most recent batches go to dev (DS@GT held out recent questions: it is
    what a model meets next); within a batch, and without batch information, the order is a shuffle
    by ``seed``. With near-duplicate ``groups`` (:func:`medcite.train.dedup.duplicate_groups`), a training
    question whose group has a member in dev moves to dev too, so no wording of a held-back question is
    trained on; the dev side of the plain split is kept as it is (its questions stay comparable).
    """
    if not 0 < dev_fraction < 1:
        raise InputError(f"dev fraction must be between 0 and 1, got {dev_fraction}", hint="e.g. 0.2")
    items = sorted(questions, key=lambda q: q.id)
    random.Random(seed).shuffle(items)
    if any(q.batch for q in items):
        items.sort(key=lambda q: batch_order(q.batch), reverse=True)  # stable: keeps the shuffle inside
    n_dev = max(1, round(len(items) * dev_fraction)) if len(items) > 1 else 0
    split = Split(train=items[n_dev:], dev=items[:n_dev])
    if groups is None:
        return split
    held = {groups.group(q.id) for q in split.dev}
    moved = [q for q in split.train if groups.group(q.id) in held]
    if moved:
        log.info("%d training questions are near-duplicates of held-back ones: moved to the held-back side",
                 len(moved))
    return Split(train=[q for q in split.train if groups.group(q.id) not in held], dev=split.dev + moved)


def training_split(questions: Sequence[Question], dev_fraction: float, seed: int,
                   dedup: DedupOptions | None = None) -> tuple[Split, Groups]:
    """What every ``medcite train`` command trains and evaluates on: near-duplicate groups found
    (:func:`medcite.train.dedup.duplicate_groups`), the split by question with each group on one side, and
    the training side reduced to one question per group carrying its group's gold
    (:func:`medcite.train.dedup.representatives`). Mine negatives with the returned groups."""
    groups = duplicate_groups(questions, dedup)
    split = split_questions(questions, dev_fraction, seed, groups)
    train = representatives(split.train, groups)
    summary = groups.summary()
    log.info("%d near-duplicate questions in %d groups; %d training questions after de-duplication, %d held back",
             summary["duplicate_questions"], summary["duplicate_groups"], len(train), len(split.dev))
    return Split(train=train, dev=split.dev), groups


class Searcher:
    """A BM25 index over a store: the given index folder, or a temporary tantivy index built here."""

    def __init__(self, index: SparseIndex) -> None:
        self.index = index

    def search(self, query: str, k: int) -> list[Hit]:
        return list(self.index.search(query, k))


@contextmanager
def bm25_searcher(store: DocumentStore, index_folder: str | Path | None = None) -> Iterator[Searcher]:
    """Open ``index_folder`` (checked against the store), or build a throwaway BM25 index of the store."""
    from ..index.sparse.base import SparseConfig, build_sparse, open_sparse
    from ..registry import default_config

    if index_folder is not None:
        yield Searcher(open_sparse(index_folder, store))
        return
    with tempfile.TemporaryDirectory(prefix="medcite-bm25-") as tmp:
        log.info("building a temporary BM25 index of %d documents", len(store))
        cfg = default_config("index", backend="tantivy")
        assert isinstance(cfg, SparseConfig)
        build_sparse(store, Path(tmp) / "bm25", cfg)
        yield Searcher(open_sparse(Path(tmp) / "bm25", store))


def not_negative(question: Question, groups: Groups | None = None) -> set[str]:
    """Documents never used as a negative of ``question``: its gold, and with ``groups`` the gold of every
    near-duplicate question."""
    out = set(question.gold)
    if groups is not None and question.id in groups.group_of:
        out |= groups.gold(question.id)
    return out


def known_gold(question: Question, articles: dict[str, Article]) -> list[str]:
    return [p for p in question.gold if p in articles]


@dataclass
class Mined:
    """One question's training material: its gold pairs (label 1), its BM25 hard negatives (label 0, best
    first) and every gold PMID of the question (also those the store lacks)."""

    question: Question
    positives: list[Pair]
    negatives: list[Pair]

    @property
    def gold(self) -> frozenset[str]:
        return frozenset(self.question.gold)


def mine_questions(
    questions: Sequence[Question],
    store: DocumentStore,
    searcher: Searcher,
    *,
    negatives: int = 3,
    depth: int = 50,
    groups: Groups | None = None,
) -> list[Mined]:
    """Per question with gold in the store: the gold pairs and the ``negatives * |gold in store|`` best
    BM25 hits of its body among the top ``depth`` that are not gold (nor, with near-duplicate ``groups``,
    gold for any near-duplicate of the question)."""
    out = _gold_pairs(questions, store)
    if negatives:
        for m in out:
            _add_negatives(m, [h.pmid for h in searcher.search(m.question.body, depth)], store, negatives, groups)
    return out


def _gold_pairs(questions: Sequence[Question], store: DocumentStore) -> list[Mined]:
    """Per question with gold in the store: its gold pairs (label 1), no negatives yet; the others are skipped
    (one warning counts them)."""
    out: list[Mined] = []
    skipped = 0
    for q in questions:
        arts = store.get_many(list(q.gold))
        gold = known_gold(q, arts)
        if not gold:
            skipped += 1
            continue
        out.append(Mined(q, [Pair(q.id, p, q.body, arts[p].text, 1.0) for p in gold], []))
    if skipped:
        log.warning("%d questions have no gold document in the store and were skipped", skipped)
    return out


def _add_negatives(m: Mined, ranked: Sequence[str], store: DocumentStore, negatives: int,
                   groups: Groups | None) -> None:
    """Add to ``m`` the first ``negatives * |gold pairs|`` PMIDs of ``ranked`` that are not gold (nor, with
    near-duplicate ``groups``, gold for any near-duplicate of its question) as pairs of label 0."""
    gold_set = not_negative(m.question, groups)
    neg_ids = [p for p in ranked if p not in gold_set][: negatives * len(m.positives)]
    neg_arts = store.get_many(neg_ids)
    m.negatives.extend(Pair(m.question.id, p, m.question.body, neg_arts[p].text, 0.0)
                       for p in neg_ids if p in neg_arts)


def mine_pairs(
    questions: Sequence[Question],
    store: DocumentStore,
    searcher: Searcher,
    *,
    negatives: int = 3,
    depth: int = 50,
    max_pairs: int | None = None,
    seed: int = 0,
) -> list[Pair]:
    """Gold (label 1) and BM25 hard-negative (label 0) pairs of :func:`mine_questions`, shuffled by ``seed``
    (see :func:`pairs_of`)."""
    mined = mine_questions(questions, store, searcher, negatives=negatives, depth=depth)
    return pairs_of(mined, max_pairs, seed)


def pairs_of(mined: Sequence[Mined], max_pairs: int | None, seed: int) -> list[Pair]:
    """The gold and hard-negative pairs of ``mined``, shuffled by ``seed``.

    ``max_pairs`` caps the result after shuffling, whole questions at a time so a question never keeps
    negatives without its positives.
    """
    kept = whole_questions(mined, max_pairs, seed, size=lambda m: len(m.positives) + len(m.negatives))
    out = [p for m in kept for p in m.positives + m.negatives]
    random.Random(seed + 1).shuffle(out)
    return out


def mine_questions_dense(
    questions: Sequence[Question],
    store: DocumentStore,
    model: Any,
    *,
    negatives: int = 3,
    depth: int = 50,
    batch_size: int = 32,
    groups: Groups | None = None,
) -> list[Mined]:
    """:func:`mine_questions` with dense hard negatives: the ``negatives * |gold in store|`` nearest
    documents of the whole store to each question by ``model`` (a SentenceTransformer, cosine) among
    its top ``depth`` that are not gold, mined by sentence-transformers' ``mine_hard_negatives``.

    DS@GT (BioASQ 13b) took hard negatives from a dense index the same way. Every document of the store
    is embedded once (on CPU, MiniLM encodes some tens of abstracts a second).
    """
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    out = _gold_pairs(questions, store)
    if not out or not negatives:
        return out
    corpus: dict[str, str] = {}  # text -> first PMID with it (mining works on texts)
    for art in store.iter_articles():
        corpus.setdefault(art.text, art.pmid)
    log.info("dense hard negatives: embedding %d documents and %d questions", len(corpus), len(out))
    wanted = min(depth, negatives * max(len(m.positives) for m in out))
    rows = Dataset.from_dict({"query": [p.question for m in out for p in m.positives],
                              "document": [p.text for m in out for p in m.positives]})
    mined = mine_hard_negatives(rows, model, corpus=list(corpus), range_max=depth, num_negatives=wanted,
                                sampling_strategy="top", output_format="labeled-pair", batch_size=batch_size,
                                verbose=False)
    found: dict[str, list[str]] = {}  # question body -> negative PMIDs, nearest first
    for body, text, label in zip(mined["query"], mined["document"], mined["label"], strict=True):
        if not label:
            found.setdefault(body, []).append(corpus[text])
    for m in out:
        _add_negatives(m, found.get(m.question.body, []), store, negatives, groups)
    return out


def whole_questions(
    mined: Sequence[Mined],
    max_pairs: int | None,
    seed: int,
    size: Callable[[Mined], int],
    keep: Callable[[Mined], bool] = lambda m: True,
) -> list[Mined]:
    """Shuffle the questions by ``seed`` and take whole ones while their ``size`` (training rows) fits in
    ``max_pairs`` (at least one question always); questions ``keep`` rejects are passed over."""
    order = list(mined)
    random.Random(seed).shuffle(order)
    out: list[Mined] = []
    total = 0
    for m in order:
        if max_pairs is not None and total and total + size(m) > max_pairs:
            break
        if keep(m):
            out.append(m)
            total += size(m)
    return out


@dataclass
class EvalQuery:
    """A held-back question: its BM25 pool, the pool's articles and the gold PMIDs found in the store."""

    question: Question
    hits: list[Hit]
    articles: dict[str, Article]
    relevant: frozenset[str]


def eval_pools(
    questions: Sequence[Question], store: DocumentStore, searcher: Searcher, depth: int = 100
) -> list[EvalQuery]:
    """For each question with gold in the store: its BM25 top ``depth`` and their articles.

    The relevant set is the gold in the store (a PMID the store lacks can never be retrieved).
    """
    out = []
    for q in questions:
        relevant = frozenset(store.existing(q.gold))
        if not relevant:
            continue
        hits = searcher.search(q.body, depth)
        out.append(EvalQuery(q, hits, store.get_many([h.pmid for h in hits]), relevant))
    return out
