"""Near-duplicate BioASQ questions: find them, and keep them from leaking into negatives and across splits.

BioASQ 7b-11b repeats questions in slightly different words ("Is X associated with Y?" one year, "Is X
associated with Y ?" or "Is there an association between X and Y?" another), usually with overlapping gold
documents. Two harms follow for training: a BM25 "hard negative" of one question is often the gold of its
twin (a relevant document labelled irrelevant), and a question held back for evaluation has its twin in
the training side (the held-back score is inflated).

:func:`duplicate_groups` joins questions (union-find) when their normalised texts are equal, when their
content words overlap strongly (Jaccard), or when their words overlap moderately and their gold documents
overlap too. :class:`Groups` then answers, per question, which documents are gold for *any* question of
its group (never to be used as negatives) and which questions belong together (kept on one side of a
split, :func:`medcite.train.data.split_questions`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .questions import Question

_WORD = re.compile(r"[^\W_]+")
# function words of questions: they make every pair of questions look alike, so they never count as overlap
_STOP = frozenset(
    "a an and are as at be by can could do does did for from has have how in is it its of on or than that the "
    "their there these this those to was were what when where which who whom whose why with within "
    "without please list name describe".split()
)


@dataclass(frozen=True)
class DedupOptions:
    """When two questions are near-duplicates (any one rule suffices).

    ``words``: Jaccard of their content-word sets at least this; ``words_with_gold`` and ``gold``: a lower
    word overlap together with gold documents overlapping at least ``gold`` (overlap coefficient: shared
    gold over the smaller gold set).
    """

    words: float = 0.8
    words_with_gold: float = 0.5
    gold: float = 0.5


def normalise(text: str) -> str:
    """Lower case, accents folded, punctuation dropped, white space collapsed."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return " ".join(_WORD.findall(folded))


def content_words(text: str) -> frozenset[str]:
    """The normalised words of ``text`` that are not question function words (a plural ``s`` dropped)."""
    out = set()
    for w in normalise(text).split():
        if w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Shared items over the smaller set (0 when either is empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 0.0


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)


def duplicate_pairs(questions: Sequence[Question], opts: DedupOptions | None = None) -> list[tuple[int, int, str]]:
    """Index pairs ``(i, j, rule)`` of near-duplicate questions, ``i < j``; ``rule`` is ``text``, ``words``
    or ``words+gold``.

    Candidate pairs are those sharing a content word or a gold document (an inverted index), so the cost
    follows the number of similar pairs rather than the square of the number of questions.
    """
    opts = opts or DedupOptions()
    norm = [normalise(q.body) for q in questions]
    words = [content_words(q.body) for q in questions]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, ws in enumerate(words):
        for w in ws:
            postings[f"w:{w}"].append(i)
        for p in set(questions[i].gold):
            postings[f"g:{p}"].append(i)
        postings[f"t:{norm[i]}"].append(i)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for ids in postings.values():
        if len(ids) > 500:  # a word in most questions says nothing about duplicates
            continue
        for a in range(len(ids)):
            for b in range(a + 1, len(ids)):
                shared[(ids[a], ids[b])] += 1
    out = []
    for i, j in sorted(shared):
        if norm[i] == norm[j]:
            out.append((i, j, "text"))
            continue
        sim = jaccard(words[i], words[j])
        if sim >= opts.words:
            out.append((i, j, "words"))
        elif sim >= opts.words_with_gold and overlap(questions[i].gold, questions[j].gold) >= opts.gold:
            out.append((i, j, "words+gold"))
    return out


@dataclass
class Groups:
    """Questions joined into near-duplicate groups: question id -> group number (the smallest member index)."""

    group_of: dict[str, int]
    gold_of_group: dict[int, frozenset[str]]
    pairs: int = 0
    by_rule: dict[str, int] | None = None

    def group(self, qid: str) -> int:
        return self.group_of[qid]

    def gold(self, qid: str) -> frozenset[str]:
        """Every document that is gold for ``qid`` or for any near-duplicate of it."""
        return self.gold_of_group[self.group_of[qid]]

    def members(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = defaultdict(list)
        for qid, g in self.group_of.items():
            out[g].append(qid)
        return dict(out)

    def summary(self) -> dict[str, int | dict[str, int]]:
        """Counts for training reports: questions, groups with more than one question, questions that are
        duplicates of an earlier one (dropped by :func:`representatives`), pairs found by each rule."""
        sizes = [len(m) for m in self.members().values()]
        return {"questions": len(self.group_of), "duplicate_groups": sum(1 for s in sizes if s > 1),
                "duplicate_questions": sum(s - 1 for s in sizes), "pairs": self.pairs,
                "pairs_by_rule": dict(self.by_rule or {})}


def duplicate_groups(questions: Sequence[Question], opts: DedupOptions | None = None) -> Groups:
    """Group near-duplicate questions (see :class:`DedupOptions`); a question alone is its own group."""
    pairs = duplicate_pairs(questions, opts)
    uf = _UnionFind(len(questions))
    by_rule: dict[str, int] = defaultdict(int)
    for i, j, rule in pairs:
        uf.union(i, j)
        by_rule[rule] += 1
    group_of: dict[str, int] = {}
    gold: dict[int, set[str]] = defaultdict(set)
    for i, q in enumerate(questions):
        g = uf.find(i)
        # a question id seen twice (the same question in two batches) joins its first group
        g = group_of.setdefault(q.id, g)
        gold[g].update(q.gold)
    return Groups(group_of, {g: frozenset(s) for g, s in gold.items()}, len(pairs), dict(by_rule))


def representatives(questions: Sequence[Question], groups: Groups) -> list[Question]:
    """One question per group (the first in ``questions``), carrying the gold of its whole group: training
    sees each question once, and every document relevant to any wording of it counts as relevant."""
    seen: set[int] = set()
    out = []
    for q in questions:
        g = groups.group(q.id)
        if g in seen:
            continue
        seen.add(g)
        extra = [p for p in sorted(groups.gold(q.id)) if p not in q.gold]
        out.append(replace(q, gold=q.gold + tuple(extra)))
    return out
