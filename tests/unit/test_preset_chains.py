"""Each preset named after a published run asserts its chain stage by stage (issue 15): stages, budgets,
models named and prompt fields, not only that it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings, preset_description
from medcite.llm.prompts import placeholders

QWEN = "Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4"


def _queries(name: str) -> list[str]:
    return [q.backend for q in load_settings(name).retrieve.queries]


@pytest.mark.parametrize("name", ["clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e"])
def test_clac25_common(name: str) -> None:
    s = load_settings(name)
    assert s.llm.model == QWEN
    # the paper's own prompt (000 Appendix A.3), issue 25
    assert s.generate.backend == "llm" and s.generate.mode == "cited" and s.generate.prompt == "clac25_generate"
    assert {"topic", "narrative", "question", "reformulations", "min_sentences", "max_sentences"} <= placeholders(
        "clac25_generate")
    assert [b.backend for b in s.retrieve.branches] == ["bm25"]  # every run starts from BM25
    assert f"run {name[-1].upper()}" in preset_description(name) and "CLaC 2025" in preset_description(name)


@pytest.mark.parametrize(("name", "k", "ce_keep", "docs", "items"), [("clac25-b", 25, 10, 40, 10),
                                                                    ("clac25-e", 200, 30, 120, 30)])
def test_clac25_sparse_runs_summarise_the_whole_pooled_union(name: str, k: int, ce_keep: int, docs: int,
                                                             items: int) -> None:
    s = load_settings(name)
    assert _queries(name) == ["original", "llm_reformulate"] and s.retrieve.k == k
    assert s.retrieve.rerank_per_query and s.retrieve.keep is None
    assert s.rerank.backend == "cross-encoder" and s.rerank.model == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert s.rerank.k == ce_keep
    e = s.evidence
    assert e.backend == "summaries" and e.docs == 4 * ce_keep == docs and e.max_items == items
    assert (e.bullet_words, e.lam, e.prior_weight) == (28, 0.75, 0.0)


@pytest.mark.parametrize(("name", "k", "pool"), [("clac25-c", 25, 40), ("clac25-d", 200, 120)])
def test_clac25_dense_runs_rescore_the_bm25_pool_with_medcpt(name: str, k: int, pool: int) -> None:
    # issue 25 (000 §8.1): each branch is cross-encoder reranked and cut to m before pooling, so MedCPT reads 4 x m
    s = load_settings(name)
    assert _queries(name) == ["original", "llm_reformulate"] and s.retrieve.k == k and s.retrieve.fusion == "pool"
    assert not s.retrieve.rerank_per_query  # MedCPT reads the whole query set (+ topic, narrative) at once
    r = s.rerank
    assert r.backend == "medcpt" and (r.top_n, r.bi_top, r.cross_top, r.k) == (pool, 80, 24, 16)
    assert r.model_names() == ["ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder", "ncbi/MedCPT-Cross-Encoder"]
    assert s.evidence.backend == "abstracts" and s.evidence.docs == s.evidence.max_items == s.retrieve.keep == 16


def test_clac25_a_is_the_baseline() -> None:
    s = load_settings("clac25-a")
    assert _queries("clac25-a") == ["original"] and s.retrieve.k == 25
    assert s.rerank.backend == "cross-encoder" and s.rerank.k == 10
    assert s.evidence.backend == "abstracts" and s.evidence.docs == 10


def test_dal25_rrf_chain() -> None:
    s = load_settings("dal25-rrf")
    queries = s.retrieve.queries
    assert [q.backend for q in queries] == ["original", "llm_keywords", "llm_decompose"]
    # Dal@TREC25 §III-B2a: llama-3-70b writes System 1's keyword query and sub-queries (the default llm)
    assert queries[1].llm is queries[2].llm is None and queries[2].max_queries == 5
    bm25, dense = s.retrieve.branches
    assert (bm25.backend, bm25.k, bm25.queries) == ("bm25+rocchio", 5000, ["keyword_rewrite", "keywords"])
    assert (dense.backend, dense.k, dense.queries) == ("dense", 1000, ["decomposition", "keywords"])
    assert s.indexes["dense"].model_names() == ["pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb"]
    assert (s.retrieve.fusion, s.retrieve.rrf_k, s.retrieve.keep) == ("rrf", 60, 10)
    assert s.rerank.backend == "monot5" and s.rerank.model == "castorini/monot5-base-msmarco"
    assert (s.rerank.top_n, s.rerank.k) == (1000, 10)
    assert (s.evidence.backend, s.evidence.docs, s.evidence.max_items) == ("snippets", 10, 30)
    assert s.generate.prompt == "generate_topic" and s.generate.dedupe == 0.9 and s.generate.llm is None
    assert s.llm.model == "meta-llama/Meta-Llama-3-70B-Instruct"
    assert s.llms["deepseek"].model == "deepseek-ai/DeepSeek-R1" and "mistral" in s.llms["mistral"].model.lower()
    assert s.verify.citations == "off" and s.verify.gate == "off"


# Dal@TREC25 §III-B2b: the 'l'/'d' of a run name is the LLM of query reformulation; Llama-3-70B always answers
@pytest.mark.parametrize(("name", "query_llm", "validated"), [
    ("dal25-rfr_monot5-msmarco_llama70b", None, True), ("dal25-rfr_monot5-msmarco_deepseek-r1", "deepseek", True),
    ("dal25-rmmln", None, False), ("dal25-rmmdn", "deepseek", False),
    ("dal25-afmmd", "deepseek", True), ("dal25-afmmdn", "deepseek", False)])
def test_dal25_named_runs(name: str, query_llm: str | None, validated: bool) -> None:
    s = load_settings(name)
    assert name.removeprefix("dal25-") in preset_description(name)
    assert s.rerank.backend == "monot5" and s.generate.llm is None
    assert [q.llm for q in s.retrieve.queries[1:]] == [query_llm, query_llm]
    assert (s.verify.citations == "regenerate") is validated
    if validated:
        assert s.verify.max_rounds == 20 and s.stance.backend == "llm" and s.stance.llm == "mistral"
    assert (s.verify.sufficiency_rounds == 5) is name.startswith("dal25-af")


@pytest.mark.parametrize("name", ["dal25-expd", "dal25-empd"])
def test_dal25_answer_first_runs(name: str) -> None:
    s = load_settings(name)
    assert s.flow == "generate-then-ground" and s.verify.llm == "deepseek" and s.stance.llm == "mistral"
    assert all(b.queries is None for b in s.retrieve.branches)
    assert [b.backend for b in s.retrieve.branches] == ["dense"] and s.ground.max_contradicted == 0


@pytest.mark.parametrize(("name", "branches"), [("clac24-simpleqa", ["bm25"]),
                                                ("clac24-simpleqa-hybrid", ["bm25", "dense"])])
def test_clac24_simpleqa_systems_3_and_4(name: str, branches: list[str]) -> None:
    s = load_settings(name)
    q = s.retrieve.queries
    assert [x.backend for x in q] == ["original", "llm_decompose", "topic_narrative"]
    assert q[2].verbatim  # type: ignore[attr-defined]  # the topic and the narrative as queries, word for word
    assert [b.backend for b in s.retrieve.branches] == branches and s.retrieve.k == 20
    assert s.retrieve.fusion == "rrf" and s.retrieve.rerank_query == "question+narrative+topic"
    r = s.rerank
    assert (r.backend, r.model, r.k) == ("colbert", "colbert-ir/colbertv2.0", 25)  # type: ignore[attr-defined]
    assert s.evidence.backend == "abstracts" and s.evidence.docs == 25  # type: ignore[attr-defined]
    g = s.generate
    assert (g.backend, g.mode, g.condense) == ("llm", "posthoc", True)  # type: ignore[attr-defined]
    judge = g.posthoc_judge  # type: ignore[attr-defined]
    assert (judge.backend, judge.llm) == ("llm", "mistral")
    # issue 25: the paper names "Qwen3-8B-AWQ" (003 §3.2)
    assert s.llm.model == "Qwen/Qwen3-8B-AWQ" and "Mistral" in s.llms["mistral"].model  # type: ignore[attr-defined]
    assert {"topic", "narrative", "question", "evidence"} <= placeholders("generate_plain")
    d = preset_description(name)
    assert "CLaC 2024" in d and ("System 3" if name == "clac24-simpleqa" else "System 4") in d and "Offline" in d


def test_simpleqa_query_set_and_rerank_query() -> None:
    from medcite.pipeline.retrieval import rerank_query
    from medcite.retrieve.queries import TopicNarrative
    from medcite.types import Topic

    t = Topic("1", "Do statins help?", narrative="Adult patients with high LDL.", topic="statins")
    assert [q.text for q in TopicNarrative(verbatim=True).generate(t)] == ["statins", "Adult patients with high LDL."]
    assert rerank_query(t, "question+narrative+topic") == "Do statins help? Adult patients with high LDL. statins"
    assert rerank_query(t, "question") == "Do statins help?"
    assert TopicNarrative(verbatim=True).generate(Topic("2", "q")) == []


@pytest.mark.parametrize(("name", "branches", "system"), [("clac24-medhopqa-bm25", ["bm25"], "System 5"),
                                                          ("clac24-medhopqa-hybrid", ["bm25", "dense"], "System 6")])
def test_clac24_medhopqa_systems_5_and_6(name: str, branches: list[str], system: str) -> None:
    s = load_settings(name)
    assert s.flow == "multi-hop"
    h = s.hops
    assert h.classify == "llm" and (h.max_hops, h.max_subquestions, h.hop_docs, h.docs) == (3, 2, 5, 60)
    assert h.search_question and h.short_answer and h.llm is None  # the generator's model writes the hops too
    assert [q.backend for q in s.retrieve.queries] == ["original"]  # each sub-question is searched as it is
    assert [b.backend for b in s.retrieve.branches] == branches
    # issue 25: System 6 takes 30 documents from each retriever (003 §4.2)
    k = 30 if "dense" in branches else 60
    assert (s.retrieve.k, s.retrieve.keep, s.retrieve.fusion, s.retrieve.rrf_k) == (k, 60, "rrf", 60)
    if "dense" in branches:
        assert s.indexes["dense"].encoder.model == "minilm"  # type: ignore[attr-defined]
    assert s.rerank.backend == "none"
    e = s.evidence
    assert (e.backend, e.docs, e.max_items) == ("abstracts", 60, 60)
    g = s.generate
    assert (g.backend, g.mode, g.condense, g.max_words) == ("llm", "posthoc", True, 250)  # type: ignore[attr-defined]
    judge = g.posthoc_judge  # type: ignore[attr-defined]
    assert (judge.backend, judge.llm, judge.prompt) == ("llm", "mistral", "stance")  # System 1's support prompt
    # issue 25: System 1 judges its top 10 documents (003 §2.2)
    assert g.posthoc_candidates == 10 == load_settings("clac24-llm").ground.candidates  # type: ignore[attr-defined]
    assert s.llm.model == "Qwen/Qwen3-8B-AWQ" and s.llms["mistral"].model == "mistralai/Mistral-7B-Instruct-v0.2"
    assert s.verify.citations == "off" and s.verify.sufficiency_rounds == 0
    assert placeholders("hop_classify") == {"question"} and placeholders("hop_first") == {"question"}
    assert placeholders("hop_next") == {"question", "asked", "evidence", "max_subquestions"}
    assert placeholders("hop_short_answer") == {"question", "evidence"}
    # issue 25: MedHopQA "uses only the question" (003 §6)
    assert g.plain_prompt == "generate_plain_question"  # type: ignore[attr-defined]
    assert placeholders("generate_plain_question") == {"question", "evidence", "max_words"}
    d = preset_description(name)
    assert "CLaC 2024" in d and system in d and "MedHopQA" in d and "Offline" in d and "Choice" in d


@pytest.mark.parametrize("name", ["clac24-medhopqa-bm25", "clac24-medhopqa-hybrid"])
def test_config_show_prints_the_medhopqa_chain(name: str) -> None:
    import json

    from click.testing import CliRunner

    from medcite.cli.main import cli

    shown = CliRunner().invoke(cli, ["config", "show", "--preset", name])
    assert shown.exit_code == 0, shown.output
    s = json.loads(shown.output)["settings"]
    assert s["flow"] == "multi-hop" and s["hops"]["docs"] == 60 and s["hops"]["classify"] == "llm"
    assert [b["backend"] for b in s["retrieve"]["branches"]] == (["bm25"] if name.endswith("bm25") else
                                                                  ["bm25", "dense"])
    assert s["generate"]["posthoc_judge"]["llm"] == "mistral" and s["llms"]["mistral"]["model"].startswith("mistralai/")


# DS@GT's Phase B systems (004 §3.3, Tables 4-7): each submitted system a preset, answers from the snippets after
# 1 or 10 training questions drawn from the training set, in its prompt style
DSGT_B = [("dsgt-b-gpt4-style1", "gpt-4o", 1, 1), ("dsgt-b-gpt4-style2", "gpt-4o", 2, 1),
          ("dsgt-b-gpt4-style3", "gpt-4o", 3, 1),
          ("dsgt-b-mistral-style1", "mistralai/Mistral-7B-Instruct-v0.3", 1, 10),
          ("dsgt-b-mistral-style3", "mistralai/Mistral-7B-Instruct-v0.3", 3, 10)]


@pytest.mark.parametrize(("name", "model", "style", "shots"), DSGT_B)
def test_dsgt_phase_b_systems(name: str, model: str, style: int, shots: int) -> None:
    from medcite.presets import provenance

    s = load_settings(name)
    assert (s.llm.backend, s.llm.model) == ("openai", model)
    qa = s.qa
    assert (qa.backend, qa.prompt, qa.style, qa.shots, qa.draw) == ("llm", "dsgt", style, shots, "random")
    assert qa.llm_names() == {None} and qa.model_names() == []  # a random draw loads no encoder
    assert placeholders("bioasq_answer") == {"passage", "question", "hint", "rules", "json"}
    run = provenance.paper(name)
    assert run is not None and run["file"] == "004" and run["run"].split()[0] in {
        "GPT4turbo", "GPTPrompt1sStyle2", "GPTPrompt1sStyle3", "Mistral7BIns10shots"}
    assert f"Style{style}" in provenance.sources(name)["qa.style"].quote  # the system's own Table 6 row
    # Phase A+ retrieves as dsgt-b1 (medcite's choice), with DS@GT's fine-tuned cross-encoder
    assert s.retrieve == load_settings("dsgt-b1").retrieve and s.rerank.model == "models:dsgt-minilm-l12-ce-bioasq"
    d = preset_description(name)
    assert "DS@GT" in d and run["run"] in d and "Offline" in d


@pytest.mark.parametrize(("name", "model", "style", "shots"), DSGT_B)
def test_dsgt_phase_b_systems_prompt_as_their_style_says(name: str, model: str, style: int, shots: int,
                                                         tmp_path: Path) -> None:
    """Built through the context with a scripted LLM: the calls, the example turns and the formatting template."""
    import json

    from medcite.pipeline import Context
    from medcite.types import Question, Snippet

    training = tmp_path / "train.json"
    training.write_text(json.dumps({"questions": [
        {"id": f"ex{i}", "type": "list", "body": f"List genes of family {i}.", "ideal_answer": [f"Family {i}."],
         "exact_answer": [["A"], ["B"], ["C"]], "documents": [],
         "snippets": [{"document": "9", "text": f"Family {i} holds A, B and C."}]} for i in range(12)]}))
    replies = ['{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'] * 2
    s = load_settings(name, [f"qa.examples={training}",
                             "llm=" + json.dumps({"backend": "replies", "replies": replies})])
    with Context(s) as ctx:
        qa = ctx.build("qa", s.qa)
        got = qa.answer(Question("q", "list", "List genes mutated in ovarian cancer."), [Snippet("1", "BRCA1.")])
        prompts = ctx.llm().prompts  # type: ignore[attr-defined]  # the scripted "replies" LLM keeps them
    assert len(got.examples) == shots and len(set(got.examples)) == shots
    assert len(prompts) == (1 if style == 1 else 2)  # style 1: exact and ideal together; 2 and 3: exact, then ideal
    first = prompts[0]
    assert [m["role"] for m in first] == ["system"] + ["user", "assistant"] * shots + ["user"]
    example_reply = json.loads(first[2]["content"])["exact_answer"]
    assert example_reply == (["A"] if style == 1 else ["A", "B", "C"])  # query template 1 shows one list item
    strict = "Note that all phrases, even not complete, are related to the question." in first[-1]["content"]
    assert strict is (style == 3)
    if style != 1:
        assert "(Hint: short answer is BRCA1)" in prompts[1][-1]["content"]
