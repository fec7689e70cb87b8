"""Issue 43: the twelve runs whose defaults were not the paper's. Phase B passages carry every snippet (DS@GT 004
Fig. 4 "Passage: {All snippets}"; PJs-team 002 §2.3 trims only to the model's context), no paper run asks again
after an unreadable reply, BM25 scores with Pyserini's parameters where the paper used Pyserini, DS@GT's query is
embedded as its abstracts were, and each quote means its own run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings, preset_names
from medcite.pipeline.context import Context
from medcite.presets import provenance
from medcite.qa.llm_qa import LLMQA
from medcite.types import Question, Snippet

DSGT = [n for n in preset_names() if n.startswith("dsgt-b")]
PJS = [n for n in preset_names() if n.startswith("pjs-") and provenance.paper(n) is not None]


@pytest.mark.parametrize("name", DSGT)
def test_dsgt_passages_hold_all_snippets_and_no_repair(name: str) -> None:
    qa = load_settings(name).qa
    shown = (qa.passage_snippets, qa.example_snippets, qa.dedupe_snippets, qa.context_tokens)
    assert shown == (None, None, False, None)
    assert qa.repair is False and qa.json_instruction is True
    found = provenance.sources(name)
    assert found["qa.passage_snippets"].quote == "Passage: {All snippets}"
    assert not found["qa.json_instruction"].from_paper and "Ateia & Kruschwitz" in found["qa.json_instruction"].choice


@pytest.mark.parametrize("name", PJS)
def test_pjs_passages_are_trimmed_only_to_the_models_context(name: str) -> None:
    qa = load_settings(name).qa
    assert (qa.passage_snippets, qa.dedupe_snippets, qa.repair) == (None, False, False)
    assert qa.context_tokens == (32768 if name == "pjs-qwen-lora" else 200000)
    assert "to fit within its maximum token limit" in provenance.sources(name)["qa.context_tokens"].choice


def test_a_dsgt_question_with_thirty_snippets_shows_all_thirty(tmp_path: Path) -> None:
    qa_cfg = load_settings("dsgt-b-gpt4-style1").qa.model_copy(update={"shots": 0})
    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    settings = load_settings("offline", ["llm=" + json.dumps({"backend": "replies", "replies": [reply]})])
    snippets = tuple(Snippet(str(i), f"Snippet {i} of the passage.", "abstract", 0, "abstract", 26) for i in range(30))
    with Context(settings) as ctx:
        qa = LLMQA.from_config(qa_cfg, ctx)
        got = qa.answer(Question("q", "factoid", "Which gene?"), (*snippets, snippets[0]))
        prompt = ctx.llm().prompts[0][-1]["content"]  # type: ignore[attr-defined]
    assert prompt.count("Snippet ") == 31 and len(got.sources) == 31  # the repeated snippet too, as given
    assert prompt.startswith("Passage: Snippet 0 of the passage.\n")


@pytest.mark.parametrize("name", ["clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e"])
def test_clac25_scores_bm25_as_pyserini_does(name: str) -> None:
    bm25 = load_settings(name).indexes["bm25"]
    assert (bm25.backend, bm25.k1, bm25.b, bm25.method, bm25.stemmer, bm25.stopwords) == (  # type: ignore[attr-defined]
        "bm25s", 0.9, 0.4, "lucene", "porter", "lucene")
    assert provenance.sources(name)["indexes.bm25"].quote == "Retrieval uses Pyserini over Lucene with Java 21"


@pytest.mark.parametrize("name", ["clac24-llm", "clac24-simpleqa", "clac24-medhopqa-bm25", "dal25-rrf"])
def test_papers_that_name_no_toolkit_keep_lucenes_defaults_as_a_choice(name: str) -> None:
    bm25 = load_settings(name).indexes["bm25"]
    assert (bm25.k1, bm25.b) == (1.2, 0.75)  # type: ignore[attr-defined]
    source = provenance.sources(name)["indexes.bm25.k1"]
    assert not source.from_paper and "BM25Similarity" in source.choice


def test_clac24_task_a_decomposes_once() -> None:
    q = load_settings("clac24-llm").ground.contradict_queries[1]
    assert q.format_reminder is False  # type: ignore[attr-defined]
    assert "safety net" in provenance.sources("clac24-llm-nli")["ground.contradict_queries.1.format_reminder"].choice


def test_dsgt_queries_are_embedded_as_the_abstracts() -> None:
    s = load_settings("dsgt-b3")
    assert s.indexes["dense"].encoder.query_prefix == "" and s.bioasq.encoder.query_prefix == ""  # type: ignore
    assert provenance.sources("dsgt-b3")["indexes.dense.encoder.query_prefix"].quote == (
        "given a user query, the query was similarly embedded")


def test_quotes_mean_their_own_run() -> None:
    for name in ("clac25-b", "clac25-e"):  # each subquery's candidates reranked (§7.1), not Run A's one list (§6.1)
        assert provenance.sources(name)["rerank.backend"].where == "§7.1"
    for name in ("dsgt-b1", "dsgt-b2", "dsgt-b5"):  # no LLM reranker: the LLM answers (§3.3)
        source = provenance.sources(name)["llm.model"]
        assert source.where == "§3.3" and "re-ranking" not in source.quote
    for name in ("dsgt-b3", "dsgt-b4"):  # GPT-4o reranks
        assert "gpt-4o prompting" in provenance.sources(name)["llm.model"].quote
    for name in ("dal25-rmmln", "dal25-afmmd"):  # the run's own constraint check, not the task definition
        assert provenance.sources(name)["generate.mode"].where == "§III-B2a"


def test_dalhousie_takes_monot5s_best_snippets() -> None:
    assert load_settings("dal25-rrf").evidence.lam == 1.0  # type: ignore[attr-defined]
    assert load_settings("medcite-agentic").evidence.lam == 0.75  # type: ignore[attr-defined]
