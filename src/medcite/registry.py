"""Stages and their backends by name: what the build context builds, and their settings models.

Every backend is a class registered here with one line (``stage``, ``name``, ``"module:Class"``, the extra
that provides its dependencies). The class carries its settings model as ``Config`` (a subclass of the
stage's base config with ``backend: Literal["name"]``) and a classmethod ``from_config(cfg, ctx)`` that
builds it, where ``ctx`` (:class:`medcite.context.BuildContext`) hands over what stages share: the document
store, named LLMs, named indexes and a model cache. Only the build context calls ``from_config``
(:class:`medcite.pipeline.context.Context`); this module names backends and validates their settings.
Modules are imported only when a backend is used or its settings are validated, and importing one never
needs its extra: the extra is required when the backend is *built*, and a missing one raises
:class:`MissingExtraError` with the pip command.

Plugins register more backends with :func:`register`, or through the ``medcite.backends`` entry-point
group (entry name ``"<stage>:<name>"``, value ``"module:Class"``).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any

from pydantic import SerializeAsAny, ValidationInfo, ValidatorFunctionWrapHandler, WrapValidator

from .errors import ConfigError, MissingExtraError
from .settings_base import BackendConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    """A stage: what it does, the backend a config gets when it names none, and its string shorthand."""

    name: str
    description: str
    default: str | None = None
    #: ``"module:function"`` turning a shorthand string into a config dict; None: the string is a backend name
    shorthand: str | None = None


_STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("index", "a searchable index of the document store (sparse BM25 or dense vectors)"),
        Stage("engine", "serves the named indexes: each on its own backend, or all on a server", "embedded"),
        Stage("encoder", "turns queries and articles into vectors", "sentence-transformers",
              "medcite.index.dense.encoders:parse_encoder"),
        Stage("querygen", "turns a topic into queries"),
        Stage("retriever", "first-stage search of one index by each query"),
        Stage("rerank", "rescores retrieved hits", "none", "medcite.rerank.base:parse_reranker"),
        Stage("evidence", "picks the evidence shown to the generator", "snippets"),
        Stage("generate", "writes the cited answer", "extractive"),
        Stage("llm", "a chat language model", "none"),
        Stage("stance", "judges whether a text supports, contradicts or does not address a claim", "none"),
        Stage("qa", "answers a BioASQ question from snippets: exact answer by type and an ideal answer",
              "extractive"),
        Stage("design", "labels the study design of each article (indexed by PubMed or predicted)", "rules"),
        Stage("task", "an official input/output format: reader, stages, writer and validator"),
    )
}

# stage -> name -> ("module:Class", extra that provides its dependencies)
_BACKENDS: dict[str, dict[str, tuple[str, str]]] = {stage: {} for stage in _STAGES}


def register(stage: str, name: str, target: str, extra: str = "core") -> None:
    """Make the class ``target`` (``"package.module:Class"``) the ``stage`` backend called ``name``.

    It becomes reachable from presets, ``--set stage.backend=name`` and the CLI; nothing else names it.
    """
    if stage not in _STAGES:
        raise ConfigError(f"unknown stage {stage!r}", hint=f"stages: {', '.join(_STAGES)}")
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"backend target {target!r} is not 'package.module:Class'")
    _BACKENDS[stage][name] = (target, extra)


for _stage, _name, _target, _extra in (
    ("index", "tantivy", "medcite.index.sparse.tantivy_backend:TantivyIndex", "core"),
    ("index", "bm25s", "medcite.index.sparse.bm25s_backend:BM25SIndex", "bm25s"),
    ("index", "faiss", "medcite.index.dense.faiss_backend:FaissIndex", "dense"),
    ("index", "milvus-bm25", "medcite.index.milvus.bm25_backend:MilvusBM25Index", "milvus"),
    ("index", "milvus-dense", "medcite.index.milvus.dense_backend:MilvusDenseIndex", "milvus"),
    ("engine", "embedded", "medcite.index.engine:EmbeddedEngine", "core"),
    ("engine", "milvus", "medcite.index.milvus.engine:MilvusEngine", "core"),
    ("encoder", "sentence-transformers", "medcite.index.dense.st_encoder:SentenceTransformerEncoder", "dense"),
    ("encoder", "hf-asymmetric", "medcite.index.dense.hf_asymmetric:AsymmetricEncoder", "dense"),
    ("encoder", "onnx-minilm", "medcite.index.dense.onnx_minilm:OnnxMiniLMEncoder", "onnx"),
    ("querygen", "original", "medcite.retrieve.queries:OriginalQuery", "core"),
    ("querygen", "keywords", "medcite.retrieve.queries:KeywordQueries", "core"),
    ("querygen", "topic_narrative", "medcite.retrieve.queries:TopicNarrative", "core"),
    ("querygen", "negation", "medcite.retrieve.negation:NegationQuery", "core"),
    ("querygen", "llm_reformulate", "medcite.retrieve.llm_queries:LLMReformulator", "core"),
    ("querygen", "llm_decompose", "medcite.retrieve.llm_queries:LLMDecomposer", "core"),
    ("querygen", "llm_keywords", "medcite.retrieve.llm_queries:LLMKeywordRewriter", "core"),
    ("querygen", "llm_stance_queries", "medcite.retrieve.llm_queries:LLMStanceQueries", "core"),
    ("retriever", "bm25", "medcite.retrieve.bm25:BM25Retriever", "core"),
    ("retriever", "bm25+rocchio", "medcite.retrieve.prf:PRFRetriever", "core"),
    ("retriever", "bm25+rm3", "medcite.retrieve.prf:PRFRetriever", "core"),
    ("retriever", "dense", "medcite.retrieve.dense:DenseRetriever", "dense"),
    ("retriever", "milvus-hybrid", "medcite.retrieve.milvus_hybrid:MilvusHybridRetriever", "milvus"),
    ("rerank", "none", "medcite.rerank.none:NoReranker", "core"),
    ("rerank", "cross-encoder", "medcite.rerank.cross_encoder:CrossEncoderReranker", "rerank"),
    ("rerank", "medcpt", "medcite.rerank.medcpt:MedCPTReranker", "rerank"),
    ("rerank", "monot5", "medcite.rerank.monot5:MonoT5Reranker", "rerank"),
    ("rerank", "colbert", "medcite.rerank.colbert:ColBERTReranker", "rerank"),
    ("rerank", "embedding", "medcite.rerank.embedding:EmbeddingReranker", "dense"),
    ("rerank", "ensemble-union", "medcite.rerank.ensemble:UnionEnsemble", "core"),
    ("rerank", "ensemble-weighted", "medcite.rerank.ensemble:WeightedEnsemble", "core"),
    ("rerank", "llm-listwise", "medcite.rerank.llm_listwise:LLMListwiseReranker", "llm"),
    ("rerank", "cascade", "medcite.rerank.cascade:CascadeReranker", "core"),
    ("rerank", "ltr", "medcite.rerank.ltr:LTRReranker", "train"),
    ("rerank", "reader", "medcite.rerank.reader:ReaderReranker", "qa"),
    ("evidence", "snippets", "medcite.evidence.snippets:SnippetSelector", "evidence"),
    ("evidence", "summaries", "medcite.evidence.summaries:SummarySelector", "evidence"),
    ("evidence", "abstracts", "medcite.evidence.abstracts:AbstractSelector", "core"),
    ("evidence", "answer-sentences", "medcite.evidence.answer_sentences:AnswerSentenceSelector", "evidence"),
    ("generate", "extractive", "medcite.generate.extractive:ExtractiveGenerator", "evidence"),
    ("generate", "llm", "medcite.generate.llm_generator:LLMGenerator", "evidence"),
    ("generate", "extractive-qa", "medcite.generate.extractive_qa:ExtractiveQAGenerator", "evidence"),
    ("llm", "openai", "medcite.llm.openai_backend:OpenAIBackend", "llm"),
    ("llm", "local", "medcite.llm.local_backend:LocalBackend", "llm"),
    ("llm", "llamacpp", "medcite.llm.llamacpp_backend:LlamaCppBackend", "llamacpp"),
    ("llm", "none", "medcite.llm.none_backend:NoneLLM", "core"),
    ("stance", "none", "medcite.attribute.none:NoStance", "core"),
    ("stance", "classifier", "medcite.attribute.classifier:ClassifierStance", "rerank"),
    ("stance", "nli", "medcite.attribute.classifier:ClassifierStance", "rerank"),
    ("stance", "t5-nli", "medcite.attribute.t5_nli:T5NLIStance", "rerank"),
    ("stance", "llm", "medcite.attribute.llm_stance:LLMStance", "llm"),
    ("stance", "overlap", "medcite.attribute.overlap:OverlapStance", "core"),
    ("qa", "extractive", "medcite.qa.extractive:ExtractiveQA", "qa"),
    ("qa", "llm", "medcite.qa.llm_qa:LLMQA", "llm"),
    ("design", "rules", "medcite.design.rules:RulesLabeller", "core"),
    ("task", "biogen25", "medcite.tasks.biogen_b_task:TaskB2025", "core"),
    ("task", "biogen24", "medcite.tasks.biogen_b_task:TaskB2024", "core"),
    ("task", "biogen-a", "medcite.tasks.biogen_a_task:TaskA", "core"),
    ("task", "bioasq-a", "medcite.tasks.bioasq_task:PhaseA", "core"),
    ("task", "bioasq-aplus", "medcite.tasks.bioasq_task:PhaseAPlus", "core"),
    ("task", "bioasq-b", "medcite.tasks.bioasq_task:PhaseB", "core"),
):
    register(_stage, _name, _target, _extra)

_plugins_loaded = False


def _load_plugins() -> None:
    """Register the backends other installed packages declare (entry-point group ``medcite.backends``)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="medcite.backends"):
        stage, sep, name = ep.name.partition(":")
        if not sep or stage not in _STAGES:
            log.warning("ignoring entry point %r: its name must be '<stage>:<backend>'", ep.name)
            continue
        register(stage, name, ep.value, extra="plugin")


