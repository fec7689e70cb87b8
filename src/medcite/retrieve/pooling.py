"""Pooling of per-branch results by PMID (CLaC 2025: retrieve each sub-query on its own, then pool).

A branch is one (retriever, sub-query) pair, or a reranked list of one sub-query's candidates. The pool
keeps, for every PMID, the best score any branch gave it and the set of branches that found it, so the
evidence and viewer can show why a document is there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..types import Hit, ranked


def pool(branch_results: Mapping[str, Sequence[Hit]]) -> list[Hit]:
    """Merge branches by PMID: best (maximum) score, union of branch names, ranked by that score.

    Each hit contributes its branch key plus any branch names it already carries. Scores are compared
    as they are: pool runs whose scores share a scale (one retriever, or one reranker, across
    sub-queries), or normalise them first (:func:`medcite.retrieve.fusion.normalise`).
    """
    best: dict[str, float] = {}
    found: dict[str, frozenset[str]] = {}
    for name, hits in branch_results.items():
        for hit in hits:
            if hit.pmid not in best or hit.score > best[hit.pmid]:
                best[hit.pmid] = hit.score
            found[hit.pmid] = found.get(hit.pmid, frozenset()) | hit.branches | {name}
    return ranked([Hit(pmid, score, 0, found[pmid]) for pmid, score in best.items()])
