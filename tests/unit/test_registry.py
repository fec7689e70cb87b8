"""The registry and the settings it validates: one registration line opens a stage to a new backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite import registry
from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError
from medcite.pipeline import RetrievalPipeline
from medcite.types import Article, Topic


@pytest.fixture
def reverse() -> Iterator[None]:
    registry.register("rerank", "reverse", "medcite_fakes:ReverseReranker")
    try:
        yield
    finally:
        del registry._BACKENDS["rerank"]["reverse"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DocumentStore]:
    s = DocumentStore.create(tmp_path / "store")
    with s.transaction() as tx:
        tx.upsert([Article(str(i), f"statin study {i}", "statins " * i) for i in range(1, 6)], FileStats("x"))
    yield s
    s.close()


def test_one_registration_line_makes_a_backend_usable_everywhere(reverse: None, store: DocumentStore) -> None:
    settings = load_settings("bm25", ["rerank.backend=reverse", "rerank.keep_first=true", "rerank.k=3"])
    assert settings.rerank.keep_first is True  # type: ignore[attr-defined]
    pipe = RetrievalPipeline.from_settings(settings, store=store)
    out = pipe.retrieve(Topic("t", "statins"))
    first = [h.pmid for h in out.rankings["retrieval"]]
    assert [h.pmid for h in out.final] == [first[0], *first[1:][::-1]][:3]
    pipe.close()
    shown = CliRunner().invoke(cli, ["config", "show", "--preset", "bm25", "--set", "rerank.backend=reverse"])
    assert shown.exit_code == 0 and json.loads(shown.output)["settings"]["rerank"]["backend"] == "reverse"
    assert "reverse" in registry.names("rerank")


def test_unknown_backends_and_fields_name_the_choices() -> None:
    with pytest.raises(ConfigError,
                       match="unknown rerank backend 'nope'; choose one of: cascade, colbert, cross-encoder"):
        load_settings("offline", ["rerank.backend=nope"])
    with pytest.raises(ConfigError, match=r"rerank\.window: Extra inputs are not permitted"):
        load_settings("offline", ["rerank.backend=cross-encoder", "rerank.window=3"])  # a listwise option
    with pytest.raises(ConfigError, match="name the retriever backend"):
        load_settings("offline", ['retrieve.branches=[{"k": 3}]'])
    with pytest.raises(ConfigError, match="not a section"):
        load_settings("narrow", ["retrieve.k.x=1"])  # narrow sets retrieve.k=25


def test_switching_a_section_to_another_backend_drops_what_it_does_not_have() -> None:
    ce = load_settings("clac25-a")
    assert ce.rerank.backend == "cross-encoder" and ce.rerank.top_n == 25
    none = load_settings("clac25-a", ["rerank.backend=none"])
    assert none.rerank.backend == "none" and none.rerank.top_n == 25 and not hasattr(none.rerank, "model")
    local = load_settings("clac25-a", ["llm.backend=local", "llm.model=null"])
    assert local.llm.backend == "local" and not hasattr(local.llm, "base_url")
    onnx = load_settings("hybrid", ["indexes.dense.encoder=minilm-onnx", "indexes.dense.encoder.batch_size=8"])
    assert (onnx.indexes["dense"].encoder.backend, onnx.indexes["dense"].encoder.batch_size) == ("onnx-minilm", 8)


def test_shorthands_and_defaults() -> None:
    s = load_settings("offline", ['retrieve.branches=["bm25", {"backend": "dense", "k": 5}]'])
    assert [(b.backend, b.index, b.k) for b in s.retrieve.branches] == [("bm25", "bm25", None), ("dense", "dense", 5)]
    assert set(s.indexes) == {"bm25", "dense"}  # the defaults stay when a preset adds none
    extra = load_settings("offline", ['indexes.medcpt={"backend": "faiss", "encoder": "medcpt"}'])
    assert set(extra.indexes) == {"bm25", "dense", "medcpt"}
    assert extra.indexes["medcpt"].encoder.query_model == "ncbi/MedCPT-Query-Encoder"
    ens = registry.validate_config("rerank", {"backend": "ensemble-union", "members": ["cross-encoder:minilm-l12"]})
    assert ens.members[0].model == "minilm-l12"  # type: ignore[attr-defined]
    assert ens.model_names() == ["cross-encoder/ms-marco-MiniLM-L-12-v2"]