def stages() -> list[Stage]:
    return list(_STAGES.values())


def stage(name: str) -> Stage:
    try:
        return _STAGES[name]
    except KeyError:
        raise ConfigError(f"unknown stage {name!r}", hint=f"stages: {', '.join(_STAGES)}") from None


def names(stage_name: str) -> list[str]:
    """The backends registered for a stage, sorted."""
    _load_plugins()
    return sorted(_BACKENDS.get(stage_name, {}))


def load(stage_name: str, name: str) -> Any:
    """Import and return the class registered as ``name`` for ``stage_name`` (Any: a plugin's class is known
    only once it is imported; the build context types what it builds per stage)."""
    _load_plugins()
    try:
        target, extra = _BACKENDS[stage_name][name]
    except KeyError:
        known = ", ".join(names(stage_name)) or "(none)"
        raise ConfigError(f"unknown {stage_name} backend {name!r}", hint=f"choose one of: {known}") from None
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if isinstance(exc, MissingExtraError):
            raise
        raise MissingExtraError(exc.name or str(exc), extra, f"the {stage_name} backend {name!r}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"{module_name} has no {attr!r} (registered as {stage_name} backend {name!r})") from None


def config_class(stage_name: str, name: str) -> type[BackendConfig]:
    """The settings model of a backend (its class's ``Config``)."""
    cls = load(stage_name, name)
    config = getattr(cls, "Config", None)
    if not (isinstance(config, type) and issubclass(config, BackendConfig)):
        raise ConfigError(f"the {stage_name} backend {name!r} ({cls.__name__}) declares no Config model",
                          hint="give the class `Config = <a BackendConfig subclass with backend: Literal[name]>`")
    return config


def shorthand(stage_name: str, text: str) -> dict[str, object]:
    """The config dict a shorthand string of ``stage_name`` stands for (``"minilm"``, ``"none"``, ...)."""
    spec = stage(stage_name).shorthand
    if spec is None:
        return {"backend": text.strip()}
    module, _, attr = spec.partition(":")
    parse: Callable[[str], dict[str, object]] = getattr(importlib.import_module(module), attr)
    return parse(text)


def validate_config(stage_name: str, value: object) -> BackendConfig:
    """One backend config of ``stage_name`` from a dict, a shorthand string or a config object.

    The ``backend`` key picks the model; a dict without one gets the stage's default backend. Raises
    ConfigError naming what is wrong (inside a settings tree, :func:`check_config` reports it instead).
    """
    from pydantic import ValidationError
    from pydantic_core import PydanticCustomError

    try:
        return check_config(stage_name, value)
    except PydanticCustomError as exc:
        raise ConfigError(f"{stage_name}: {exc.message()}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or stage_name}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid {stage_name} settings: {problems}") from None


def check_config(stage_name: str, value: object) -> BackendConfig:
    """:func:`validate_config` for use inside pydantic validation: errors are pydantic errors, so the
    settings tree's ValidationError says where they are."""
    from pydantic_core import PydanticCustomError

    if isinstance(value, BackendConfig):
        value = value.model_dump()
    if isinstance(value, str):
        value = shorthand(stage_name, value)
    if not isinstance(value, Mapping):
        raise PydanticCustomError(
            "stage_config", "a {stage} setting must be an object with a 'backend' key or a name, got {got}",
            {"stage": stage_name, "got": type(value).__name__},
        )
    data = dict(value)
    name = data.get("backend") or stage(stage_name).default
    if not name:
        raise PydanticCustomError(
            "backend_missing", "name the {stage} backend with 'backend' (one of: {known})",
            {"stage": stage_name, "known": ", ".join(names(stage_name))},
        )
    if not isinstance(name, str) or name not in _BACKENDS[stage_name]:
        _load_plugins()
    if not isinstance(name, str) or name not in _BACKENDS[stage_name]:
        raise PydanticCustomError(
            "backend_unknown", "unknown {stage} backend '{name}'; choose one of: {known}",
            {"stage": stage_name, "name": str(name), "known": ", ".join(names(stage_name))},
        )
    data["backend"] = name
    return config_class(stage_name, name).model_validate(data)


def stage_field(stage_name: str) -> object:
    """The annotated type of a settings field that holds the config of one ``stage_name`` backend.

    On validation the ``backend`` key picks the registered backend's model (a discriminated union that grows
    with every :func:`register` call, so no list of backend names is written anywhere); a plain string is
    the stage's shorthand (``"none"``, ``"minilm"``, ``"cross-encoder:MODEL"``).
    """

    def validate(value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> BackendConfig:
        return check_config(stage_name, value)

    return Annotated[SerializeAsAny[BackendConfig], WrapValidator(validate)]


def runtime_kept(stage_name: str, new: object, old: BackendConfig | Mapping[str, object] | None,
                 also: Sequence[str] = ()) -> dict[str, object]:
    """The config dict ``new`` (a dict or a shorthand string of ``stage_name``) names, with the runtime fields of
    ``old`` (device, dtype, batch size: its backend's ``runtime_fields``) and the fields ``also`` names carried over
    where the new backend has them and ``new`` does not set them.

    A command option that names another model (``--encoder DIR``, ``--model DIR``) replaces the model's own settings
    (a preset's prefixes for another model do not follow it) but keeps where and how the user asked it to run.
    """
    spec = dict(new) if isinstance(new, Mapping) else shorthand(stage_name, str(new))
    if old is None:
        return spec
    if isinstance(old, BackendConfig):
        old_data: dict[str, object] = old.model_dump(mode="json")
        runtime = set(old.runtime_fields)
    else:
        old_data = dict(old)
        try:
            runtime = set(config_class(stage_name, str(old_data.get("backend") or default_backend(stage_name)))
                          .runtime_fields)
        except ConfigError:
            runtime = set()
    try:
        fields = config_class(stage_name, str(spec.get("backend") or default_backend(stage_name))).model_fields
    except ConfigError:
        return spec  # an unknown backend: validating ``spec`` says so, naming the choices
    keep = {k: v for k, v in old_data.items() if (k in runtime or k in also) and k in fields and k not in spec}
    return {**keep, **spec}


def default_backend(stage_name: str) -> str:
    """The name of the stage's default backend."""
    return str(default_config(stage_name).backend)


def default_config(stage_name: str, **values: object) -> BackendConfig:
    """The config of the stage's default backend (or of ``values['backend']``) with ``values`` set."""
    return validate_config(stage_name, values)


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import an optional dependency or raise MissingExtraError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra, feature) from exc
