"""The build context is the one factory: typed accessors, encoders loaded once, indexes built once, and a
context without a document store for commands that need only an LLM, an encoder or a stance judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medcite.attribute.base import StanceClassifier
from medcite.config import load_settings
from medcite.context import BuildContext, ModelCache
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError
from medcite.evidence.base import EvidenceSelector
from medcite.generate.base import Generator
from medcite.index.base import SparseIndex
from medcite.index.dense.encoders import Encoder
from medcite.llm.base import LLM
from medcite.llm.openai_backend import OpenAIBackend
from medcite.pipeline.context import Context
from medcite.registry import validate_config
from medcite.rerank.base import Reranker
from medcite.retrieve.base import QueryGenerator, Retriever
from medcite.types import Article
from medcite_fakes import HashEncoder, RuleLLM

HASH = {"backend": "hash-bow", "dim": 16}
DOCS = [
    Article("11", "Statins reduce LDL cholesterol", "Statin therapy lowers LDL cholesterol in adults."),
    Article("12", "Aspirin for headache", "Aspirin relieves tension headache."),
]


@pytest.fixture()
def store(tmp_path: Path) -> DocumentStore:
    store = DocumentStore.create(tmp_path / "store")
    with store.transaction() as tx:
        tx.upsert(DOCS, FileStats("fixture"))
    return store


def test_an_encoder_is_loaded_once_per_identity_and_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real = HashEncoder.from_config

    def counted(cls: type[HashEncoder], cfg: Any, ctx: Any = None) -> HashEncoder:
        loads.append(cfg.dim)
        return real(cfg, ctx)

    monkeypatch.setattr(HashEncoder, "from_config", classmethod(counted))
    models = ModelCache()
    with Context(load_settings("offline"), models=models) as ctx:
        first = ctx.encoder(HASH)
        assert ctx.encoder(validate_config("encoder", HASH)) is first  # a dict or a config: the same identity
        assert ctx.build("encoder", validate_config("encoder", HASH)) is first
        other = ctx.encoder({"backend": "hash-bow", "dim": 8})
        assert other is not first and other.dim == 8
        with Context(load_settings("offline"), models=models) as again:  # a shared model cache
            assert again.encoder(HASH) is first
    assert loads == [16, 8]
    assert isinstance(first, Encoder)
    models.close()


def test_a_context_without_a_store_makes_an_llm_and_a_stance_judge() -> None:
    settings = load_settings("offline", ["llm.backend=rules", "llm.cache=false"])
    with Context(settings) as ctx:
        llm = ctx.llm()
        assert isinstance(llm, RuleLLM) and isinstance(llm, LLM)
        assert ctx.llm() is llm  # made once
        judge = ctx.build("stance", validate_config("stance", "overlap"))
        assert isinstance(judge, StanceClassifier)
        assert ctx.build("stance", validate_config("stance", "none")) is None  # the stage switched off
        with pytest.raises(ConfigError, match="needs a document store"):  # said when an index is asked for
            ctx.index("bm25")


def test_an_llm_built_from_a_config_gets_its_cache_and_is_closed_with_the_context(tmp_path: Path) -> None:
    settings = load_settings("offline", ["llm.backend=openai", "llm.model=m", f"llm.cache_dir={tmp_path}"])
    ctx = Context(settings)
    llm = ctx.build("llm", settings.llm)  # no request is made: the server is asked only by ctx.llm()
    assert isinstance(llm, OpenAIBackend) and llm.cache is not None
    assert llm.cache.path == tmp_path / "llm-cache.sqlite"
    ctx.close()
    with pytest.raises(RuntimeError, match="closed"):
        llm.cache.get("key")
    off = load_settings("offline", ["llm.backend=openai", "llm.model=m", "llm.cache=false"])
    with Context(off) as plain:
        uncached = plain.build("llm", off.llm)
        assert isinstance(uncached, OpenAIBackend) and uncached.cache is None


def test_an_index_is_built_once_and_shared(store: DocumentStore) -> None:
    settings = load_settings("offline")
    with Context(settings, store) as ctx:
        index = ctx.index("bm25")
        assert isinstance(index, SparseIndex)
        assert ctx.index("bm25") is index
        assert ctx.open_indexes() == {"bm25": index}
        assert [h.pmid for h in index.search("statin cholesterol", 1)] == ["11"]
        with pytest.raises(ConfigError, match="no index named 'nope'"):
            ctx.index("nope")


@pytest.mark.parametrize(("stage", "config", "protocol"), [
    ("querygen", "original", QueryGenerator),
    ("retriever", {"backend": "bm25", "index": "bm25"}, Retriever),
    ("rerank", {"backend": "embedding", "model": HASH}, Reranker),
    ("evidence", "snippets", EvidenceSelector),
    ("generate", "extractive", Generator),
    ("stance", "overlap", StanceClassifier),
    ("encoder", HASH, Encoder),
])
def test_a_typed_build_returns_the_stage_protocol(store: DocumentStore, stage: str, config: object,
                                                  protocol: type) -> None:
    with Context(load_settings("offline"), store) as ctx:
        assert isinstance(ctx, BuildContext)
        built = ctx.build(stage, validate_config(stage, config))
        assert isinstance(built, protocol), f"{stage}: {type(built).__name__} is not a {protocol.__name__}"


def test_a_backend_of_one_stage_is_not_another_stages_protocol() -> None:
    """The protocol checks above can fail: a stance judge is no reranker, an encoder no LLM."""
    with Context(load_settings("offline")) as ctx:
        judge = ctx.build("stance", validate_config("stance", "overlap"))
        encoder = ctx.encoder(HASH)
    assert not isinstance(judge, Reranker)
    assert not isinstance(encoder, LLM)
