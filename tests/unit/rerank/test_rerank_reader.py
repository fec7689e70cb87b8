"""The reader reranker: an article read as title + abstract windows, scored by its best window (MaxP), blended
with the input order when asked; and the shipped reader ranking real abstracts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from pydantic import ValidationError

from medcite.rerank.reader import ReaderRerankConfig, ReaderReranker, minmax, windows
from medcite.types import Article, Hit


def test_an_article_is_read_as_title_plus_overlapping_windows_of_its_abstract() -> None:
    art = Article("1", "A title", " ".join(f"w{i}" for i in range(25)))
    got = windows(art, window_words=10, stride_words=8, max_windows=9)
    assert got[0] == "A title " + " ".join(f"w{i}" for i in range(10))
    assert got[1].startswith("A title w8 w9 w10")  # two words read twice: the overlap
    assert got[-1].endswith("w24") and len(got) == 3  # the last window reaches the end, no empty one after
    assert windows(art, 10, 8, max_windows=1) == got[:1]
    assert windows(Article("2", "Only a title", ""), 10, 8, 4) == ["Only a title"]
    assert windows(Article("3", "", "short abstract"), 10, 8, 4) == ["short abstract"]
    assert windows(Article("4", "", ""), 10, 8, 4) == []


def test_a_stride_longer_than_the_window_is_refused() -> None:
    with pytest.raises(ValidationError, match="stride_words"):
        ReaderRerankConfig(window_words=50, stride_words=60)


class _Relevance:
    """A reader stand-in whose relevance is the count of 'gene' in the passage (records what it read)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def need(self, head: str) -> None:
        assert head == "relevance"

    def relevance(self, question: str, passages: Sequence[str]) -> np.ndarray:
        self.read += list(passages)
        return np.asarray([p.split().count("gene") for p in passages], dtype=np.float32)


def _reranker(**cfg: object) -> tuple[ReaderReranker, _Relevance]:
    fake = _Relevance()
    cfg = {"input_weight": 0.0, "max_windows": 4} | cfg
    return ReaderReranker(fake, ReaderRerankConfig(window_words=4, stride_words=4, **cfg)), fake  # type: ignore[arg-type]


ARTS = {
    "1": Article("1", "t", "x x x x x x x x gene gene gene"),  # its best window is its second: MaxP finds it
    "2": Article("2", "t", "gene x x x x x x x x x x x"),
    "3": Article("3", "t", "x x x x"),
}
HITS = [Hit("3", 3.0, 1), Hit("2", 2.0, 2), Hit("1", 1.0, 3), Hit("9", 0.5, 4)]  # 9: no article, never read


def test_an_article_scores_its_best_window_and_unknown_pmids_are_dropped() -> None:
    rr, fake = _reranker(top_n=10)
    got = rr.rerank("q", HITS, ARTS, k=10)
    assert [h.pmid for h in got] == ["1", "2", "3"]
    assert [h.score for h in got] == [3.0, 1.0, 0.0]
    assert all(" 9 " not in p for p in fake.read)
    rr.rerank("q", HITS, ARTS, k=10)  # a pair read before is not read again
    assert len(fake.read) == 3 + 3 + 1


def test_top_n_limits_what_is_read_and_k_what_is_kept() -> None:
    rr, fake = _reranker(top_n=2)
    got = rr.rerank("q", HITS, ARTS, k=1)
    assert [h.pmid for h in got] == ["2"]  # article 1 was ranked third by the input: not read
    assert not any("gene gene" in p for p in fake.read)


def test_the_input_order_weighs_in_when_asked() -> None:
    alone, _ = _reranker(top_n=10, input_weight=0.0)
    mostly_input, _ = _reranker(top_n=10, input_weight=0.9)
    assert [h.pmid for h in alone.rerank("q", HITS, ARTS, 3)] == ["1", "2", "3"]
    assert [h.pmid for h in mostly_input.rerank("q", HITS, ARTS, 3)] == ["3", "2", "1"]
    assert list(minmax([2.0, 4.0, 3.0])) == [0.0, 1.0, 0.5] and list(minmax([1.0, 1.0])) == [0.0, 0.0]


@pytest.mark.slow  # loads the shipped reader
def test_the_shipped_reader_ranks_the_abstract_that_answers_first() -> None:
    pytest.importorskip("torch")
    from medcite.config import load_settings
    from medcite.pipeline.context import Context

    settings = load_settings("bm25", ["rerank.backend=reader", "rerank.k=3", "rerank.input_weight=0",
                                      "rerank.max_windows=4"])
    with Context(settings, None) as ctx:
        rr = ctx.build("rerank", settings.rerank)
        assert isinstance(rr, ReaderReranker)
        arts = {
            "10": Article("10", "Hydin is an axonemal protein", "Hydin was identified as a component of the "
                          "central pair apparatus of motile cilia; its loss causes primary ciliary dyskinesia."),
            "11": Article("11", "Road traffic noise and sleep", "Night-time noise exposure was associated with "
                          "shorter sleep in a cohort of adults living near highways."),
            "12": Article("12", "Axon guidance in zebrafish", "Netrin receptors steer commissural axons."),
        }
        hits = [Hit("11", 3.0, 1), Hit("12", 2.0, 2), Hit("10", 1.0, 3)]
        got = rr.rerank("Is Hydin an axonemal protein?", hits, arts, 3)
    assert got[0].pmid == "10"
