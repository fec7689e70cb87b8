"""Issue 25: the CLaC presets as their papers state them -- CLaC 2025 (paper 000, runs A-E) and CLaC 2024 (paper
003, Systems 1-6): budgets, models, prompts and post-processing, read with ``load_settings`` and, where cheap,
built (the per-branch rerank before pooling, MedCPT's cosine, title + abstract evidence, the verbatim prompts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from medcite.config import load_settings, preset_description, preset_task
from medcite.llm.prompts import load_prompt, placeholders, render
from medcite.presets import provenance
from medcite.types import Article, Hit, Query, Topic

CLAC25 = ["clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e"]
CLAC24_B = ["clac24-simpleqa", "clac24-simpleqa-hybrid", "clac24-medhopqa-bm25", "clac24-medhopqa-hybrid"]
CE = "cross-encoder/ms-marco-MiniLM-L-6-v2"


def _paper(file: str) -> str:
    return provenance.normalise((provenance.papers_dir() / provenance.PAPERS[file][0]).read_text(encoding="utf-8"))


# -- CLaC 2025 (000) ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CLAC25)
def test_clac25_every_run_posts_processes_as_section_6_2(name: str) -> None:
    s = load_settings(name)
    g = s.generate
    assert (g.backend, g.mode, g.prompt) == ("llm", "cited", "clac25_generate")  # type: ignore[attr-defined]
    assert (g.max_attempts, g.fallback_when, g.max_words, g.max_citations) == (1, "empty", 250, 3)  # type: ignore
    assert s.verify.gate == "off" and s.verify.citations == "off"
    assert s.llm.model == "Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4"
    assert provenance.paper(name) == {"file": "000", "run": name[-1].upper()}
    d = preset_description(name)
    assert d.startswith(f"CLaC 2025 BioGen Task B run {name[-1].upper()}") and "Offline" in d


@pytest.mark.parametrize("name", CLAC25[1:])
def test_clac25_reformulations_use_the_question_only_and_the_papers_prompt(name: str) -> None:
    q = load_settings(name).retrieve.queries
    assert [x.backend for x in q] == ["original", "llm_reformulate"]
    assert q[1].prompt == "clac25_reformulate" and not q[1].use_narrative and q[1].n == 3  # type: ignore[attr-defined]


def test_clac25_a_baseline() -> None:
    s = load_settings("clac25-a")
    assert [q.backend for q in s.retrieve.queries] == ["original"] and s.retrieve.k == 25
    assert (s.rerank.backend, s.rerank.model, s.rerank.top_n, s.rerank.k) == ("cross-encoder", CE, 25, 10)  # type: ignore
    assert (s.evidence.backend, s.evidence.docs, s.evidence.title) == ("abstracts", 10, True)  # type: ignore


@pytest.mark.parametrize(("name", "k", "m", "bullets"), [("clac25-b", 25, 10, 10), ("clac25-e", 200, 30, 30)])
def test_clac25_sparse_runs(name: str, k: int, m: int, bullets: int) -> None:
    s = load_settings(name)
    assert s.retrieve.k == k and s.retrieve.rerank_per_query and s.retrieve.keep is None
    assert (s.rerank.backend, s.rerank.model, s.rerank.top_n, s.rerank.k) == ("cross-encoder", CE, k, m)  # type: ignore
    e = s.evidence
    assert (e.backend, e.prompt, e.docs, e.max_items) == ("summaries", "clac25_summarize", 4 * m, bullets)  # type: ignore
    assert (e.bullet_words, e.summary_words, e.lam, e.prior_weight) == (28, 80, 0.75, 0.0)  # type: ignore


@pytest.mark.parametrize(("name", "k", "m"), [("clac25-c", 25, 10), ("clac25-d", 200, 30)])
def test_clac25_dense_runs_prune_each_branch_then_medcpt_by_cosine(name: str, k: int, m: int) -> None:
    s = load_settings(name)
    b = s.retrieve.branch_rerank
    assert b is not None and (b.backend, b.model, b.top_n, b.k) == ("cross-encoder", CE, k, m)  # type: ignore
    assert s.retrieve.k == k and not s.retrieve.rerank_per_query and s.retrieve.keep == 16
    r = s.rerank
    assert (r.backend, r.similarity, r.top_n, r.bi_top, r.cross_top, r.k) == (  # type: ignore[attr-defined]
        "medcpt", "cosine", 4 * m, 80, 24, 16)
    assert r.model_names() == ["ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder", "ncbi/MedCPT-Cross-Encoder"]
    e = s.evidence
    assert (e.backend, e.docs, e.max_items, e.title) == ("abstracts", 16, 16, True)  # type: ignore[attr-defined]


def test_clac25_dense_offline_swap_keeps_the_per_branch_keep() -> None:
    from medcite.presets.offline import offline_settings

    swapped = offline_settings(load_settings("clac25-d"))
    b = swapped.retrieve.branch_rerank
    assert b is not None and (b.backend, b.model.model, b.top_n, b.k) == ("embedding", "minilm", 200, 30)  # type: ignore
    assert swapped.rerank.encoder is not None and swapped.rerank.top_n == 120  # type: ignore[attr-defined]


@pytest.mark.parametrize(("prompt", "listing"), [
    ("clac25_reformulate", "Do not include any other text. The response must start with '1.'"),
    ("clac25_reformulate", "rewrite the question in three different ways, each a complete, grammatically correct"),
    ("clac25_summarize", "Avoid speculation; do NOT add new facts."),
    ("clac25_generate", "Every sentence MUST end with square-bracket citations using ONLY evidence indices"),
    ("clac25_generate", "Prefer specific quantitative claims"),
    ("clac25_generate", "EVIDENCE (compact claims; cite by index):"),
])
def test_clac25_prompts_are_the_papers_appendix_a(prompt: str, listing: str) -> None:
    text = provenance.normalise(" ".join(m["content"] for m in load_prompt(prompt)))
    assert provenance.normalise(listing) in text and provenance.normalise(listing) in _paper("000")


def test_clac25_generate_prompt_renders_the_caps() -> None:
    assert placeholders("clac25_generate") == {"min_sentences", "max_sentences", "max_words", "max_citations", "topic",
                                               "narrative", "question", "reformulations", "evidence"}
    text = render("clac25_generate", min_sentences=2, max_sentences=8, max_words=250, max_citations=3, topic="t",
                  narrative="n", question="q?", reformulations="(none)", evidence="[1] (1) x")[0]["content"]
    assert "paragraph of 2-8 sentences (target 250 words; hard cap 250)" in text and "AT MOST 3 citations" in text
    assert placeholders("clac25_reformulate") == {"question"}
    assert placeholders("clac25_summarize") == {"question", "pmid", "title", "abstract"}


class _Run:
    """A retriever whose ranking for each query text is given."""

    name = "bm25"

    def __init__(self, runs: Mapping[str, list[str]]) -> None:
        self.runs = runs

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [[Hit(p, 1.0 / r, r) for r, p in enumerate(self.runs[q][:k], 1)] for q in queries]


class _Length:
    """Scores an article by the length of its abstract (the longer, the better)."""

    name = "length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        self.calls.append((query, len(hits), k))
        best = sorted(hits, key=lambda h: -len(articles[h.pmid].abstract))[:k]
        return [Hit(h.pmid, float(len(articles[h.pmid].abstract)), r) for r, h in enumerate(best, 1)]


class _Store:
    def __init__(self, articles: Mapping[str, Article]) -> None:
        self.articles = articles

    def get_many(self, pmids: Sequence[str]) -> dict[str, Article]:
        return {p: self.articles[p] for p in pmids if p in self.articles}

    def retracted(self, pmids: object) -> set[str]:
        return set()


def test_branch_rerank_cuts_each_subquery_to_m_before_pooling() -> None:
    from medcite.pipeline.retrieval import RetrievalPipeline
    from medcite.retrieve.base import QuerySet

    class Two:
        name = "two"

        def generate(self, topic: Topic) -> list[Query]:
            return [Query("x", topic.question, "original"), Query("y", "other", "reformulation")]

    arts = {str(i): Article(str(i), f"t{i}", "w " * i) for i in range(1, 9)}
    runs = {"q?": ["1", "2", "3", "8"], "other": ["4", "5", "6", "7"]}
    s = load_settings("clac25-c", ["retrieve.branch_rerank.k=2", "retrieve.branch_rerank.top_n=4"])
    per_branch, final = _Length(), _Length()
    pipe = RetrievalPipeline(s, _Store(arts), QuerySet([Two()]), {"bm25": _Run(runs)}, final,  # type: ignore[arg-type]
                             branch_reranker=per_branch)
    out = pipe.retrieve(Topic("1", "q?"))
    assert [(q, n, k) for q, n, k in per_branch.calls] == [("q?", 4, 2), ("other", 4, 2)]
    assert [h.pmid for h in out.rankings["retrieval"]] == ["8", "7", "6", "3"]  # each branch's top 2, by score
    assert final.calls == [("q?", 4, 16)]  # MedCPT's place: it reads only the pooled survivors


def test_medcpt_cosine_ignores_article_vector_length() -> None:
    from medcite.rerank.medcpt import MedCPTReranker

    class Enc:
        def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
            return np.array([[1.0, 0.0]] * len(texts))

        def encode_documents(self, docs: Sequence[Article]) -> np.ndarray:
            return np.array([[10.0, 10.0] if d.title == "long" else [1.0, 0.1] for d in docs])

    arts = {"1": Article("1", "long", "long"), "2": Article("2", "aligned", "aligned")}
    hits = [Hit("1", 1.0, 1), Hit("2", 0.5, 2)]
    for similarity, first in (("dot", "1"), ("cosine", "2")):
        r = MedCPTReranker(Enc(), None, bi_top=2, similarity=similarity)  # type: ignore[arg-type]
        assert r.bi_encoder_stage(["q"], hits, arts)[0].pmid == first


def test_title_and_abstract_evidence() -> None:
    from medcite.evidence.abstracts import AbstractSelector

    arts = {"1": Article("1", "Statins and LDL.", "LDL fell by 30%."), "2": Article("2", "Only a title", "")}
    items = AbstractSelector(docs=2, max_items=2, title=True).select([], [Hit("1", 1, 1), Hit("2", 1, 2)], arts)
    assert [(e.text, e.section) for e in items] == [("Statins and LDL. LDL fell by 30%.", None),
                                                   ("Only a title", "title")]
    plain = AbstractSelector(docs=1, max_items=1).select([], [Hit("1", 1, 1)], arts)
    assert [(e.text, e.section, e.end) for e in plain] == [("LDL fell by 30%.", "abstract", 16)]


# -- CLaC 2024 (003) ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["clac24-llm", "clac24-llm-nli"])
def test_clac24_task_a_systems_1_and_2(name: str) -> None:
    s = load_settings(name)
    assert [q.backend for q in s.retrieve.queries] == ["original"] and s.retrieve.k == 60  # the answer sentence
    assert (s.rerank.backend, s.rerank.model, s.rerank.k) == ("colbert", "colbert-ir/colbertv2.0", 10)  # type: ignore
    assert s.rerank.top_n >= 6 * 60  # type: ignore[attr-defined]  # the question and 5 sub-queries, 60 each
    g = s.ground
    assert (g.candidates, g.max_supported, g.max_contradicted) == (10, 3, 3)
    assert (g.judge, g.llm, g.support_prompt, g.contradict_prompt) == ("listwise", None, "clac24_support",
                                                                       "clac24_contradict")
    assert (g.contradict_from, g.contradict_candidates) == ("question", 30)
    q = g.contradict_queries
    assert [x.backend for x in q] == ["original", "llm_decompose"]
    assert (q[1].prompt, q[1].max_queries, q[1].llm) == ("clac24_decompose", 5, None)  # type: ignore[attr-defined]
    assert s.llm.model == "mistralai/Mistral-7B-Instruct-v0.2"  # every LLM step (§2.2)
    if name == "clac24-llm":
        assert g.contradict_filter is None
    else:
        f = g.contradict_filter
        assert f is not None and (f.backend, f.model) == ("t5-nli", "razent/SciFive-large-Pubmed_PMC-MedNLI")
        assert f.template.startswith("mednli: sentence1: {premise}")  # type: ignore[attr-defined]
    assert provenance.paper(name) == {"file": "003", "run": "System 1 (LLM.BM25)" if name == "clac24-llm"
                                      else "System 2 (LLM.NLI.BM25)"}
    assert preset_task(name) == "biogen-a"
    d = preset_description(name)
    assert "CLaC 2024 BioGen Task A" in d and "Offline" in d


def test_clac24_task_a_offline_swaps() -> None:
    from medcite.presets.offline import offline_settings

    nli = load_settings("clac24-llm-nli")
    swapped = offline_settings(nli, "local", grounding=True)
    f = swapped.ground.contradict_filter
    assert f is not None and (f.backend, f.model) == ("classifier", "models:medcite-reader")
    assert swapped.ground.judge == "listwise" and swapped.llm.backend == "local"  # the LLM still picks
    bare = offline_settings(nli, "none", grounding=True)
    assert (bare.ground.judge, bare.stance.backend) == ("stance", "classifier")
    assert [q.backend for q in bare.ground.contradict_queries] == ["original"]


@pytest.mark.parametrize("name", CLAC24_B)
def test_clac24_task_b_post_hoc_attribution(name: str) -> None:
    s = load_settings(name)
    g = s.generate
    assert (g.backend, g.mode, g.condense, g.max_attempts, g.fallback_when) == (  # type: ignore[attr-defined]
        "llm", "posthoc", True, 1, "empty")
    assert s.verify.gate == "off"
    judge = g.posthoc_judge  # type: ignore[attr-defined]
    assert (judge.backend, judge.llm) == ("llm", "mistral") and g.posthoc_candidates == 10  # type: ignore
    assert s.llm.model == "Qwen/Qwen3-8B-AWQ" and s.llms["mistral"].model == "mistralai/Mistral-7B-Instruct-v0.2"
    assert provenance.paper(name)["file"] == "003"  # type: ignore[index]


@pytest.mark.parametrize(("name", "branches"), [("clac24-simpleqa", ["bm25"]),
                                                ("clac24-simpleqa-hybrid", ["bm25", "dense"])])
def test_clac24_simpleqa_retrieves_20_per_query_and_colbert_keeps_25(name: str, branches: list[str]) -> None:
    s = load_settings(name)
    assert [q.backend for q in s.retrieve.queries] == ["original", "llm_decompose", "topic_narrative"]
    assert [b.backend for b in s.retrieve.branches] == branches and s.retrieve.k == 20
    assert s.retrieve.rerank_query == "question+narrative+topic" and s.retrieve.keep == 25
    assert (s.rerank.backend, s.rerank.k) == ("colbert", 25)  # type: ignore[attr-defined]
    assert s.generate.plain_prompt == "clac24_generate"  # type: ignore[attr-defined]  # Appendix C
    assert {"topic", "narrative", "documents"} <= placeholders("clac24_generate")


@pytest.mark.parametrize("name", CLAC24_B)
def test_clac24_task_b_citations_come_from_system_1s_colbert_top_10(name: str) -> None:
    g = load_settings(name).generate
    short = g.posthoc_shortlist  # type: ignore[attr-defined]
    assert short is not None and (short.backend, short.model, short.k) == ("colbert", "colbert-ir/colbertv2.0", 10)
    assert short.top_n >= load_settings(name).evidence.docs  # type: ignore[attr-defined]  # every evidence abstract
    assert g.posthoc_candidates == 10  # type: ignore[attr-defined]
    assert g.posthoc_pick == "listwise"  # type: ignore[attr-defined]  # System 1's citation selection (§3.2)


@pytest.mark.parametrize(("name", "branches", "k"), [("clac24-medhopqa-bm25", ["bm25"], 60),
                                                     ("clac24-medhopqa-hybrid", ["bm25", "dense"], 30)])
def test_clac24_medhopqa_uses_only_the_question(name: str, branches: list[str], k: int) -> None:
    s = load_settings(name)
    assert [q.backend for q in s.retrieve.queries] == ["original"]
    assert [b.backend for b in s.retrieve.branches] == branches and s.retrieve.k == k and s.retrieve.keep == 60
    assert s.generate.plain_prompt == "generate_plain_question"  # type: ignore[attr-defined]
    assert not {"topic", "narrative"} & placeholders("generate_plain_question")
    assert not {"topic", "narrative"} & placeholders("hop_first") and s.hops.docs == 60


# -- CLaC 2024's prompts (003 Appendices A-C) ------------------------------------------------------------------
def _body(prompt: str) -> list[str]:
    return [line for m in load_prompt(prompt) for line in m["content"].splitlines() if line.strip()]


@pytest.mark.parametrize(("prompt", "names"), [
    ("clac24_decompose", {"question"}),
    ("clac24_generate", {"documents", "topic", "narrative", "question"}),
    ("clac24_condense", {"long_answer", "question"}),
])
def test_clac24_appendix_b_and_c_prompts_are_verbatim_line_by_line(prompt: str, names: set[str]) -> None:
    paper = _paper("003")
    assert placeholders(prompt) == names
    missing = [line for line in _body(prompt) if provenance.normalise(line) not in paper]
    assert not missing, f"{prompt}: lines not in the paper: {missing}"
    assert [m["role"] for m in load_prompt(prompt)] == ["user"]  # the paper gives no system message


@pytest.mark.parametrize("prompt", ["clac24_support", "clac24_contradict"])
def test_clac24_appendix_a_prompts_are_verbatim_once_the_markdown_escapes_are_undone(prompt: str) -> None:
    # the paper's text shows the listings' markdown escaped ("**\*\*CORE INSTRUCTIONS:\*\***", "PMID\_1"); undone,
    # every line of the prompt file is in it, as is the "MUST provide at least one citation" rule
    paper = provenance.normalise(_paper("003").replace("\\*", "*").replace("\\_", "_").replace("**", ""))
    missing = [line for line in _body(prompt)
               if provenance.normalise(line.replace("**", "")) not in paper
               and not line.strip().startswith(("* PMID", "- *"))]
    assert not missing, f"{prompt}: lines not in the paper: {missing}"
    text = provenance.normalise(" ".join(_body(prompt)))
    if prompt == "clac24_support":
        assert "You ** MUST provide at least one citation **" in text
        assert "**STRICTLY CITE A MAXIMUM OF 3 DOCUMENTS.**" in text
        assert placeholders(prompt) == {"docs", "sentence"}
    else:
        assert "Your output must contain a **maximum of three** PMID citations." in text
        assert placeholders(prompt) == {"docs", "question", "sentence"}


def test_clac24_prompts_are_the_presets() -> None:
    a = load_settings("clac24-llm").ground
    assert (a.support_prompt, a.contradict_prompt) == ("clac24_support", "clac24_contradict")
    for name in ("clac24-simpleqa", "clac24-simpleqa-hybrid"):
        s = load_settings(name)
        (decompose,) = [q for q in s.retrieve.queries if q.backend == "llm_decompose"]
        g = s.generate
        assert decompose.prompt == "clac24_decompose"  # type: ignore[attr-defined]
        assert (g.plain_prompt, g.condense_prompt) == ("clac24_generate", "clac24_condense")  # type: ignore


def test_pmid_list_reads_only_shown_pmids() -> None:
    from medcite.llm.reply_parsers import parse_pmid_list

    shown = ["33659106", "101", "202", "303"]
    assert parse_pmid_list("Supporting Citations: [202, 101]", shown) == ["202", "101"]
    assert parse_pmid_list('["303", "999", "303", "101", "202", "33659106"]', shown) == ["303", "101", "202"]
    assert parse_pmid_list("[]", shown) == [] and parse_pmid_list("none contradict", shown) == []
    assert parse_pmid_list("<think>101 looks good</think>\n[202]", shown, 1) == ["202"]
    assert parse_pmid_list("PMID 202.5 and 1010", shown) == []


def test_clac24_output_label_is_taken_off() -> None:
    from medcite.llm.reply import prose
    from medcite.llm.reply_parsers import parse_condensation

    assert prose("output: Statins lower LDL. They are safe.") == "Statins lower LDL. They are safe."
    assert parse_condensation("output: Statins lower LDL.", 250) == "Statins lower LDL."


def test_clac24_decomposition_prompt_is_read() -> None:
    from medcite.llm.base import BaseLLM, Completion
    from medcite.retrieve.llm_queries import LLMDecomposer

    class Reply(BaseLLM):
        def __init__(self) -> None:
            super().__init__("r")
            self.seen: list[str] = []

        def _generate(self, messages: list[dict[str, str]], params: dict[str, object]) -> Completion:
            self.seen.append(messages[-1]["content"])
            return Completion(text='query: ["COVID-19 ferritin", "SARS-CoV-2 iron"]', model="r")

    llm = Reply()
    got = LLMDecomposer(llm, prompt="clac24_decompose").generate(Topic("1", "Why is ferritin high?"))
    assert [q.text for q in got] == ["COVID-19 ferritin", "SARS-CoV-2 iron"]
    assert llm.seen[0].startswith("You are a biomedical queries extracting agent.")
    assert llm.seen[0].rstrip().endswith("Question: Why is ferritin high?\n\noutput:")
