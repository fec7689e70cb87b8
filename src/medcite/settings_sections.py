"""The sections of the settings tree (``corpus``, ``retrieve``, ``verify``, ``ground``, ``hops``, ``bioasq``,
``index``): their fields, defaults and checks. :mod:`medcite.config` puts them together into ``Settings`` (with the
stages' backend configs, the presets and ``--set`` overrides) and is where callers import them from."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field, field_validator

from . import registry
from .milvus_settings import MilvusSettings
from .registry import stage_field
from .settings_base import MAX_HITS, Section


class _Named(Protocol):
    """A first-stage branch as its check reads it (a retriever config: :mod:`medcite.retrieve.base`)."""

    @property
    def name(self) -> str: ...


class CorpusSettings(Section):
    on_error: Literal["raise", "skip"] = Field(
        "raise", description="'raise' stops at the first bad record; 'skip' warns, counts and goes on."
    )
    batch_size: int = Field(2000, ge=1, description="Records written to the store per executemany batch.")


class RetrieveSettings(Section):
    k: int = Field(
        100, ge=1, le=MAX_HITS,
        description="Documents retrieved per query (first-stage budget per sub-query and branch).",
    )
    queries: list[stage_field("querygen")] = Field(  # type: ignore[valid-type]
        default_factory=lambda: [registry.default_config("querygen", backend="original")],
        description="Query generators run in order (registry stage 'querygen'): 'original', 'keywords', "
        "'topic_narrative', 'llm_reformulate', 'llm_decompose' (names or full configs); duplicates are dropped "
        "and queries numbered q0, q1, ...",
    )
    branches: list[stage_field("retriever")] = Field(  # type: ignore[valid-type]
        default_factory=lambda: [registry.default_config("retriever", backend="bm25")],
        description="First-stage retrievers (registry stage 'retriever'): 'bm25', 'bm25+rocchio', 'bm25+rm3', "
        "'dense'; each searches its named index (`index`) with every sub-query.",
    )
    fusion: Literal["rrf", "wsum", "pool"] = Field(
        "rrf",
        description="How the (branch, sub-query) runs merge: 'rrf' (reciprocal rank fusion), 'wsum' "
        "(weighted sum of normalised scores) or 'pool' (by PMID, best score, union of branches).",
    )
    rrf_k: float = Field(60, ge=0, description="RRF constant k (Cormack et al. 2009 use 60).")
    norm: Literal["minmax", "zscore", "none"] = Field(
        "minmax", description="Per-run score normalisation for 'wsum' and 'pool'."
    )
    rerank_per_query: bool = Field(
        False,
        description="With a reranker: rerank each sub-query's candidates against that sub-query and pool by "
        "the best reranker score (CLaC 2025), instead of reranking the fused list against the question.",
    )
    branch_rerank: stage_field("rerank") | None = Field(  # type: ignore[valid-type]
        None, description="A reranker run on each sub-query's candidates against that sub-query before the "
        "runs are pooled by PMID (best score, union of branches), keeping its own `k` per sub-query; `rerank` "
        "then reads the pooled list (CLaC 2025 runs C and D: the ms-marco cross-encoder keeps m=10 / m=30 per "
        "branch, then MedCPT). None: no per-branch step (runs are merged by `fusion`)."
    )
    rerank_query: Literal["question", "question+narrative+topic"] = Field(
        "question", description="What the reranker reads as the query of the fused list: the question, or the "
        "question, the narrative and the topic joined (CLaC 2024 SimpleQA)."
    )
    keep: int | None = Field(
        None, ge=1, le=MAX_HITS, description="Hits kept per topic at the end, after reranking (None: keep all)."
    )
    allow_retracted: bool = Field(
        False, description="Keep retracted articles (PubMed 'Retracted Publication' or a retraction notice) "
        "in the rankings; by default they are dropped from every first-stage run, so no answer cites one "
        "(CLI: --allow-retracted)."
    )

    @field_validator("branches")
    @classmethod
    def _distinct_branch_names(cls, branches: list[_Named]) -> list[_Named]:
        names = [b.name for b in branches]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two branches are named {', '.join(twice)}: give them different 'label's")
        if not branches:
            raise ValueError('name at least one branch, e.g. [{"backend": "bm25"}]')
        return branches


class VerifySettings(Section):
    citations: Literal["off", "check", "drop", "regenerate"] = Field(
        "off", description="Stance check of every (answer sentence, cited PMID) pair (Dalhousie 2025): 'check' "
        "records each stance, 'drop' removes citations the abstract does not support (and sentences left "
        "uncited), 'regenerate' first asks an LLM generator again with the reasons (up to max_rounds)."
    )
    min_support: float = Field(0.5, ge=0, le=1, description="Least P(supports) for a citation to stay.")
    keep_neutral: bool = Field(False, description="Keep citations judged neutral (only 'supports' otherwise).")
    corroborate: bool = Field(
        False, description="Add citations of other evidence items the stance check says support a sentence "
        "(up to generate.max_citations PMIDs per sentence)."
    )
    max_rounds: int = Field(3, ge=1, le=50, description="'regenerate': most generations (Dalhousie 2025: 20).")
    sufficiency_rounds: int = Field(
        0, ge=0, le=10, description="Evidence-sufficiency loop (Dalhousie 2025 afmmd): the LLM judges whether "
        "the evidence answers the question and, if not, writes a new query whose hits are added; at most this "
        "many rounds (the paper: 5; 0 = off)."
    )
    sufficiency_evidence: Literal["refuse", "accumulate"] = Field(
        "refuse", description="What a sufficiency round does with its new hits: 'refuse' fuses them with the "
        "hits so far (RRF), cuts the list to its former length and selects the evidence again; 'accumulate' "
        "keeps all evidence collected so far and appends the new query's evidence after it (Dalhousie 2025 "
        "afmmd: 'appends the newly retrieved context to all evidence collected so far')."
    )
    llm: str | None = Field(None, description="LLM of the sufficiency judge and of the answer-first flow.")
    gate: Literal["off", "overlap", "stance"] = Field(
        "overlap", description="The support gate of every citation whose sentence is not a verbatim quote of the "
        "cited abstract (an LLM wrote it): 'overlap' keeps it only when one window of the abstract (a sentence, "
        "two consecutive ones, the title) holds at least gate_threshold of the sentence's content words with the "
        "same negation polarity (a lexical entailment proxy, no model); 'stance' asks the stance stage "
        "(P(supports) >= min_support); 'off' keeps citations as generated (the published runs' behaviour). "
        "A sentence left uncited is dropped; every decision is recorded. Not applied when citations='drop' or "
        "'regenerate' (the stance check already gates every citation)."
    )
    gate_threshold: float = Field(
        0.6, ge=0, le=1, description="'overlap' gate: least share of a sentence's content words in one window."
    )


class GroundSettings(Section):
    candidates: int = Field(20, ge=1, description="Top retrieved abstracts judged per sentence.")
    max_supported: int = Field(3, ge=0, le=3, description="Most new supporting PMIDs per sentence (Task A: 3).")
    max_contradicted: int = Field(3, ge=0, le=3, description="Most contradicting PMIDs per sentence (Task A: 3).")
    min_support: float = Field(0.5, ge=0, le=1, description="Least P(supports) of a supporting citation.")
    min_contradict: float = Field(0.5, ge=0, le=1, description="Least P(contradicts) of a contradicting citation.")
    anchor: int = Field(
        0, ge=0, le=3, description="The first N candidates of the retrieval's ranking are supporting citations "
        "whatever their stance (never contradicting ones); the rest must pass min_support. 0: every citation "
        "passes the stance threshold. offline-grounding uses 1: on BioASQ-derived Task A data the top-ranked "
        "abstract is right ~94 % of the time whatever the trained classifier says (docs/BENCHMARKS.md task_a)."
    )
    order: Literal["retrieval", "stance"] = Field(
        "retrieval", description="Order of the kept citations (and so which are kept when more pass): the "
        "retrieval's ranking, or the stance probability."
    )
    candidate_lists: Literal["fused", "per_side"] = Field(
        "fused", description="Task A: where each kind of citation is looked for. 'fused': the retrieval's final "
        "ranking is one candidate list for both kinds. 'per_side' (Dalhousie 2025 §III-A1, one rewrite per "
        "stance): supporting citations come from what the query set's support queries (stage 'support') found and "
        "contradicting ones from what its contradict queries found, each list in its own search's order and cut "
        "to `candidates`; every candidate of either list is judged once. A side with no query (an offline swap, "
        "an unreadable rewrite) falls back to the fused ranking, and the run log says so."
    )
    persona: Literal["expert", "emotional", "emotionprompt"] = Field(
        "expert", description="Voice of LLM-written text in the answer-first flow (Dalhousie 2025 runs expd / "
        "empd): 'expert' a biomedical expert's role, 'emotional' a caring clinician's voice, 'emotionprompt' an "
        "emotional stimulus appended to the prompt (EmotionPrompt, Li et al. 2023, as Dalhousie 2025's "
        "emotional runs)."
    )
    unsupported: Literal["drop", "flag"] = Field(
        "drop", description="Answer-first flow: a sentence nothing supports is dropped, or kept uncited and "
        "flagged (both recorded in the run directory)."
    )
    judge: Literal["stance", "listwise"] = Field(
        "stance", description="Task A: how citations are chosen among the candidates. 'stance': the stance stage "
        "judges each (sentence, abstract) pair and the thresholds above keep the clearest. 'listwise' (CLaC 2024 "
        "Systems 1/2, Appendix A): one LLM call per sentence picks at most max_supported supporting PMIDs among "
        "its candidates (support_prompt) and one picks at most max_contradicted contradicting PMIDs among the "
        "contradiction candidates (contradict_prompt); an abstract the LLM did not pick is not cited."
    )
    llm: str | None = Field(
        None, description="'listwise': the LLM (a name in `llms`; None: the default `llm`) that picks the citations."
    )
    support_prompt: Literal["clac24_support"] = Field(
        "clac24_support", description="'listwise': the support prompt (CLaC 2024 Appendix A, Code Snippet 1).")
    contradict_prompt: Literal["clac24_contradict"] = Field(
        "clac24_contradict", description="'listwise': the contradiction prompt (CLaC 2024 Appendix A, Code "
        "Snippet 2).")
    contradict_from: Literal["sentence", "question"] = Field(
        "sentence", description="Task A: where contradicting citations are looked for. 'sentence': among the "
        "sentence's own candidates. 'question' (CLaC 2024 §2.2): the question and the sub-queries of "
        "contradict_queries are each searched (retrieve.k per query and branch), fused, reranked by the rerank "
        "stage against the question, and the best contradict_candidates are that question's contradiction "
        "candidates for every one of its sentences."
    )
    contradict_queries: list[stage_field("querygen")] = Field(  # type: ignore[valid-type]
        default_factory=lambda: [registry.default_config("querygen", backend="original")],
        description="contradict_from='question': the query set of the question (CLaC 2024: the question and its "
        "LLM decomposition, [\"original\", {\"backend\": \"llm_decompose\", \"prompt\": \"clac24_decompose\"}]).",
    )
    contradict_candidates: int = Field(
        30, ge=1, le=MAX_HITS, description="contradict_from='question': the best reranked abstracts that are the "
        "contradiction candidates (CLaC 2024: 30).")
    contradict_filter: stage_field("stance") | None = Field(  # type: ignore[valid-type]
        None, description="Task A: a stance backend that filters the contradiction candidates before they are "
        "judged (CLaC 2024 System 2's NLI stage, SciFive-MedNLI: {\"backend\": \"t5-nli\"}): each abstract "
        "is split into sentences, every sentence is compared with the answer sentence, and only an abstract with "
        "at least one sentence judged contradicting it stays a candidate. None: no filter."
    )


class HopSettings(Section):
    """The non-agentic multi-hop flow of CLaC 2024's MedHopQA systems 5/6 (``flow=multi-hop``,
    :mod:`medcite.pipeline.multihop`)."""

    classify: Literal["llm", "always", "never"] = Field(
        "llm", description="Which questions are decomposed: 'llm' asks the model whether the question is simple or "
        "multi-hop (`hop_classify.txt`; simple questions skip decomposition, as in the paper), 'always' decomposes "
        "every question, 'never' searches every question as it is."
    )
    max_hops: int = Field(
        3, ge=1, le=10, description="Most hops of a multi-hop question: the first (the key phrase's sub-question) "
        "and at most max_hops - 1 further ones written from the evidence."
    )
    max_subquestions: int = Field(
        2, ge=1, le=10, description="Most new sub-questions the model may write from one hop's evidence.")
    hop_docs: int = Field(
        5, ge=1, le=50, description="Top abstracts of a hop shown to the model when it writes the next sub-questions."
    )
    docs: int = Field(
        60, ge=1, description="Documents pooled across the hops (RRF of every hop's ranking, the best kept): the "
        "evidence pool the answer is written from (CLaC 2024: 60)."
    )
    search_question: bool = Field(
        True, description="Also search the question itself and pool its hits with the hops' (a decomposition that "
        "goes astray then cannot lose what the question alone finds)."
    )
    short_answer: bool = Field(
        True, description="Also write the short answer (`hop_short_answer.txt`), recorded in verification.jsonl; the "
        "long answer (the generator's) is what is submitted."
    )
    max_tokens: int = Field(128, ge=8, description="Most tokens generated per hop call and for the short answer.")
    llm: str | None = Field(None, description="LLM of the hops and the short answer (None: the default `llm`).")


class BioASQSettings(Section):
    """BioASQ Task b, Phase A: how many documents and snippets are submitted and how snippets are chosen
    (:mod:`medcite.evidence.bioasq_snippets`)."""

    documents: int = Field(10, ge=1, le=10, description="Documents submitted per question (BioASQ: at most 10).")
    snippets: int = Field(10, ge=0, le=10, description="Snippets submitted per question (BioASQ: at most 10).")
    snippet_documents: int = Field(
        10, ge=1, description="Top documents whose sentences compete for the snippets (PJs-team: the top 10)."
    )
    per_document: int = Field(2, ge=1, description="Most snippets (sentences) taken from one document.")
    scorer: Literal["embedding", "reranker", "tfidf"] = Field(
        "embedding", description="How sentences are scored against the question: 'embedding' (cosine of `encoder` "
        "vectors; PJs-team: all-MiniLM-L6-v2), 'reranker' (`reranker`, or `rerank` when it is unset, scoring "
        "question-sentence pairs) or 'tfidf' (TF-IDF cosine, no model)."
    )
    encoder: stage_field("encoder") = Field(  # type: ignore[valid-type]
        "minilm", validate_default=True,
        description="Encoder of the 'embedding' scorer: 'minilm' (packaged), a name or folder, or an encoder config.",
    )
    reranker: stage_field("rerank") | None = Field(  # type: ignore[valid-type]
        None, description="Reranker of the 'reranker' scorer (a rerank config or shorthand such as "
        "'cross-encoder:MODEL'); None: the pipeline's `rerank`."
    )
    min_words: int = Field(4, ge=1, description="Shorter sentences ('Results.') are never snippets.")
    include_titles: bool = Field(True, description="Titles compete as snippets (section 'title').")
    splitter: Literal["syntok", "pysbd"] = Field("syntok", description="Sentence splitter of the abstracts.")


class IndexSettings(Section):
    """Which engine serves the named indexes (``indexes``): a registered engine (registry stage 'engine')."""

    backend: str = Field(
        "embedded",
        description="The engine (registry stage 'engine'): 'embedded': each entry of `indexes` uses its own backend "
        "(tantivy, bm25s, FAISS); 'milvus': every sparse entry becomes 'milvus-bm25' and every vector entry "
        "'milvus-dense' (same analysis, encoder and layout options), all in one collection of the Milvus server "
        "`index.milvus.uri`.",
    )
    milvus: MilvusSettings = Field(default_factory=MilvusSettings, description="The Milvus server and collection.")

    @field_validator("backend")
    @classmethod
    def _registered_engine(cls, value: str) -> str:
        known = registry.names("engine")
        if value not in known:
            raise ValueError(f"unknown index engine {value!r}: choose one of {', '.join(known)}")
        return value
