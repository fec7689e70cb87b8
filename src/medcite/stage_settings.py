"""The settings section of each stage (one pydantic model per stage, every field described).

:mod:`medcite.config` assembles them into :class:`~medcite.config.Settings` and resolves presets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class CorpusSettings(_Section):
    on_error: Literal["raise", "skip"] = Field(
        "raise", description="'raise' stops at the first bad record; 'skip' warns, counts and goes on."
    )
    batch_size: int = Field(2000, ge=1, description="Records written to the store per executemany batch.")


class SparseSettings(_Section):
    backend: str = Field("tantivy", description="Sparse backend: 'tantivy' (on disk, incremental) or 'bm25s'.")
    k1: float = Field(1.2, gt=0, description="BM25 k1 (tantivy fixes k1=1.2; use bm25s for other values).")
    b: float = Field(0.75, ge=0, le=1, description="BM25 b (tantivy fixes b=0.75; use bm25s for other values).")
    heap_mb: int = Field(256, ge=16, description="Indexing memory budget in MiB (tantivy writer heap).")
    threads: int = Field(1, ge=1, description="Indexing threads.")
    stemmer: Literal["english", "porter", "none"] = Field(
        "english",
        description="Stemmer: 'english' (Snowball/Porter2, both backends), 'porter' (Porter 1980 as in "
        "Lucene/Anserini, bm25s only, needs PyStemmer) or 'none'.",
    )
    stopwords: Literal["lucene", "none"] = Field(
        "lucene", description="Stop words: 'lucene' (Lucene's 33 English stop words, as Anserini) or 'none'."
    )
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant of the bm25s backend (tantivy always scores as Lucene does)."
    )
    fields: list[Literal["contents", "title", "abstract"]] = Field(
        default_factory=lambda: ["contents"],  # type: ignore[arg-type,return-value]
        description="Fields a query is scored against, scores summed: 'contents' (title + abstract as one "
        "field, as Anserini indexes it), 'title', 'abstract' (tantivy only).",
    )


class DenseSettings(_Section):
    encoder: str = Field(
        "minilm",
        description="Article (or symmetric) encoder: 'minilm' (packaged, offline), 'minilm-onnx' (no torch), "
        "'medcpt', a Hugging Face name or a local model folder.",
    )
    query_encoder: str | None = Field(
        None,
        description="Separate query encoder (asymmetric, e.g. ncbi/MedCPT-Query-Encoder); None = symmetric.",
    )
    backend: Literal["auto", "sentence-transformers", "hf-asymmetric", "onnx-minilm"] = Field(
        "auto", description="Encoder backend; 'auto' picks it from the encoder name."
    )
    normalize: bool | None = Field(
        None, description="L2-normalise vectors; None = the backend's default (symmetric: yes, MedCPT: no)."
    )
    query_max_length: int | None = Field(
        None, ge=1, description="Query token limit; None = backend default (MedCPT 64, else the model's)."
    )
    doc_max_length: int | None = Field(
        None, ge=1, description="Article token limit; None = backend default (MedCPT 512, MiniLM 256)."
    )
    device: str = Field("cpu", description="Torch device for encoding, e.g. 'cpu' or 'cuda'.")
    index_type: Literal["flat", "hnsw", "ivfpq"] = Field(
        "flat", description="FAISS layout: 'flat' (exact), 'hnsw' (graph), 'ivfpq' (compressed + re-rank)."
    )
    nlist: int = Field(0, ge=0, description="IVF-PQ coarse cells; 0 = about 4*sqrt(N), fewer when small.")
    pq_m: int = Field(0, ge=0, description="IVF-PQ sub-quantizers (bytes/vector); 0 = divisor of dim <= 64.")
    pq_nbits: int = Field(8, ge=4, le=12, description="IVF-PQ bits per sub-quantizer (fewer if tiny corpus).")
    nprobe: int = Field(32, ge=1, description="IVF-PQ cells visited per query.")
    rerank: int = Field(
        256, ge=1, description="IVF-PQ shortlist re-scored exactly from the on-disk vectors (at least k)."
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW neighbours per node.")
    ef_construction: int = Field(80, ge=8, description="HNSW build-time search depth.")
    ef_search: int = Field(128, ge=1, description="HNSW query-time search depth (at least k).")
    train_size: int = Field(0, ge=0, description="IVF-PQ training sample; 0 = min(N, max(64*nlist, 50000)).")
    batch_size: int = Field(32, ge=1, description="Texts per encoder batch.")
    chunk_size: int = Field(10000, ge=1, description="Articles per build chunk (memory bound, resume unit).")
    vector_dtype: Literal["float16", "float32"] = Field(
        "float16", description="On-disk dtype of the full vectors used for exact re-rank and rebuilds."
    )
    compact_ratio: float = Field(
        0.25, gt=0, le=1, description="Rebuild the index from stored vectors once this share of rows is dead."
    )
    threads: int = Field(0, ge=0, description="FAISS threads; 0 = all cores (1 is faster on a busy machine).")


class IndexSettings(_Section):
    sparse: SparseSettings = Field(default_factory=SparseSettings, description="BM25 index.")
    dense: DenseSettings = Field(default_factory=DenseSettings, description="Dense (embedding) index.")


class BranchSettings(_Section):
    name: Literal["bm25", "bm25+rocchio", "bm25+rm3", "dense"] = Field(
        "bm25",
        description="First-stage retriever: 'bm25', 'bm25+rocchio' / 'bm25+rm3' (BM25 with pseudo-relevance "
        "feedback, see retrieve.prf) or 'dense' (embedding kNN).",
    )
    k: int | None = Field(
        None, ge=1, description="Documents this branch retrieves per sub-query (None: retrieve.k)."
    )
    weight: float = Field(1.0, ge=0, description="Weight of this branch's runs in 'rrf' and 'wsum' fusion.")


class PRFSettings(_Section):
    fb_docs: int = Field(10, ge=1, description="Top documents of the first BM25 search used as feedback.")
    fb_terms: int = Field(10, ge=1, description="Expansion terms taken from the feedback documents.")
    alpha: float = Field(1.0, ge=0, description="Rocchio weight of the original query vector.")
    beta: float = Field(0.75, ge=0, description="Rocchio weight of the mean feedback-document vector.")
    original_weight: float = Field(
        0.5, ge=0, le=1,
        description="RM3 lambda: weight of the original query model against the feedback model.",
    )
    resolution: int = Field(
        5, ge=1, le=50,
        description="Repetitions of the heaviest term when the weighted query is rendered as a bag of words.",
    )
    max_df: float = Field(
        0.1, gt=0, le=1,
        description="Skip feedback terms found in more than this share of the documents (Anserini's rule; "
        "applies when the sparse index reports document frequencies).",
    )


class RetrieveSettings(_Section):
    k: int = Field(
        100, ge=1, description="Documents retrieved per query (first-stage budget per sub-query and branch)."
    )
    queries: list[str] = Field(
        default_factory=lambda: ["original"],
        description="Query generators run in order (registry stage 'querygen'): 'original', 'keywords', "
        "'topic_narrative', or LLM ones; duplicates are dropped and queries numbered q0, q1, ...",
    )
    branches: list[BranchSettings] = Field(
        default_factory=lambda: [BranchSettings()],
        description="First-stage retrievers; each runs every sub-query.",
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
    prf: PRFSettings = Field(
        default_factory=PRFSettings, description="Pseudo-relevance feedback (Rocchio, RM3)."
    )
    rerank_per_query: bool = Field(
        False,
        description="With a reranker: rerank each sub-query's candidates against that sub-query and pool by "
        "the best reranker score (CLaC 2025), instead of reranking the fused list against the question.",
    )
    keep: int | None = Field(
        None, ge=1, description="Hits kept per topic at the end, after reranking (None: keep all)."
    )


class EvidenceSettings(_Section):
    docs: int = Field(10, ge=1, description="Top documents that evidence is taken from.")
    max_items: int = Field(10, ge=1, description="Evidence items shown to the generator.")
    per_doc: int = Field(2, ge=1, description="Most evidence sentences taken from one document.")
    selector: str = Field(
        "snippets", description="Evidence selector (registry stage 'evidence'): 'snippets' (sentences of the "
        "top documents, no LLM) or 'summaries' (CLaC 2025: LLM summaries of the pooled abstracts as bullets)."
    )
    lam: float = Field(0.75, ge=0, le=1, description="MMR lambda: relevance against redundancy (CLaC 2025: 0.75).")
    summary_docs: int = Field(
        10, ge=1, description="'summaries': top documents summarised by the LLM (one call each)."
    )
    summary_words: int = Field(80, ge=5, description="'summaries': most words kept of one summary.")
    summary_max_tokens: int = Field(160, ge=8, description="'summaries': most tokens generated per summary.")
    bullet_words: int = Field(28, ge=5, description="'summaries': most words per bullet (CLaC 2025: 28).")
    bullets_per_doc: int = Field(
        2, ge=1, description="'summaries': most bullets taken from one document's summary."
    )


class GenerateSettings(_Section):
    backend: str = Field(
        "extractive", description="Answer generator (registry stage 'generate'): 'extractive' (no LLM) or 'llm'."
    )
    max_words: int = Field(250, ge=1, description="Hard cap on answer length in words.")
    max_citations: int = Field(3, ge=1, description="Most PMIDs kept per sentence.")
    max_sentences: int = Field(5, ge=1, description="Most sentences in an extractive answer.")
    min_relative_score: float = Field(
        0.45, ge=0, le=1, description="Extractive: leave out evidence scoring under this share of the best item."
    )
    mode: Literal["cited", "posthoc"] = Field(
        "cited", description="'llm': 'cited' (the model cites evidence indices; Dalhousie/CLaC 2025) or 'posthoc' "
        "(CLaC 2024 simpleqa: answer without citations, then cite each sentence by TF-IDF similarity)."
    )
    max_attempts: int = Field(
        3, ge=1, description="'llm': generations tried; each retry feeds the violations back (Dalhousie 2025: "
        "up to 20). Still invalid after the last one: the extractive fallback."
    )
    fallback: bool = Field(
        True, description="'llm': answer extractively when the LLM answer stays invalid (else keep what survives)."
    )
    condense: bool = Field(
        False, description="'llm': ask the LLM to condense an answer over max_words before trimming (CLaC 2024)."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="'llm': most tokens generated per answer (None: llm.max_tokens)."
    )
    posthoc_threshold: float = Field(
        0.1, ge=0, le=1, description="'posthoc': least TF-IDF cosine for an evidence item to be cited."
    )
    min_sentences: int = Field(
        1, ge=1, description="'llm': fewest valid sentences an accepted answer has (fewer is a violation)."
    )


class LLMSettings(_Section):
    backend: str = Field(
        "none", description="LLM backend: 'none' (extractive paths only), 'openai' (any OpenAI-compatible "
        "server: vLLM, Ollama, llama.cpp server, OpenAI), 'local' (in-process transformers) or 'llamacpp'."
    )
    model: str | None = Field(
        None, description="Model name. Required for 'openai'; for 'local'/'llamacpp' None means the packaged "
        "SmolLM2-135M-Instruct GGUF, else a Hugging Face model name or local folder/file."
    )
    gguf_file: str | None = Field(
        None, description="GGUF file name inside the 'local' model folder (None: the packaged SmolLM2 file)."
    )
    device: str = Field("cpu", description="Torch device of the 'local' backend ('cpu', 'cuda', 'cuda:1', ...).")
    base_url: str = Field(
        "http://127.0.0.1:8000/v1", description="Root of the OpenAI-compatible API, including /v1."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the API key (unset is fine for local servers)."
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature; 0 is greedy and deterministic.")
    max_tokens: int = Field(512, ge=1, description="Most tokens generated per call.")
    seed: int | None = Field(0, description="Sampling seed sent with every call (None: not sent).")
    timeout_s: float = Field(120.0, gt=0, description="Seconds to wait for one HTTP response before retrying.")
    max_retries: int = Field(4, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay in seconds; doubles per retry, with jitter.")
    concurrency: int = Field(4, ge=1, description="Most requests in flight at once.")
    stream: bool = Field(False, description="Stream tokens from the server (server-sent events) instead of one body.")
    cache: bool = Field(True, description="Keep every completion in a persistent cache so re-runs make no calls.")
    cache_dir: str | None = Field(
        None, description="Folder of the LLM cache (None: $MEDCITE_CACHE_DIR or ~/.cache/medcite)."
    )


class MedCPTSettings(_Section):
    query_model: str = Field(
        "ncbi/MedCPT-Query-Encoder", description="MedCPT query encoder (name or folder)."
    )
    article_model: str = Field(
        "ncbi/MedCPT-Article-Encoder", description="MedCPT article encoder (name or folder)."
    )
    cross_model: str = Field(
        "ncbi/MedCPT-Cross-Encoder", description="MedCPT cross-encoder (name or folder)."
    )
    bi_top: int = Field(
        80, ge=1, description="Pool hits kept after bi-encoder rescoring, read by the cross-encoder."
    )
    cross_top: int = Field(
        24, ge=1, description="Hits kept after the cross-encoder (the final k cuts further)."
    )
    query_max_length: int = Field(64, ge=8, description="Query encoder truncation in tokens.")
    article_max_length: int = Field(
        512, ge=8, description="Article encoder and cross-encoder truncation in tokens."
    )


class RerankSettings(_Section):
    backend: str = Field(
        "none", description="Reranker: 'none', 'cross-encoder', 'medcpt', 'monot5', 'embedding', "
        "'ensemble-union' (PJs: union of members' top member_k) or 'ensemble-weighted' (DS@GT: weighted sum)."
    )
    model: str | None = Field(
        None, description="Model name or folder (None: the backend's default: ms-marco-MiniLM-L-6-v2 for "
        "'cross-encoder', castorini/monot5-base-msmarco for 'monot5', the packaged MiniLM for 'embedding')."
    )
    batch_size: int = Field(32, ge=1, description="Pairs (or texts) scored per forward pass.")
    max_length: int = Field(512, ge=8, description="Token limit of a (query, document) pair.")
    activation: Literal["sigmoid", "raw"] = Field(
        "sigmoid", description="Cross-encoder scores: 'sigmoid' probabilities or 'raw' logits (same order)."
    )
    top_n: int = Field(100, ge=1, description="Best input hits read by the reranker; the rest are dropped.")
    k: int = Field(10, ge=1, description="Hits kept after reranking.")
    device: str = Field("cpu", description="Torch device of the reranker models ('cpu', 'cuda', ...).")
    quantize: bool = Field(
        False, description="'cross-encoder' on CPU: dynamic int8 quantization of the linear layers (25-35 % "
        "less rerank time on 2 cores; scores change, see docs/BENCHMARKS.md)."
    )
    window: int = Field(20, ge=2, description="'llm-listwise': passages ranked per LLM call (RankGPT window).")
    step: int = Field(10, ge=1, description="'llm-listwise': how far the window moves up after each call.")
    passage_words: int = Field(
        120, ge=8, description="'llm-listwise': words of title + abstract shown per passage."
    )
    members: list[str] = Field(
        default_factory=list, description="Ensemble members as 'backend' or 'backend:model', e.g. "
        "'cross-encoder:minilm-l12'."
    )
    weights: list[float] = Field(
        default_factory=list, description="'ensemble-weighted': one weight per member (empty: equal weights)."
    )
    member_k: int = Field(5, ge=1, description="'ensemble-union': top hits taken from each member.")
    normalize: Literal["minmax", "zscore", "none"] = Field(
        "minmax", description="'ensemble-weighted': per-query normalisation of each member's scores."
    )
    medcpt: MedCPTSettings = Field(
        default_factory=MedCPTSettings, description="MedCPT pipeline models and budgets."
    )
