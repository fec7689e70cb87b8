"""The settings tree, JSON presets that override only what they change, and dotted overrides.

Each stage's settings hold the config of one registered backend (:func:`medcite.registry.stage_field`):
``rerank``, ``evidence``, ``generate``, ``llm`` (and named extra LLMs in ``llms``), the named ``indexes``,
and the lists ``retrieve.queries`` / ``retrieve.branches``. ``--set a.b=value`` overrides any field. When a
preset or an override switches a section to another backend, the keys that backend does not have are
dropped (``--set rerank.backend=none`` on a preset with a cross-encoder leaves no ``model`` behind).
The fully resolved settings and their hash are written into every run directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from . import registry
from .errors import ConfigError
from .io import JSONObject
from .milvus_settings import MilvusSettings
from .registry import stage_field
from .set_option import set_line
from .settings_base import MAX_HITS, BackendConfig, Section

log = logging.getLogger(__name__)

__all__ = [
    "Settings",
    "CorpusSettings",
    "RetrieveSettings",
    "VerifySettings",
    "GroundSettings",
    "HopSettings",
    "BioASQSettings",
    "IndexSettings",
    "MilvusSettings",
    "load_settings",
    "parse_override",
    "preset_names",
    "preset_description",
    "preset_task",
    "preset_tasks",
    "PRESET_TASKS",
    "replacing",
    "settings_data",
    "settings_hash",
    "DEFAULT_INDEXES",
]

#: indexes every settings tree has unless it replaces them: BM25 and a dense index with the packaged MiniLM
DEFAULT_INDEXES: dict[str, dict[str, str]] = {"bm25": {"backend": "tantivy"}, "dense": {"backend": "faiss"}}

# where in the settings tree a backend config of which stage sits ("*": any name)
_STAGE_PATHS: dict[tuple[str, ...], str] = {
    ("rerank",): "rerank",
    ("evidence",): "evidence",
    ("generate",): "generate",
    ("llm",): "llm",
    ("stance",): "stance",
    ("qa",): "qa",
    ("design",): "design",
    ("llms", "*"): "llm",
    ("indexes", "*"): "index",
    ("indexes", "*", "encoder"): "encoder",
    ("bioasq", "encoder"): "encoder",
    ("bioasq", "reranker"): "rerank",
}


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
    def _distinct_branch_names(cls, branches: list[Any]) -> list[Any]:
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


class Settings(Section):
    """The whole configuration of one medcite run."""

    preset: str = Field("offline", description="Name of the preset these settings started from.")
    corpus: CorpusSettings = Field(default_factory=CorpusSettings, description="Ingest behaviour.")
    indexes: dict[str, stage_field("index")] = Field(  # type: ignore[valid-type]
        default_factory=lambda: {n: registry.default_config("index", **v) for n, v in DEFAULT_INDEXES.items()},
        description="Named indexes of the document store (registry stage 'index'); retrieval branches refer "
        "to them by name. Defaults: 'bm25' (tantivy) and 'dense' (FAISS with the packaged MiniLM).",
    )
    index: IndexSettings = Field(
        default_factory=IndexSettings, description="The engine that serves `indexes` (embedded or a Milvus server)."
    )
    retrieve: RetrieveSettings = Field(default_factory=RetrieveSettings, description="First-stage retrieval.")
    rerank: stage_field("rerank") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("rerank"), description="Reranking of retrieved hits."
    )
    flow: Literal["retrieve-then-generate", "generate-then-ground", "multi-hop"] = Field(
        "retrieve-then-generate", description="'generate-then-ground' (Dalhousie 2025 expd/empd): the LLM answers "
        "with no retrieval, then each sentence is grounded like a Task A sentence (support side only). "
        "'multi-hop' (CLaC 2024 MedHopQA): the retrieval runs once per LLM-written sub-question, hop after hop "
        "(settings `hops`), and the hops' hits are pooled before evidence selection."
    )
    evidence: stage_field("evidence") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("evidence"), description="Evidence selection."
    )
    generate: stage_field("generate") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("generate"), description="Answer generation."
    )
    stance: stage_field("stance") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("stance"),
        description="Judges whether an abstract supports or contradicts a sentence: Task A grounding, the "
        "citation-validation loop and citation metrics ('none', 'classifier', 'nli', 't5-nli', 'llm').",
    )
    qa: stage_field("qa") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("qa"),
        description="BioASQ Phase A+ / B answers (registry stage 'qa'): 'extractive' (offline: trained yes/no "
        "head, snippet entities, learned extractive ideal answer) or 'llm' (DS@GT / PJs prompting).",
    )
    design: stage_field("design") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("design"),
        description="Study-design labels of the articles (registry stage 'design': 'rules', PubMed's indexing where "
        "a record has it, else rules on the title and abstract), and medcite's own uses of them: the --design / "
        "--humans filter, the evidence-level tie-break and the caveat line (both off in every paper preset).",
    )
    verify: VerifySettings = Field(default_factory=VerifySettings, description="Citation checks and loops.")
    ground: GroundSettings = Field(
        default_factory=GroundSettings, description="Grounding sentences with citations (Task A, answer-first)."
    )
    hops: HopSettings = Field(
        default_factory=HopSettings, description="The multi-hop flow (flow=multi-hop, CLaC 2024 MedHopQA)."
    )
    bioasq: BioASQSettings = Field(
        default_factory=BioASQSettings, description="BioASQ Task b: Phase A documents and snippets."
    )
    llm: stage_field("llm") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("llm"),
        description="The language model every LLM stage uses unless it names another in `llms`.",
    )
    llms: dict[str, stage_field("llm")] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="More language models by name, for stages that name one (e.g. a reasoning model for "
        "query rewrites and another for generation, as Dalhousie 2025 ran).",
    )

    @field_validator("indexes", mode="before")
    @classmethod
    def _with_default_indexes(cls, value: Any) -> Any:
        """Keep the default indexes a preset does not mention; an entry without a backend keeps its default."""
        if not isinstance(value, dict):
            return value
        out: JSONObject = dict(DEFAULT_INDEXES)
        for name, entry in value.items():
            if isinstance(entry, dict) and name in DEFAULT_INDEXES and "backend" not in entry:
                entry = {**DEFAULT_INDEXES[name], **entry}
            out[name] = entry
        return out

    @model_validator(mode="after")
    def _served_by_engine(self) -> Settings:
        """The engine ``index.backend`` names (registry stage 'engine') serves the named indexes and branches:
        ``milvus`` moves every one to the Milvus server (:mod:`medcite.index.milvus.engine`)."""
        # an IndexEngine (medcite.index.engine), found by name: the settings tree imports no engine
        indexes, branches = registry.load("engine", self.index.backend).serve(self)
        # set without re-validation: the values are validated configs, and assignment would run this again
        object.__setattr__(self, "indexes", indexes)
        object.__setattr__(self.retrieve, "branches", branches)
        return self

    def hash(self) -> str:
        return settings_hash(self)


def settings_hash(settings: BaseModel) -> str:
    blob = json.dumps(settings.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: top-level keys of a preset file that document it and are not settings: its description, the task it answers
#: (:data:`PRESET_TASKS`), the published run it reproduces and where each of its settings comes from
#: (:mod:`medcite.presets.provenance`)
NOTE_KEYS = ("description", "task", "paper", "sources")

#: what a preset answers (the ``task`` key of its file) -> what that is and the command that runs it. The name of a
#: registered task backend (registry stage ``task``) is a task too, so a new task needs no line here.
PRESET_TASKS: dict[str, str] = {
    "biogen-a": "TREC BioGen Task A: the sentences of a given answer grounded in PubMed (`medcite ground`)",
    "biogen-b": "TREC BioGen Task B: an answer whose every sentence cites PubMed (`medcite run`, `medcite ask`)",
    "medhopqa": "MedHopQA multi-hop questions, answered and cited as BioGen Task B (`medcite run`)",
    "bioasq": "BioASQ Task b: documents and snippets (phase A), then answers (phases A+ and B) (`medcite bioasq`)",
    "search": "search: a ranking of PubMed articles, no answer (`medcite search`, `medcite bioasq phase-a`)",
}


def preset_tasks() -> dict[str, str]:
    """Every task a preset can declare (:data:`PRESET_TASKS`, then each registered task backend not among them)."""
    out = dict(PRESET_TASKS)
    for name in registry.names("task"):
        out.setdefault(name, f"the registered task `{name}`")
    return out


def preset_task(name: str) -> str:
    """The task a preset answers: its own ``task`` key, else that of the preset it extends."""
    data = _preset_json(name)
    chain = [name]
    while "task" not in data and isinstance(data.get("extends"), str) and data["extends"] not in chain:
        chain.append(data["extends"])
        data = _preset_json(chain[-1])
    if "task" not in data:
        raise ConfigError(f"preset {name!r} declares no task",
                          hint=f'add "task": one of {", ".join(preset_tasks())} to the preset file')
    return _checked_task(name, data["task"])


def _checked_task(name: str, task: object) -> str:
    known = preset_tasks()
    if not isinstance(task, str) or task not in known:
        raise ConfigError(f"preset {name!r}: unknown task {task!r}",
                          hint=f'"task" names what the preset answers: one of {", ".join(known)}')
    return task


def is_alias(name: str) -> bool:
    """Whether a preset only renames another: its file holds an ``extends`` and notes, no setting of its own."""
    data = _preset_json(name)
    return isinstance(data.get("extends"), str) and set(data) <= {*NOTE_KEYS, "extends"} - {"paper", "sources"}


def preset_json(name: str) -> JSONObject:
    """The preset file as written (its own keys only, ``extends`` not followed)."""
    return _preset_json(name)


def presets_dir() -> Traversable:
    """The folder of the shipped presets (package data: ``medcite/presets/*.json``)."""
    return resources.files("medcite") / "presets"


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in presets_dir().iterdir() if p.name.endswith(".json"))


def _preset_text(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a preset is a name or a path to a .json file, not {name!r}",
                          hint=f"choose one of: {', '.join(preset_names())}")
    path = Path(name)
    if path.exists() and not path.is_file():
        raise ConfigError(f"preset {name!r} is a folder, not a .json preset file",
                          hint="give a preset name or the path to one .json preset file")
    if path.suffix == ".json" and path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read preset file {name}: {exc}") from None
    res = presets_dir() / f"{name}.json"
    if not res.is_file():
        raise ConfigError(
            f"unknown preset {name!r}",
            hint=f"choose one of: {', '.join(preset_names())} (or give a path to a .json preset file)",
        )
    return res.read_text(encoding="utf-8")


def _preset_json(name: str) -> JSONObject:
    try:
        data = json.loads(_preset_text(name))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"preset {name!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"preset {name!r} is not a JSON object")
    return data


def preset_description(name: str) -> str:
    """The preset's own description (empty when it has none)."""
    return str(_preset_json(name).get("description", ""))


def preset_sections(name: str) -> set[str]:
    """The top-level settings sections the preset (with the presets it extends) sets itself."""
    return set(_read_preset(name))


def _read_preset(name: str, chain: tuple[str, ...] = ()) -> JSONObject:
    if name in chain:
        raise ConfigError(f"preset {name!r} extends itself through {' -> '.join(chain)}")
    data = _preset_json(name)
    parent = data.pop("extends", None)
    if "task" in data:
        _checked_task(name, data["task"])
    for note in NOTE_KEYS:  # what the preset says about itself, not settings (medcite.provenance reads them)
        data.pop(note, None)
    if parent is not None and not isinstance(parent, str):
        raise ConfigError(f"preset {name!r}: 'extends' must be one preset name, got {parent!r}",
                          hint='e.g. "extends": "offline"')
    if parent:
        return merge(_read_preset(parent, (*chain, name)), data)
    return data


def _stage_at(path: Sequence[str]) -> str | None:
    for pattern, stage in _STAGE_PATHS.items():
        if len(pattern) == len(path) and all(p in ("*", q) for p, q in zip(pattern, path, strict=True)):
            return stage
    return None


def merge(base: JSONObject, over: JSONObject, path: tuple[str, ...] = ()) -> JSONObject:
    """Deep-merge ``over`` into ``base``. A stage section whose ``backend`` changes keeps only the keys
    its new backend has (see the module docstring)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        where = (*path, key)
        stage = _stage_at(where)
        if isinstance(value, dict) and isinstance(old, str) and stage:
            old = registry.shorthand(stage, old)
        if isinstance(value, dict) and isinstance(old, dict):
            out[key] = merge(_for_backend(old, value, where), value, where)
        elif isinstance(value, dict) and old is not None and not isinstance(old, dict):
            raise ConfigError(f"{'.'.join(where)} is {old!r}, not a section: it has no {', '.join(value)}",
                              hint=f"set {'.'.join(where)} itself, e.g. {set_line('.'.join(where), 'VALUE')}")
        else:
            out[key] = value
    return out


def _for_backend(old: JSONObject, new: JSONObject, path: tuple[str, ...]) -> JSONObject:
    stage = _stage_at(path)
    backend = new.get("backend")
    if stage is None or not isinstance(backend, str) or backend == old.get("backend"):
        return old
    try:
        fields = registry.config_class(stage, backend).model_fields
    except ConfigError:
        return old  # an unknown backend: validation says so, naming the choices
    dropped = sorted(k for k in old if k not in fields)
    if dropped:
        log.info("%s: backend %r has no %s; dropped", ".".join(path), backend, ", ".join(dropped))
    return {k: v for k, v in old.items() if k in fields}


MAX_OVERRIDE_INT = 2**63 - 1


def _check_numbers(value: object, item: str) -> None:
    """Integers past 64 bits (``retrieve.k=1e30`` as digits) would overflow later, deep in a backend."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > MAX_OVERRIDE_INT:
        text = str(value) if len(str(value)) <= 30 else str(value)[:30] + "..."
        raise ConfigError(f"override {item[:80]!r}: {text} is too large",
                          hint=f"integers are at most {MAX_OVERRIDE_INT}")
    if isinstance(value, list):
        for v in value:
            _check_numbers(v, item)
    elif isinstance(value, dict):
        for v in value.values():
            _check_numbers(v, item)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"rerank.top_k=30"`` -> (["rerank", "top_k"], 30). Values are JSON when they parse, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"cannot read override {item!r}", hint="write it as section.field=value, e.g. retrieve.k=50")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ConfigError(f"cannot read override {item[:80]!r}: the value is nested too deeply") from None
    except ValueError:  # not JSON (a plain string), or an integer past Python's digit limit
        if raw.strip().lstrip("-").isdigit():
            raise ConfigError(f"override {key.strip()[:80]}: the number {raw.strip()[:30]}... is too large",
                              hint=f"integers are at most {MAX_OVERRIDE_INT}") from None
        value = raw
    _check_numbers(value, item)
    path = key.strip().split(".")
    if any(not p for p in path):
        raise ConfigError(f"cannot read override {item!r}: empty name in {key!r}", hint="e.g. rerank.k=30")
    return path, value


def settings_data(preset: str = "offline", overrides: Sequence[str] = ()) -> JSONObject:
    """The preset (with its ``extends`` chain) and dotted overrides merged, not yet validated."""
    data = _read_preset(preset)
    data["preset"] = preset
    for item in overrides:
        path, value = parse_override(item)
        nested: Any = value
        for part in reversed(path):
            nested = {part: nested}
        try:
            data = merge(data, nested)
        except ConfigError as exc:
            raise ConfigError(f"override {item!r}: {exc.message}", hint=exc.hint) from None
    return data


def replacing(preset: str, overrides: Sequence[str], where: str, value: object) -> list[str]:
    """Overrides that put the backend config ``value`` (a dict or a shorthand string) at the dotted path ``where``
    (``indexes.dense.encoder``) in place of the one there, for a command option such as ``--encoder DIR``.

    What the option names replaces the model's own settings (a preset's prefixes for another model do not follow
    it); what says where and how the model runs (the old config's ``runtime_fields``: device, dtype, batch size)
    and every field the user set under ``where`` with ``--set`` are kept, where the new backend has them and
    ``value`` does not set them. Append the result after the user's overrides.
    """
    path = tuple(where.split("."))
    stage = _stage_at(path)
    if stage is None:
        raise ConfigError(f"{where} holds no backend config",
                          hint="name a stage's settings, e.g. indexes.dense.encoder")
    old: Any = settings_data(preset, overrides)
    for part in path:
        old = old.get(part) if isinstance(old, dict) else None
    if isinstance(old, str):
        old = registry.shorthand(stage, old)
    user: list[str] = []  # the fields the user set under ``where``
    for item in overrides:
        keys, given = parse_override(item)
        if tuple(keys[: len(path)]) == path:
            user += [keys[len(path)]] if len(keys) > len(path) else list(given) if isinstance(given, dict) else []
    spec = registry.runtime_kept(stage, value, old if isinstance(old, dict) else None, also=user)
    return [f"{where}=null", f"{where}={json.dumps(spec)}"]


def load_settings(preset: str = "offline", overrides: Sequence[str] = ()) -> Settings:
    """Resolve a preset (with its ``extends`` chain) and dotted overrides into validated Settings."""
    data = settings_data(preset, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        given = [set_line(".".join(path), value) for path, value in map(parse_override, overrides)]
        origin = f"preset {preset!r}" + (f" with {' '.join(given)}" if given else "")
        raise ConfigError(
            f"invalid settings ({origin[:300]}): {problems}",
            hint="run `medcite config show` to see every field with its description",
        ) from None


def apply_swaps(settings: Settings, swaps: Sequence[tuple[str, object]]) -> Settings:
    """``settings`` with each (dotted path, JSON value) merged in, in order, as a preset or ``--set`` would merge
    it (a section whose ``backend`` changes keeps only the keys of its new backend), validated again."""
    data: JSONObject = settings.model_dump(mode="json", exclude_unset=True)
    for where, value in swaps:
        nested: JSONObject = {}
        for i, part in enumerate(reversed(where.split("."))):
            nested = {part: value if i == 0 else nested}
        data = merge(data, nested)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"invalid settings (preset {settings.preset!r}, changed at "
                          f"{', '.join(w for w, _ in swaps)[:300]}): {problems}",
                          hint="run `medcite config show` to see every field with its description") from None


def with_overrides(settings: Settings, overrides: Sequence[str]) -> Settings:
    """``settings`` with the user's dotted overrides (``a.b=value``, as given to ``--set``) applied last."""
    return apply_swaps(settings, [(".".join(path), value) for path, value in map(parse_override, overrides)])


def set_lines(before: Settings, after: Settings) -> list[str]:
    """The ``--set`` options that turn ``before`` into ``after``, printed from their difference (the one place
    that writes them): a changed value by its dotted path, a config whose backend changed or a changed list as a
    whole (JSON; a config by its backend and the fields that differ from their defaults, after a ``null`` that
    clears the config it replaces)."""
    return [set_line(where, value) for where, value in _changes(before, after, "")]


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _changes(a: object, b: object, where: str) -> list[tuple[str, object]]:
    if _plain(a) == _plain(b):
        return []
    # a config below a stage's (an encoder inside a reranker's) may be a shorthand string in the preset: written whole
    nested = isinstance(b, BackendConfig) and _stage_at(tuple(where.split("."))) is None
    if isinstance(a, BaseModel) and type(a) is type(b) and not nested:
        return [c for name in type(b).model_fields
                for c in _changes(getattr(a, name), getattr(b, name), f"{where}.{name}" if where else name)]
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return [c for key in b for c in _changes(a[key], b[key], f"{where}.{key}")]
    if isinstance(a, BaseModel) and isinstance(b, BaseModel):
        return _backend_changes(a, b, where)
    return [(where, _compact(b))]


def _backend_changes(a: BaseModel, b: BaseModel, where: str) -> list[tuple[str, object]]:
    """A config that another backend's replaces: its ``backend`` (a stage section then keeps the fields the new
    backend shares with the old one, :func:`merge`) and what still differs; elsewhere cleared and written whole."""
    backend = getattr(b, "backend", None)
    if _stage_at(tuple(where.split("."))) is not None and isinstance(backend, str):
        fields = type(b).model_fields
        kept = {k: v for k, v in a.model_dump(mode="json", exclude_unset=True).items() if k in fields}
        try:
            middle = type(b).model_validate(kept | {"backend": backend})
        except ValidationError:
            pass
        else:
            return [(f"{where}.backend", backend), *_changes(middle, b, where)]
    return [(where, None), (where, _compact(b))]


def _compact(value: object) -> object:
    """JSON of ``value`` with what its defaults give left out (a config keeps its ``backend``)."""
    if isinstance(value, list | tuple):
        return [_compact(v) for v in value]
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if not isinstance(value, BaseModel):
        return _plain(value)
    out: dict[str, object] = {}
    for name, field in type(value).model_fields.items():
        v = getattr(value, name)
        default = field.get_default(call_default_factory=True)
        if name == "backend" or _plain(v) != _plain(default):
            out[name] = _compact(v)
    return out
