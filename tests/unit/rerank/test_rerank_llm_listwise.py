"""The listwise LLM reranker (RankGPT sliding window) with a scripted LLM."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.llm.base import BaseLLM, Completion
from medcite.rerank.base import Reranker
from medcite.rerank.llm_listwise import LLMListwiseReranker
from medcite.types import Article, Hit


class WindowLLM(BaseLLM):
    """Answers each window with ``answer(n)`` where n is the number of passages shown; keeps the prompts."""

    name = "scripted"

    def __init__(self, answer: Any) -> None:
        super().__init__("scripted-model")
        self.answer = answer
        self.shown: list[list[str]] = []  # PMIDs' titles per window, in the order shown

    def _generate(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Completion:
        user = messages[-1]["content"]
        titles = re.findall(r"^\[\d+\] (T\d+)", user, flags=re.MULTILINE)
        self.shown.append(titles)
        return Completion(text=self.answer(len(titles)), model=self.model)


def corpus(n: int) -> tuple[list[Hit], dict[str, Article]]:
    hits = [Hit(str(100 + i), float(n - i), i + 1, frozenset({"bm25"})) for i in range(1, n + 1)]
    articles = {h.pmid: Article(h.pmid, f"T{int(h.pmid) - 100}", "an abstract " * 5) for h in hits}
    return hits, articles


def reverse(n: int) -> str:
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def test_windows_slide_bottom_up():
    r = LLMListwiseReranker(WindowLLM(reverse), window=20, step=10)
    assert r.windows(30) == [(10, 30), (0, 20)]
    assert r.windows(25) == [(5, 25), (0, 15)]
    assert r.windows(7) == [(0, 7)]
    assert r.windows(0) == []
    assert LLMListwiseReranker(WindowLLM(reverse), window=4, step=2).windows(8) == [(4, 8), (2, 6), (0, 4)]


def test_top30_to_10_with_reversing_model():
    # windows [10,30) then [0,20): reversing both lifts documents 21..30 to the top, in order 21..30
    hits, articles = corpus(30)
    llm = WindowLLM(reverse)
    reranker = LLMListwiseReranker(llm, top_n=30, window=20, step=10)
    assert isinstance(reranker, Reranker)
    out = reranker.rerank("q", hits, articles, k=10)
    assert [articles[h.pmid].title for h in out] == [f"T{i}" for i in range(21, 31)]
    assert [h.rank for h in out] == list(range(1, 11))
    assert out[0].score == 1.0 and out[3].score == pytest.approx(0.25)
    assert all(h.branches == frozenset({"bm25"}) for h in out)
    assert llm.shown[0] == [f"T{i}" for i in range(11, 31)]
    assert llm.shown[1] == [f"T{i}" for i in range(1, 11)] + [f"T{i}" for i in range(30, 20, -1)]
    assert reranker.calls == 2


def test_partial_and_invented_ids_never_add_documents():
    hits, articles = corpus(4)
    out = LLMListwiseReranker(WindowLLM(lambda n: "[3] > [99] > [0] > [3]"), window=20).rerank(
        "q", hits, articles, k=10)
    assert [articles[h.pmid].title for h in out] == ["T3", "T1", "T2", "T4"]  # missing ones keep their order


def test_hits_beyond_top_n_follow_unchanged_and_unreadable_hits_are_dropped():
    hits, articles = corpus(6)
    del articles["102"]  # T2 cannot be read
    out = LLMListwiseReranker(WindowLLM(reverse), top_n=3, window=3, step=1).rerank("q", hits, articles, k=10)
    # readable: T1 T3 T4 T5 T6; top 3 (T1 T3 T4) reversed once -> T4 T3 T1; then T5 T6 as they came
    assert [articles[h.pmid].title for h in out] == ["T4", "T3", "T1", "T5", "T6"]


def test_single_hit_needs_no_call():
    hits, articles = corpus(1)
    llm = WindowLLM(reverse)
    assert [h.pmid for h in LLMListwiseReranker(llm).rerank("q", hits, articles, k=5)] == ["101"]
    assert llm.shown == []


def test_passages_are_cut_to_max_words():
    hits, articles = corpus(2)
    llm = WindowLLM(reverse)
    seen: list[str] = []
    original = llm._generate

    def spy(messages, params):
        seen.append(messages[-1]["content"])
        return original(messages, params)

    llm._generate = spy  # type: ignore[method-assign]
    LLMListwiseReranker(llm, max_words=3).rerank("which?", hits, articles, k=2)
    assert "[1] T1 an abstract ..." in seen[0] and "[2] T2 an abstract ..." in seen[0]
    assert "Question: which?" in seen[0] and "Rank all 2 passages" in seen[0]


def test_bad_window_settings():
    with pytest.raises(ConfigError, match="cannot slide"):
        LLMListwiseReranker(WindowLLM(reverse), window=5, step=6)
    with pytest.raises(ConfigError, match="cannot slide"):
        LLMListwiseReranker(WindowLLM(reverse), window=1, step=1)


def test_from_config_reads_rerank_section_and_refuses_no_llm():
    from medcite.pipeline import Context

    s = load_settings("offline", ["rerank.backend=llm-listwise", "rerank.top_n=30", "rerank.window=8",
                                  "rerank.step=4"])
    with pytest.raises(ConfigError, match="needs a language model"):
        Context(s).build("rerank", s.rerank)  # llm.backend is 'none' in the offline preset
    r = Context(s, llm=WindowLLM(reverse)).build("rerank", s.rerank)
    assert (r.top_n, r.window, r.step, r.max_words) == (30, 8, 4, 120)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=35), st.integers(min_value=2, max_value=12), st.data())
def test_output_is_always_a_subset_without_duplicates(n, window, data):
    step = data.draw(st.integers(min_value=1, max_value=window))
    outputs = data.draw(st.lists(st.text(alphabet="[]0123456789> ,x", max_size=30), min_size=1, max_size=5))
    hits, articles = corpus(n)
    calls = iter(range(10**6))
    llm = WindowLLM(lambda m: outputs[next(calls) % len(outputs)])
    out = LLMListwiseReranker(llm, top_n=30, window=window, step=step).rerank("q", hits, articles, k=10)
    pmids = [h.pmid for h in out]
    assert len(pmids) == len(set(pmids)) == min(n, 10)
    assert set(pmids) <= {h.pmid for h in hits}
