"""Backend name -> lazily imported implementation. A missing extra raises with the install hint."""

from __future__ import annotations

import importlib
from typing import Any

from .errors import ConfigError, MissingExtraError

# stage -> name -> ("module:attribute", extra that provides its dependencies)
_BACKENDS: dict[str, dict[str, tuple[str, str]]] = {
    "encoder": {
        "sentence-transformers": ("medcite.index.dense.st_encoder:SentenceTransformerEncoder", "dense"),
        "hf-asymmetric": ("medcite.index.dense.hf_asymmetric:AsymmetricEncoder", "dense"),
        "onnx-minilm": ("medcite.index.dense.onnx_minilm:OnnxMiniLMEncoder", "onnx"),
    },
    "querygen": {
        "original": ("medcite.retrieve.queries:OriginalQuery", "core"),
        "keywords": ("medcite.retrieve.queries:KeywordQueries", "core"),
        "topic_narrative": ("medcite.retrieve.queries:TopicNarrative", "core"),
        "llm_reformulate": ("medcite.llm.query_generators:LLMReformulator", "core"),
        "llm_decompose": ("medcite.llm.query_generators:LLMDecomposer", "core"),
    },
    "sparse": {
        "tantivy": ("medcite.index.sparse.tantivy_backend:TantivyIndex", "core"),
        "bm25s": ("medcite.index.sparse.bm25s_backend:BM25SIndex", "bm25s"),
    },
    "llm": {
        "openai": ("medcite.llm.openai_backend:OpenAIBackend", "llm"),
        "local": ("medcite.llm.local_backend:LocalBackend", "llm"),
        "llamacpp": ("medcite.llm.llamacpp_backend:LlamaCppBackend", "llamacpp"),
        "none": ("medcite.llm.none_backend:NoneLLM", "core"),
    },
    "rerank": {
        "cross-encoder": ("medcite.rerank.cross_encoder:CrossEncoderReranker", "rerank"),
        "medcpt": ("medcite.rerank.medcpt:MedCPTReranker", "rerank"),
        "monot5": ("medcite.rerank.monot5:MonoT5Reranker", "rerank"),
        "embedding": ("medcite.rerank.embedding:EmbeddingReranker", "dense"),
        "ensemble-union": ("medcite.rerank.ensemble:UnionEnsemble", "core"),
        "ensemble-weighted": ("medcite.rerank.ensemble:WeightedEnsemble", "core"),
        "llm-listwise": ("medcite.rerank.llm_listwise:LLMListwiseReranker", "llm"),
    },
    "evidence": {
        "snippets": ("medcite.evidence.snippets:SnippetSelector", "evidence"),
        "summaries": ("medcite.evidence.summaries:SummarySelector", "evidence"),
    },
    "generate": {
        "extractive": ("medcite.generate.extractive:ExtractiveGenerator", "evidence"),
        "llm": ("medcite.generate.llm_generator:LLMGenerator", "evidence"),
    },
}


def register(stage: str, name: str, target: str, extra: str = "core") -> None:
    """Register a backend: ``target`` is ``"package.module:Attribute"``."""
    _BACKENDS.setdefault(stage, {})[name] = (target, extra)


def names(stage: str) -> list[str]:
    return sorted(_BACKENDS.get(stage, {}))


def load(stage: str, name: str) -> Any:
    """Import and return the backend class/factory registered as ``name`` for ``stage``."""
    try:
        target, extra = _BACKENDS[stage][name]
    except KeyError:
        known = ", ".join(names(stage)) or "(none)"
        raise ConfigError(
            f"unknown {stage} backend {name!r}",
            hint=f"choose one of: {known}",
        ) from None
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if isinstance(exc, MissingExtraError):
            raise
        missing = exc.name or str(exc)
        raise MissingExtraError(missing, extra, f"the {stage} backend {name!r}") from exc
    return getattr(module, attr)


def require(module: str, extra: str, feature: str) -> Any:
    """Import an optional dependency or raise MissingExtraError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra, feature) from exc
