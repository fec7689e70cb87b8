"""CLaC 2025 summary bullets: LLM summaries split into <= 28-word bullets, capped per document, TF-IDF + MMR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.evidence.summaries import SummarySelector, split_bullets
from medcite.llm.base import BaseLLM, Completion, Message
from medcite.llm.trace import trace_context, trace_to
from medcite.types import Article, Hit, Query


class SummaryLLM(BaseLLM):
    """Answers each summarize prompt with the summary the test scripted for that title."""

    name = "scripted"

    def __init__(self, by_title: dict[str, str]) -> None:
        super().__init__("scripted-model")
        self.by_title = by_title
        self.calls = 0

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.calls += 1
        prompt = messages[-1]["content"]
        title = prompt.split("Title: ", 1)[1].split("\n", 1)[0]
        return Completion(text=self.by_title.get(title, ""), model=self.model)


def test_split_bullets_caps_words_at_clause_breaks() -> None:
    text = ("Statins lowered LDL cholesterol by 30% in 1,200 adults with diabetes over two years of follow-up; "
            "muscle pain was reported by 10% of patients and led to discontinuation in 2% of the treated group. "
            "Short.")
    bullets = split_bullets(text, 28)
    assert bullets == [
        "Statins lowered LDL cholesterol by 30% in 1,200 adults with diabetes over two years of follow-up",
        "muscle pain was reported by 10% of patients and led to discontinuation in 2% of the treated group. "
        "Short.",
    ]
    words = " ".join(f"w{i}" for i in range(60)) + "."
    cut = split_bullets(words, 28)
    assert [len(b.split()) for b in cut] == [28, 28, 4]
    assert all(len(b.split()) <= 28 for b in split_bullets(text, 10))


ARTICLES = {
    "1": Article("1", "Statin trial", "Long abstract one."),
    "2": Article("2", "Exercise trial", "Long abstract two."),
    "3": Article("3", "Empty summary", "Long abstract three."),
}
HITS = [Hit("1", 3.0, 1), Hit("2", 2.0, 2), Hit("3", 1.0, 3)]
QUERIES = [Query("q0", "Do statins lower LDL cholesterol?")]


def test_bullets_selected_by_relevance_with_per_document_cap(tmp_path: Path) -> None:
    llm = SummaryLLM({
        "Statin trial": "Statins lowered LDL cholesterol by 30%. Statins lowered LDL cholesterol in men too. "
                        "Adherence to statins was high.",
        "Exercise trial": "Walking improved mood in older adults.",
        "Empty summary": "",
    })
    sel = SummarySelector(llm, docs=3, max_items=10, bullets_per_doc=2)
    with trace_to(tmp_path / "trace.jsonl"), trace_context(topic_id="t9"):
        ev = sel.select(QUERIES, HITS, ARTICLES)
    assert llm.calls == 3
    assert [e.index for e in ev] == list(range(1, len(ev) + 1))
    assert all(e.kind == "bullet" and e.section is None and e.start is None for e in ev)
    assert [e.pmid for e in ev].count("1") == 2  # third statin bullet cut by the per-document cap
    assert ev[0].text == "Statins lowered LDL cholesterol by 30%."
    assert {e.pmid for e in ev} == {"1", "2"}
    rows = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert {(r["topic_id"], r["stage"]) for r in rows} == {("t9", "summary")}


def test_only_top_docs_are_summarised_and_nothing_usable_falls_back_to_snippets() -> None:
    llm = SummaryLLM({})
    articles = {"1": Article("1", "Statin trial", "Statins lowered LDL cholesterol by 30% in adults.")}
    ev = SummarySelector(llm, docs=1).select(QUERIES, HITS, articles)
    assert llm.calls == 1
    assert ev and all(e.kind == "snippet" and e.pmid == "1" for e in ev)


def test_from_config_needs_an_llm_and_reads_the_settings() -> None:
    from medcite.pipeline import Context

    s = load_settings("offline", ["evidence.backend=summaries", "evidence.docs=4", "evidence.bullets_per_doc=1"])
    with pytest.raises(ConfigError, match="evidence.backend=snippets"):
        Context(s).build("evidence", s.evidence)
    sel = Context(s, llm=SummaryLLM({})).build("evidence", s.evidence)
    assert (sel.docs, sel.bullets_per_doc, sel.bullet_words, sel.lam) == (4, 1, 28, 0.75)
