"""Issue 33: every quote of a preset means what its setting says -- the numbers and model names under a quoted
setting are in the quote, a table row quoted is the run's own (named), and a preset that changes an inherited
setting gives it its own source (medcite.presets.quote_meaning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import preset_names
from medcite.presets import provenance
from medcite.presets.quote_meaning import EXEMPT, findings, model_keys, number_forms, says_model, says_number


@pytest.mark.parametrize("name", [n for n in preset_names() if provenance.sources(n)])
def test_every_quote_means_its_setting(name: str) -> None:
    found = findings(name)
    assert not found, "\n".join(map(str, found))


def test_exemptions_are_few_and_each_says_why() -> None:
    assert len(EXEMPT) <= 3
    texts = {n: provenance.normalise((provenance.papers_dir() / provenance.PAPERS[n][0]).read_text("utf-8"))
             for n in provenance.PAPERS}
    for (path, quote), why in EXEMPT.items():
        assert why.strip() and "." in path
        assert any(provenance.quote_found(quote, t) for t in texts.values()), quote


@pytest.mark.parametrize(("quote", "value", "said"), [
    ("we retrieve top-1k documents", 1000, True),
    ("The top 10,000 articles were retrieved", 10000, True),
    ("the top-5,000 documents are returned", 5000, True),
    ("the top- k candidates ($k=30$) are returned", 30, True),
    ("decomposed into five sub-queries", 5, True),
    ("retrieves twenty documents per query", 20, True),
    ("(with $\\lambda=0.75$)", 0.75, True),
    ("FT Cross Encoder (top10)", 10, True),
    ("maximum 250 words", 25, False),  # 25 is not in 250
    ("top 1k", 1, False),  # nor 1 in 1k
    ("using `Mistral-7b` [16]", 7, False),  # a model size, not a count
    ("using `Mistral-7b` [16]", 16, False),  # a reference
    ("the System 1 citation pipeline", 1, False),  # a name
    ("twenty-five", 20, False),
    ("Appendix A.3", 3, False),
])
def test_numbers_in_the_forms_papers_write_them(quote: str, value: float, said: bool) -> None:
    assert says_number(quote, value) is said


def test_number_forms() -> None:
    assert number_forms(1000) == ["1000", "1,000", "1k"]
    assert number_forms(10) == ["10", "10", "ten"]
    assert number_forms(60.0)[0] == "60" and number_forms(0.75) == ["0.75", ".75"]


@pytest.mark.parametrize(("quote", "model", "said"), [
    ("the best MAP score model ms-marco-MiniLM-L12 finetuned", "cross-encoder/ms-marco-MiniLM-L-12-v2", True),
    ("the best MAP score model ms-marco-MiniLM-L12 finetuned", "cross-encoder/ms-marco-MiniLM-L-6-v2", False),
    ("We selected the bge-large-en model", "BAAI/bge-large-en", True),
    ("LLMs like gpt-4o for the re-ranking task", "gpt-4o", True),
    ("GPT-4o-turbo and Mistral-7B-Instruct-v0.3", "gpt-4o", True),
    ("steps use `deepseek-r1` [7] instead of `llama-3-70b`", "deepseek-ai/DeepSeek-R1", True),
    ("passed to `llama-3-70b` [15]", "meta-llama/Meta-Llama-3-70B-Instruct", True),
    ("passed to `llama-3-70b` [15]", "meta-llama/Meta-Llama-3-8B-Instruct", False),
    ("'Claude Sonnet 3' (via Amazon Bedrock)", "anthropic.claude-3-sonnet-20240229-v1:0", True),
    ("'Claude Sonnet 3.7'", "anthropic.claude-3-sonnet-20240229-v1:0", False),
    ("'Claude Sonnet 3.7'", "anthropic.claude-3-7-sonnet-20250219-v1:0", True),
    ("'Claude Sonnet 3' (via Amazon Bedrock)", "anthropic.claude-3-7-sonnet-20250219-v1:0", False),
    ("passed to the Qwen3-8B-AWQ [12] model", "Qwen/Qwen3-8B-AWQ", True),
    ("a BioBERT-based SentenceTransformer (BioBERT-STSb)", "pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb",
     True),
    ("the Mistral 7B model [5]", "mistralai/Mistral-7B-Instruct-v0.2", True),
    ("a dense ColBERT reranker", "BAAI/bge-large-en", False),
])
def test_model_names_by_a_recognisable_part(quote: str, model: str, said: bool) -> None:
    assert says_model(quote, model) is said, model_keys(model)


def _preset(tmp_path: Path, data: dict[str, object]) -> str:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_number_or_model_under_a_quote_that_does_not_give_it_is_found(tmp_path: Path) -> None:
    rocchio = "A Rocchio expansion step [12] is applied"
    name = _preset(tmp_path, {
        "paper": {"file": "001", "run": "x"},
        "retrieve": {"k": 1000, "branches": [{"backend": "bm25+rocchio", "k": 5000}]},
        "sources": {"retrieve.k": {"paper": "001", "where": "§III-B2a", "quote": "the top-10 abstracts are selected"},
                    "retrieve.branches.0": {"paper": "001", "where": "§III-B2a", "quote": rocchio},
                    "retrieve.branches.0.k": {"choice": "x"}}})
    leaves = {(f.path, f.leaf) for f in findings(name)}
    assert ("retrieve.k", "retrieve.k") in leaves  # 1000 is not "top-10"
    # the Rocchio parameters (defaults, under the branch's quote) are each found; k has its own source
    for leaf in ("fb_docs", "fb_terms", "beta", "original_weight"):
        assert ("retrieve.branches.0", f"retrieve.branches.0.{leaf}") in leaves
    assert ("retrieve.branches.0", "retrieve.branches.0.k") not in leaves
    assert ("retrieve.branches.0", "retrieve.branches.0.weight") not in leaves  # a weight of 1 claims nothing


def test_another_runs_table_row_and_an_unnamed_row_are_found(tmp_path: Path) -> None:
    row = "Retrieve 1k, FT Cross Encoder (top10)"  # DS@GTBioASQT13b1's row of 004 Table 3
    source = {"paper": "004", "where": "Table 3", "quote": row}
    b2 = _preset(tmp_path, {"extends": "dsgt-b1", "paper": {"file": "004", "run": "DS@GTBioASQT13b2"},
                            "sources": {"rerank.k": source}})
    (found,) = [f for f in findings(b2) if f.path == "rerank.k"]
    assert "DS@GTBioASQT13b1" in found.problem and "own row" in found.problem
    b1 = _preset(tmp_path, {"extends": "dsgt-b1", "paper": {"file": "004", "run": "DS@GTBioASQT13b1"},
                            "sources": {"rerank.k": source}})
    assert [f.path for f in findings(b1)] == ["rerank.k"]  # its own row, but the quote does not name the run
    named = {**source, "quote": "DS@GTBioASQT13b1 " + row}
    b1 = _preset(tmp_path, {"extends": "dsgt-b1", "paper": {"file": "004", "run": "DS@GTBioASQT13b1"},
                            "sources": {"rerank.k": named}})
    assert findings(b1) == []


def test_a_changed_value_under_an_inherited_source_is_found(tmp_path: Path) -> None:
    child = _preset(tmp_path, {"extends": "dal25-expd", "paper": {"file": "001", "run": "empd"},
                               "retrieve": {"queries": [{"backend": "llm_stance_queries", "persona": "emotionprompt",
                                                         "llm": "deepseek", "prompt": "stance_rewrites",
                                                         "sides": ["support"]}]}})
    paths = {f.path for f in findings(child)}
    # the expert persona's quote over the EmotionPrompt persona, and the query set's that holds it
    assert {"retrieve.queries.0.persona", "retrieve.queries"} <= paths
    assert "retrieve.queries.0.prompt" not in paths  # inherited and unchanged
