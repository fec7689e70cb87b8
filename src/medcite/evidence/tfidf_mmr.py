"""TF-IDF relevance to a query set + maximal marginal relevance (Carbonell & Goldstein 1998).

CLaC 2025 selects evidence bullets by TF-IDF cosine to the query set and MMR with lambda = 0.75.
Relevance of a candidate is its best cosine to any query of the set.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..registry import require


def tfidf_vectors(candidates: Sequence[str], queries: Sequence[str]) -> tuple[object, object]:
    """L2-normalised TF-IDF rows for candidates and queries, fitted on both (English stop words removed)."""
    text = require("sklearn.feature_extraction.text", "evidence", "TF-IDF evidence selection")
    vec = text.TfidfVectorizer(stop_words="english", sublinear_tf=True, ngram_range=(1, 2), min_df=1)
    matrix = vec.fit_transform([*candidates, *queries])
    return matrix[: len(candidates)], matrix[len(candidates) :]


def relevance(candidates: Sequence[str], queries: Sequence[str]) -> np.ndarray:
    """Best TF-IDF cosine of each candidate to any query (0 when nothing overlaps)."""
    if not candidates:
        return np.zeros(0)
    if not any(q.strip() for q in queries):
        return np.zeros(len(candidates))
    try:
        cand, qry = tfidf_vectors(candidates, queries)
    except ValueError:  # empty vocabulary: only stop words
        return np.zeros(len(candidates))
    sims = (cand @ qry.T).toarray()  # type: ignore[attr-defined]
    return sims.max(axis=1) if sims.size else np.zeros(len(candidates))


def similarity_matrix(texts: Sequence[str]) -> np.ndarray:
    """Pairwise TF-IDF cosine between texts."""
    if not texts:
        return np.zeros((0, 0))
    try:
        vecs, _ = tfidf_vectors(texts, [])
    except ValueError:
        return np.zeros((len(texts), len(texts)))
    return (vecs @ vecs.T).toarray()  # type: ignore[attr-defined,no-any-return]


def mmr(
    scores: Sequence[float],
    sim: np.ndarray,
    k: int,
    lam: float = 0.75,
    groups: Sequence[str] | None = None,
    per_group: int | None = None,
) -> list[int]:
    """Indices chosen greedily by ``lam * score - (1 - lam) * max similarity to those already chosen``.

    ``groups``/``per_group`` cap how many items one group (e.g. one PMID) may contribute.
    """
    n = len(scores)
    chosen: list[int] = []
    counts: dict[str, int] = {}
    remaining = set(range(n))
    while remaining and len(chosen) < k:
        best, best_val = -1, -np.inf
        for i in sorted(remaining):
            if groups is not None and per_group is not None and counts.get(groups[i], 0) >= per_group:
                continue
            redundancy = max((sim[i, j] for j in chosen), default=0.0)
            val = lam * scores[i] - (1 - lam) * redundancy
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        chosen.append(best)
        remaining.discard(best)
        if groups is not None:
            counts[groups[best]] = counts.get(groups[best], 0) + 1
    return chosen
