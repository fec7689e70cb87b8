"""The LTR features on inline candidates, with hand-computed values."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from medcite.rerank.ltr_features import (
    Encoded,
    Features,
    FeatureSources,
    bm25_term,
    feature_names,
    min_cover,
    ranks,
)
from medcite.types import Article, Hit

DF = {"gout": 2, "drug": 5, "asthma": 1, "for": 9}


def analyzer(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def sources(**kw: object) -> FeatureSources:
    return FeatureSources(analyzer, lambda t: DF.get(t, 0), 10, 2.0, 4.0, **kw)  # type: ignore[arg-type]


ARTS = {"1": Article("1", "gout drug", "drug for gout"), "2": Article("2", "asthma", "gout")}
HITS = [Hit("1", 0.5, 1, frozenset({"bm25/q0"})), Hit("2", 0.25, 2, frozenset({"bm25/q0", "dense/q0"}))]


def test_bm25_term_is_lucene_bm25() -> None:
    # idf = ln(1 + (10 - 1 + 0.5) / (1 + 0.5)); a document of average length with tf 1 keeps idf * 1
    assert bm25_term(1, 1, 10, 2, 2) == pytest.approx(math.log(1 + 9.5 / 1.5))
    # tf 2 in a document twice the average length: 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 2))
    assert bm25_term(2, 1, 10, 4, 2) == pytest.approx(math.log(1 + 9.5 / 1.5) * 4.4 / (2 + 1.2 * 1.75))
    assert bm25_term(0, 1, 10, 4, 2) == 0.0


def test_min_cover_and_ranks() -> None:
    assert min_cover("a x b y a b".split(), {"a", "b"}) == 2
    assert min_cover("a x x b".split(), {"a", "b", "zzz"}) == 4  # terms not in the text do not count
    assert min_cover("x y".split(), {"a"}) == 0
    assert list(ranks(np.array([0.2, 0.9, 0.5]))) == [3, 1, 2]


def test_first_stage_bm25_and_term_features() -> None:
    f = Features(sources(), ("first_stage", "bm25", "terms"))
    x = f("gout drug", HITS, ARTS)
    row = {n: x[:, i] for i, n in enumerate(f.names)}
    assert f.names == feature_names(("first_stage", "bm25", "terms"), [])
    assert list(row["fused_score"]) == [0.5, 0.25] and list(row["fused_rrank"]) == [1.0, 0.5]
    assert list(row["in_bm25"]) == [1, 1] and list(row["in_dense"]) == [0, 1] and list(row["branches"]) == [1, 2]
    idf_gout, idf_drug = math.log(1 + 8.5 / 2.5), math.log(1 + 5.5 / 5.5)
    # title "gout drug": both terms once, length 2 = the average title length
    assert row["bm25_title"][0] == pytest.approx(idf_gout + idf_drug)
    assert row["bm25_title"][1] == 0.0
    # abstract of doc 2 "gout": tf 1, length 1 against an average of 4
    assert row["bm25_abstract"][1] == pytest.approx(idf_gout * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / 4)))
    assert row["bm25_text_gap"][0] == 0.0 and row["bm25_text_gap"][1] < 0
    assert list(row["bm25_index_rank"]) == pytest.approx([math.log(302)] * 2)  # no index search given
    assert list(row["cover_title"]) == [1.0, 0.0] and list(row["cover_abstract"]) == [1.0, 0.5]
    assert row["cover_text_idf"][1] == pytest.approx(idf_gout / (idf_gout + idf_drug))
    assert list(row["bigrams"]) == [1.0, 0.0]  # "gout drug" is a bigram of doc 1's title only
    assert list(row["proximity"]) == [1.0, 1.0] and list(row["query_terms"]) == [2, 2]


def test_index_search_and_dense_features() -> None:
    index_hits = [Hit("2", 7.0, 1), Hit("9", 6.0, 2)]
    enc = Encoded("fake", lambda q: np.array([1.0, 0.0]), lambda arts: np.array([[1.0, 0.0], [1.0, 1.0]]))
    f = Features(sources(search=lambda q, k: index_hits[:k], encoders=[enc]), ("bm25", "dense"))
    x = f("gout drug", HITS, ARTS)
    row = {n: x[:, i] for i, n in enumerate(f.names)}
    assert list(row["bm25_index"]) == [0.0, 7.0]
    assert list(row["bm25_index_rank"]) == pytest.approx([math.log(302), math.log(2)])
    assert list(row["cos_fake"]) == pytest.approx([1.0, 1 / math.sqrt(2)])
    assert list(row["cos_fake_rank"]) == [1, 2] and row["cos_fake_gap"][1] == pytest.approx(1 / math.sqrt(2) - 1)


def test_prf_features_score_the_expanded_query() -> None:
    class Expander:
        def expand(self, query: str, docs: list[tuple[str, float]]) -> object:
            assert docs == [("asthma gout", 7.0)]  # the feedback document's text and score
            return type("W", (), {"weights": {"asthma": 1.0}})()

    f = Features(sources(search=lambda q, k: [Hit("2", 7.0, 1)], get_many=lambda ids: {"2": ARTS["2"]},
                         expanders=[Expander()]), ("prf",))
    x = f("gout drug", HITS, ARTS)
    assert x[0, 0] == 0.0 and x[1, 0] > 0  # only doc 2 has "asthma"; the missing second expander gives zeros
    assert list(x[:, 1]) == [0.0, 0.0]


def test_document_group_and_unknown_group() -> None:
    arts = {"1": Article("1", "a b", "c d e", year=2020, publication_types=("Review",)), "2": Article("2", "x", "")}
    x = Features(sources(), ("document",))("q", HITS, arts)
    assert x.tolist() == [[2, 3, 2020, 1, 1], [1, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="unknown feature group"):
        Features(sources(), ("nope",))


def test_passage_features_read_the_best_sentence() -> None:
    arts = {"1": Article("1", "t", "Gout is common. Drug X treats gout."), "2": Article("2", "t", "Asthma. Gout.")}
    f = Features(sources(), ("passage",))
    x = f("gout drug", HITS, arts)
    idf_gout, idf_drug = math.log(1 + 8.5 / 2.5), math.log(1 + 5.5 / 5.5)
    # doc 1's second sentence holds both terms, 4 terms long against the default average sentence of 25
    tf_part = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / 25))
    assert x[0, 0] == pytest.approx((idf_gout + idf_drug) * tf_part) and x[0, 1] == 1.0
    # doc 2's best sentence is "Gout." (1 term): one query term of two
    assert x[1, 0] == pytest.approx(idf_gout * 2.2 / (1 + 1.2 * (0.25 + 0.75 / 25))) and x[1, 1] == 0.5
