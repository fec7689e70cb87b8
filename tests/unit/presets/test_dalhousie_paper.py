"""Issue 25: the Dalhousie presets (dal25-*) as Dal@TREC25 (../shared/papers/001_*.txt) states its runs.

Each assertion names the paper's section; where the paper is silent the preset's ``sources`` say so and the
value asserted here is medcite's stated choice.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from medcite.config import load_settings, preset_names
from medcite.pipeline import loops
from medcite.presets import provenance
from medcite.retrieve.llm_queries import LLMStanceQueries
from medcite.types import Article, Evidence, Hit, Query, Topic

BIOBERT = "pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb"
LLAMA = "meta-llama/Meta-Llama-3-70B-Instruct"
RETRIEVAL_GENERATION = {  # run -> (LLM of query reformulation, evidence validation, agent-style loop)
    "dal25-rfr_monot5-msmarco_llama70b": (None, True, False),   # System 1
    "dal25-rfr_monot5-msmarco_deepseek-r1": ("deepseek", True, False),  # System 2
    "dal25-afmmd": ("deepseek", True, True),  # System 3
    "dal25-rmmln": (None, False, False),  # System 4
    "dal25-rmmdn": ("deepseek", False, False),  # System 5
    "dal25-afmmdn": ("deepseek", False, True),  # System 6
}
TASK_A = {"dal25-expert": "expert", "dal25-emotional": "emotionprompt"}
ANSWER_FIRST = {"dal25-expd": "expert", "dal25-empd": "emotionprompt"}
ALL_RUNS = [*RETRIEVAL_GENERATION, *TASK_A, *ANSWER_FIRST]


def test_every_dalhousie_run_of_the_paper_has_a_preset_with_its_paper_and_sources() -> None:
    # §III-A: two Task A runs; §III-B: eight Task B runs (Tables III-IV)
    dal = {n for n in preset_names() if n.startswith("dal25-")}
    assert set(ALL_RUNS) <= dal
    for name in ALL_RUNS:
        assert (provenance.paper(name) or {}).get("file") == "001", name
        assert provenance.sources(name), name
        assert preset_description_names_the_run(name)


def preset_description_names_the_run(name: str) -> bool:
    from medcite.config import preset_description

    text = preset_description(name)
    return text.startswith("Dalhousie 2025 (") and "paper 001" in text


def test_the_agentic_presets_are_medcites_own() -> None:
    assert not {"dal25-agentic", "dal25-agentic-novalidate"} & set(preset_names())
    for name in ("medcite-agentic", "medcite-agentic-novalidate"):
        assert provenance.paper(name) is None
        s = load_settings(name)
        assert s.verify.sufficiency_rounds == 5 and s.verify.sufficiency_evidence == "accumulate"
        assert s.generate.fallback_when == "invalid"  # medcite's safety net stays in medcite's presets
    assert load_settings("medcite-agentic").verify.citations == "regenerate"
    assert load_settings("medcite-agentic-novalidate").verify.gate == "overlap"


@pytest.mark.parametrize("name", [*RETRIEVAL_GENERATION, "dal25-rrf"])
def test_the_retrieval_generation_chain(name: str) -> None:
    s = load_settings(name)
    queries = s.retrieve.queries
    assert [q.backend for q in queries] == ["original", "llm_keywords", "llm_decompose"]
    assert queries[2].max_queries == 5  # §III-B2a(2): "decomposed into five sub-queries"
    bm25, dense = s.retrieve.branches
    assert (bm25.backend, bm25.k) == ("bm25+rocchio", 5000)  # §III-B2a(1): "the top-5,000 documents"
    assert (dense.backend, dense.k) == ("dense", 1000)  # §III-B2a(2): "the top-1,000 documents"
    assert bm25.queries[0] == "keyword_rewrite" and dense.queries[0] == "decomposition"
    assert bm25.clean  # §III-B2a(1): "the reformulated query is cleaned again" after Rocchio
    assert s.indexes["dense"].model_names() == [BIOBERT]
    assert s.retrieve.fusion == "rrf"  # §III-B2a(3)
    assert (s.rerank.backend, s.rerank.top_n, s.rerank.k) == ("monot5", 1000, 10)  # §III-B2a(4)
    assert (s.evidence.backend, s.evidence.docs, s.evidence.max_items) == ("snippets", 10, 30)
    assert s.evidence.scorer == "reranker"  # §III-B2a(4): "extracted using the same MonoT5 model"
    # §III-B2a(5): llama-3-70b answers in zero-shot mode from the snippets, the query and the topic
    assert s.generate.backend == "llm" and s.generate.llm is None and s.llm.model == LLAMA
    assert s.generate.prompt == "generate_topic" and s.generate.dedupe == 0.9
    # §III-B2a(6): limits re-inserted and generation retried; no gate the paper does not describe
    assert s.generate.max_attempts > 1 and s.generate.fallback_when == "empty" and s.generate.retry_on == "limits"
    assert s.generate.max_words == 250 and s.generate.max_citations == 3
    assert s.verify.gate == "off"


@pytest.mark.parametrize("name", list(RETRIEVAL_GENERATION))
def test_each_run_varies_what_the_paper_says(name: str) -> None:
    query_llm, validated, agentic = RETRIEVAL_GENERATION[name]
    s = load_settings(name)
    # §III-B2b: "all query reformulation and sub-query generation steps use `deepseek-r1`" (System 2)
    assert [q.llm for q in s.retrieve.queries[1:]] == [query_llm, query_llm]
    assert s.retrieve.branches[0].llm == query_llm  # the Rocchio clean-up is a reformulation step too
    if query_llm:
        assert s.llms[query_llm].model == "deepseek-ai/DeepSeek-R1"
    # §III-B2a(7): Mistral-7b verifies each citation, up to 20 attempts; §III-B2d: disabled in Systems 4-6
    if validated:
        assert (s.verify.citations, s.verify.max_rounds) == ("regenerate", 20)
        assert (s.stance.backend, s.stance.llm) == ("llm", "mistral")
        assert s.llms["mistral"].model == "mistralai/Mistral-7B-Instruct-v0.3"
    else:
        assert s.verify.citations == "off"
    # §III-B2c: deepseek-r1 judges sufficiency, at most five iterations, evidence appended
    if agentic:
        assert (s.verify.sufficiency_rounds, s.verify.llm) == (5, "deepseek")
        assert s.verify.sufficiency_evidence == "accumulate"
    else:
        assert s.verify.sufficiency_rounds == 0


@pytest.mark.parametrize("name", list(TASK_A))
def test_task_a_runs(name: str) -> None:
    s = load_settings(name)
    (q,) = s.retrieve.queries  # §III-A1(1): a support and a contradict rewrite by deepseek-r1, asked separately
    assert (q.backend, q.llm, q.persona, list(q.sides)) == ("llm_stance_queries", "deepseek", TASK_A[name],
                                                            ["support", "contradict"])
    assert q.prompt == "stance_rewrites"
    assert s.stance.framing == TASK_A[name]  # §III-A3: the stance prompt is framed as the rewrites are
    assert s.llms["deepseek"].model == "deepseek-ai/DeepSeek-R1"
    (branch,) = s.retrieve.branches  # §III-A1(2): BioBERT-STSb in FAISS, k = 30
    assert branch.backend == "dense" and branch.k == 30 and s.retrieve.k == 30
    assert s.indexes["dense"].model_names() == [BIOBERT]
    assert s.rerank.backend == "none"
    # §III-A1(3): Mistral-7B-v0.3, four labels (supports, contradicts, neutral, irrelevant)
    assert (s.stance.backend, s.stance.llm, s.stance.prompt) == ("llm", "mistral", "bioace_citation")
    # §III-A1(4): up to three of each, the first three by the FAISS ranking
    g = s.ground
    assert (g.max_supported, g.max_contradicted, g.order) == (3, 3, "retrieval")
    # each rewrite's top 30 are the candidates of its own stance ("truly align with the intended stance")
    assert g.candidates == 30 and g.candidate_lists == "per_side"
    assert s.retrieve.keep == 60  # the fused ranking (a side with no rewrite) keeps both lists whole


@pytest.mark.parametrize("name", list(ANSWER_FIRST))
def test_generate_then_retrieve_runs(name: str) -> None:
    s = load_settings(name)
    # §III-B1: deepseek-r1 answers the question as given, then the Task A system grounds each sentence
    assert s.flow == "generate-then-ground" and s.verify.llm == "deepseek"
    assert s.ground.persona == ANSWER_FIRST[name]
    (q,) = s.retrieve.queries  # only the supportive rewrite, "omitting the contradictory branch"
    assert (q.backend, q.persona, list(q.sides)) == ("llm_stance_queries", ANSWER_FIRST[name], ["support"])
    assert q.prompt == "stance_rewrites" and s.stance.framing == ANSWER_FIRST[name]
    assert s.ground.max_contradicted == 0 and s.ground.max_supported == 3
    (branch,) = s.retrieve.branches
    assert branch.backend == "dense" and branch.k == 30 and s.ground.candidates == 30
    assert (s.stance.llm, s.stance.prompt) == ("mistral", "bioace_citation")
    assert s.verify.gate == "off" and s.ground.unsupported == "flag"


class FakeLLM:
    name, model = "fake", "fake"

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.seen = list(replies), []  # type: ignore[var-annotated]

    def complete(self, messages: Any, **_: Any) -> SimpleNamespace:
        self.seen.append([messages])
        return SimpleNamespace(text=self.replies.pop(0))

    def complete_many(self, batch: Any, **_: Any) -> list[SimpleNamespace]:
        self.seen.append(list(batch))
        return [SimpleNamespace(text=self.replies.pop(0)) for _ in batch]


def _text(messages: Any) -> str:
    return "\n".join(m["content"] for m in messages)


def test_emotionprompt_appends_the_papers_stimulus_and_expd_keeps_the_support_rewrite_only() -> None:
    llm = FakeLLM(["Support rewrite: RUNX2 mutations cause dental anomalies.",
                   "RUNX2 mutations show no association with dental anomalies."])
    cfg = load_settings("dal25-emotional").retrieve.queries[0]
    gen = LLMStanceQueries(llm, persona=cfg.persona, sides=tuple(cfg.sides), prompt=cfg.prompt)
    both = gen.generate(Topic("t-0", "Mutations can cause extra teeth.", topic="What will mutation in runx2 affect?"))
    assert [(q.stage, q.text) for q in both] == [("support", "RUNX2 mutations cause dental anomalies."),
                                                 ("contradict", "RUNX2 mutations show no association with dental "
                                                  "anomalies.")]
    support, contradict = (_text(chat) for chat in llm.seen[-1])
    for chat in (support, contradict):  # §III-A1: question and sentence combined; §III-A3: the stimulus appended
        assert "runx2 affect" in chat and "extra teeth" in chat
        assert chat.rstrip().endswith("This is very important to my career.")
    assert "SUPPORT the claim" in support and "CONTRADICT the claim" in contradict
    cfg = load_settings("dal25-expd").retrieve.queries[0]
    llm = FakeLLM(["RUNX2 mutations cause dental anomalies."])
    one = LLMStanceQueries(llm, persona=cfg.persona, sides=tuple(cfg.sides), prompt=cfg.prompt).generate(
        Topic("t-0", "x", topic="q"))
    assert [q.stage for q in one] == ["support"] and len(llm.seen[-1]) == 1  # the contradictory branch omitted
    assert "biomedical expert" in _text(llm.seen[-1][0])


def test_the_stance_prompt_is_framed_as_the_run() -> None:
    from medcite.attribute.llm_stance import LLMStance

    for framing, needle in (("expert", "biomedical expert"), ("emotionprompt", "important to my career")):
        llm = FakeLLM(["SUPPORTS\nNONE"])
        stance = LLMStance(llm, prompt="bioace_citation", framing=framing)
        verdict, = stance.classify_articles([("RUNX2 mutations cause extra teeth.", Article("1", "t", "a b c"))])
        assert verdict.label.value == "supports" and needle in _text(llm.seen[-1][0])
    llm = FakeLLM(["NOT RELEVANT\nNONE"])  # §III-A1: the fourth label
    verdict, = LLMStance(llm, prompt="bioace_citation").classify_articles([("s", Article("1", "t", "a"))])
    assert verdict.label.value == "not relevant"


def _pipe(mode: str, replies: list[str]) -> SimpleNamespace:
    settings = load_settings("dal25-afmmd", [f"verify.sufficiency_evidence={mode}"])
    arts = {p: Article(p, f"title {p}", f"Abstract {p} says something.") for p in "123456"}

    def select(queries: Any, hits: Any, articles: Any) -> list[Evidence]:
        return [Evidence(i + 1, h.pmid, articles[h.pmid].abstract) for i, h in enumerate(hits[:2])]

    later = iter([[Hit("3", 1.0), Hit("1", 0.9)], [Hit("4", 1.0), Hit("5", 0.5)]])
    return SimpleNamespace(
        settings=settings,
        context=SimpleNamespace(llm=lambda *a, **k: FakeLLM(replies)),
        retrieval=SimpleNamespace(retrieve=lambda topic: SimpleNamespace(final=next(later))),
        store=SimpleNamespace(get_many=lambda pmids: {p: arts[p] for p in pmids if p in arts}),
        selector=SimpleNamespace(select=select),
    )


def test_the_sufficiency_loop_appends_new_evidence_to_all_collected_so_far() -> None:
    # §III-B2c: "appends the newly retrieved context to all evidence collected so far"
    pipe = _pipe("accumulate", ["QUERY: more one", "QUERY: more two", "SUFFICIENT"])
    hits = [Hit("1", 1.0), Hit("2", 0.5)]
    arts = pipe.store.get_many(["1", "2"])
    first = pipe.selector.select([], hits, arts)
    queries, hits, arts, evidence, rounds = loops.sufficient_evidence(
        pipe, Topic("t", "q"), [Query("q0", "q")], hits, arts, first)  # type: ignore[arg-type]
    assert [e.pmid for e in evidence] == ["1", "2", "3", "4", "5"]  # "1" again is not shown twice
    assert [e.index for e in evidence] == [1, 2, 3, 4, 5]
    assert [h.pmid for h in hits] == ["1", "2", "3", "4", "5"] and set(arts) == {"1", "2", "3", "4", "5"}
    assert [r["sufficient"] for r in rounds] == [False, False, True] and len(queries) == 3


def test_the_refuse_mode_is_todays_behaviour() -> None:
    pipe = _pipe("refuse", ["QUERY: more one", "SUFFICIENT", "SUFFICIENT"])
    hits = [Hit("1", 1.0), Hit("2", 0.5)]
    arts = pipe.store.get_many(["1", "2"])
    _, hits, _, evidence, _ = loops.sufficient_evidence(
        pipe, Topic("t", "q"), [Query("q0", "q")], hits, arts, [])  # type: ignore[arg-type]
    assert len(hits) == 2 and len(evidence) == 2  # fused and cut to the former length
    assert load_settings("offline").verify.sufficiency_evidence == "refuse"


def test_the_rocchio_expansion_is_cleaned_by_the_llm_before_bm25_searches_it() -> None:
    from medcite.retrieve.expansion import WeightedQuery
    from medcite.retrieve.prf import PRFRetriever, llm_cleaner

    searched: list[str] = []

    class Base:
        def search(self, query: str, k: int) -> list[Hit]:
            searched.append(query)
            return [Hit("1", 1.0)]

    method = SimpleNamespace(name="rocchio", expand=lambda q, docs: WeightedQuery({"runx2": 1.0, "teeth": 0.5,
                                                                                  "2019": 0.2}))
    store = SimpleNamespace(get_many=lambda pmids: {p: Article(p, "t", "a") for p in pmids})
    llm = FakeLLM(["Query: runx2 mutation supernumerary teeth"])
    prf = PRFRetriever(Base(), store, method, cleaner=llm_cleaner(llm))  # type: ignore[arg-type]
    assert prf.search("runx2 teeth", 5) == [Hit("1", 1.0)]
    assert searched == ["runx2 teeth", "runx2 mutation supernumerary teeth"]  # feedback search, then the cleaned
    shown = _text(llm.seen[-1][0])
    assert "runx2, teeth, 2019" in shown and "Keyword query: runx2 teeth" in shown
    plain = PRFRetriever(Base(), store, method)  # type: ignore[arg-type]
    searched.clear()
    plain.search("runx2 teeth", 5)
    assert searched[-1].split().count("runx2") == 5  # no clean-up: the weighted expansion (medcite's default)


def test_snippets_are_the_best_sentences_by_the_reranker() -> None:
    from medcite.evidence.snippets import SnippetSelector

    arts = {"1": Article("1", "", "Teeth grow slowly in mice. RUNX2 mutations cause extra teeth in humans."),
            "2": Article("2", "", "RUNX2 controls bone formation in the skull. Zebrafish fins regenerate quickly.")}
    asked: list[str] = []

    def score(question: str, sentences: list[str]) -> list[float]:
        asked.append(question)
        return [float(sum(w in s for w in ("RUNX2", "teeth", "bone"))) for s in sentences]

    selector = SnippetSelector(docs=2, max_items=2, per_doc=30, scorer=SimpleNamespace(score=score))
    got = selector.select([Query("q0", "What does RUNX2 do?"), Query("k", "runx2 keyword", "keyword_rewrite")],
                          [Hit("1", 1.0), Hit("2", 0.5)], arts)
    assert [e.text for e in got] == ["RUNX2 mutations cause extra teeth in humans.",
                                     "RUNX2 controls bone formation in the skull."]
    assert [e.index for e in got] == [1, 2] and asked == ["What does RUNX2 do?"]
    assert arts[got[0].pmid].abstract[got[0].start:got[0].end] == got[0].text  # an exact span


def test_only_the_two_limits_make_the_model_generate_again() -> None:
    # §III-B2a(6): "If these limits are exceeded, the answer and reason for failure are re-inserted into the
    # context, and generation is retried"; other faults are post-processed (an uncited sentence is dropped)
    from medcite.generate.llm_generator import LLMGenerator

    evidence = [Evidence(i, str(100 + i), f"Finding number {i} about statins.") for i in range(1, 6)]
    topic, queries = Topic("t", "Do statins work?"), [Query("q0", "Do statins work?")]
    llm = FakeLLM(["Statins work [1]. An uncited sentence here."])
    gen = LLMGenerator(llm, max_attempts=20, retry_on="limits", fallback_when="empty")  # type: ignore[arg-type]
    answer = gen.generate(topic, queries, evidence)
    assert len(llm.seen) == 1 and [s.pmids for s in answer.sentences] == [("101",)]
    llm = FakeLLM(["Statins work [1, 2, 3, 4].", "Statins work [1, 2]."])
    answer = LLMGenerator(llm, max_attempts=20, retry_on="limits",  # type: ignore[arg-type]
                          fallback_when="empty").generate(topic, queries, evidence)
    assert len(llm.seen) == 2 and "cite at most 3" in _text(llm.seen[-1][0])
    assert [s.pmids for s in answer.sentences] == [("101", "102")]
    llm = FakeLLM(["Statins work [1]. An uncited sentence here.", "Statins work [1]."])
    LLMGenerator(llm, max_attempts=20).generate(topic, queries, evidence)  # type: ignore[arg-type]
    assert len(llm.seen) == 2  # medcite's default retries on any broken rule
