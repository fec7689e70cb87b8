"""Issue 34: a new backend is one file plus one registration line, and a shipped preset runs with it.

Each test writes a throwaway backend module to a temporary folder -- nothing under ``src/`` names it -- registers
it with :func:`medcite.registry.register` (one line) and runs a preset with ``--set STAGE.backend=NAME``; the
backend's effect must show in the output, so the test fails when anything beyond the file and the line is needed.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from medcite import registry
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.pipeline import Pipeline, RetrievalPipeline
from medcite.types import Article, Topic

RERANKER = '''
from typing import Any, Literal

from pydantic import Field

from medcite.rerank.base import RerankConfig
from medcite.types import Hit

CALLS: list[str] = []


class ThrowawayConfig(RerankConfig):
    backend: Literal["throwaway"] = "throwaway"
    bonus: float = Field(0.0, description="Added to every score.")


class ThrowawayReranker:
    """Reverses the ranking it is given."""

    Config = ThrowawayConfig

    def __init__(self, bonus: float) -> None:
        self.bonus = bonus

    @classmethod
    def from_config(cls, cfg: ThrowawayConfig, ctx: Any) -> "ThrowawayReranker":
        return cls(cfg.bonus)

    def rerank(self, query: str, hits: Any, articles: Any, k: int) -> list[Hit]:
        CALLS.append(query)
        order = list(hits)[::-1][:k]
        return [Hit(h.pmid, self.bonus + len(order) - i, i + 1, h.branches) for i, h in enumerate(order)]
'''

LLM = '''
import re
from typing import Any, Literal

from medcite.llm.base import BaseLLM, Completion, LLMConfig, Message

PROMPTS: list[str] = []


class ThrowawayLLMConfig(LLMConfig):
    backend: Literal["throwaway-llm"] = "throwaway-llm"


class ThrowawayLLM(BaseLLM):
    """Answers with the first two evidence lines of its prompt, each cited by its index."""

    Config = ThrowawayLLMConfig
    name = "throwaway-llm"

    @classmethod
    def from_config(cls, cfg: ThrowawayLLMConfig, ctx: Any, *, cache: Any = None) -> "ThrowawayLLM":
        return cls(cfg.model or "throwaway-v1", cache=cache)

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        prompt = "\\n".join(m["content"] for m in messages)
        PROMPTS.append(prompt)
        lines = re.findall(r"^\\[(\\d+)\\] \\(\\d+\\) (.+?)\\.?$", prompt, re.MULTILINE)[:2]
        text = " ".join(f"{line} [{i}]." for i, line in lines) or "Nothing to say."
        return Completion(text=text, model=self.model)
'''


def _module(folder: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.fixture
def unregister() -> Iterator[list[tuple[str, str]]]:
    """Backends the test registers, removed again after it (the registry has no public unregister)."""
    added: list[tuple[str, str]] = []
    yield added
    for stage, name in added:
        registry._BACKENDS[stage].pop(name, None)


def _store(path: Path) -> Path:
    articles = [Article("101", "Statins lower LDL cholesterol", "Statins lower LDL cholesterol in adults."),
                Article("102", "Statin muscle symptoms", "Statin therapy can cause muscle pain."),
                Article("103", "Statins and diabetes", "Statins slightly raise the risk of diabetes."),
                Article("104", "Exercise and blood pressure", "Exercise lowers blood pressure.")]
    store = DocumentStore.create(path)
    with store.transaction() as tx:
        tx.upsert(articles, FileStats("tiny"))
    store.close()
    return path


def test_a_reranker_in_one_file_and_one_line_reranks_a_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              unregister: list[tuple[str, str]]) -> None:
    _module(tmp_path, "throwaway_rerank", RERANKER, monkeypatch)
    registry.register("rerank", "throwaway", "throwaway_rerank:ThrowawayReranker")  # the one line
    unregister.append(("rerank", "throwaway"))

    settings = load_settings("bm25", ["rerank.backend=throwaway", "rerank.bonus=100"])
    store = DocumentStore.open(_store(tmp_path / "store"))
    pipe = RetrievalPipeline.from_settings(settings, store=store)
    try:
        out = pipe.retrieve(Topic("t1", "statins LDL cholesterol muscle diabetes"))
    finally:
        pipe.close()
        store.close()
    module = sys.modules["throwaway_rerank"]
    assert module.CALLS, "the throwaway reranker was never called"
    first = [h.pmid for h in out.rankings["retrieval"]]
    assert len(first) >= 3
    assert [h.pmid for h in out.final] == first[::-1][: len(out.final)]
    assert all(h.score > 100 for h in out.final)  # its own option reached it through --set


def test_an_llm_backend_in_one_file_and_one_line_answers_a_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 unregister: list[tuple[str, str]]) -> None:
    _module(tmp_path, "throwaway_llm", LLM, monkeypatch)
    registry.register("llm", "throwaway-llm", "throwaway_llm:ThrowawayLLM")  # the one line
    unregister.append(("llm", "throwaway-llm"))

    # clac25-a: BM25, a cross-encoder (switched off here: no model in the test), an LLM writes the cited answer
    settings = load_settings("clac25-a", ["rerank.backend=none", "llm.backend=throwaway-llm", "llm.cache=false"])
    assert settings.generate.backend == "llm"
    with Pipeline(settings, _store(tmp_path / "store")) as pipe:
        result = pipe.answer(Topic("t1", "Do statins lower LDL cholesterol?"))
    module = sys.modules["throwaway_llm"]
    assert module.PROMPTS, "the throwaway LLM was never called"
    sentences = result.answer.sentences
    assert sentences, "the answer is empty"
    assert "Statins lower LDL cholesterol" in sentences[0].text
    assert sentences[0].pmids == ("101",)
    assert result.answer.generator  # the LLM generator wrote it (no extractive fallback)
    assert not any(d.what == "answer" for d in result.answer.dropped), result.answer.dropped
