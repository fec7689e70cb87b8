"""Index engines (registry stage ``engine``): ``index.backend`` names one, the registry finds it, and its own
code decides how the named indexes are served; the settings tree names no engine's logic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from medcite import registry
from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.index.engine import EmbeddedEngine, Served

if TYPE_CHECKING:
    from medcite.config import Settings


class OnlySparse:
    """A plugin engine: serves only the sparse indexes (vector ones are dropped, and so are their branches)."""

    @classmethod
    def serve(cls, settings: Settings) -> Served:
        indexes = {n: c for n, c in settings.indexes.items() if getattr(c, "kind", "") == "sparse"}
        return Served(indexes, [b for b in settings.retrieve.branches if b.index in indexes])


@pytest.fixture
def only_sparse() -> Iterator[None]:
    registry.register("engine", "only-sparse", f"{__name__}:OnlySparse")
    try:
        yield
    finally:
        del registry._BACKENDS["engine"]["only-sparse"]


def test_the_default_engine_leaves_every_index_on_its_own_backend() -> None:
    settings = load_settings("hybrid")
    assert settings.index.backend == "embedded"
    assert {n: c.backend for n, c in settings.indexes.items()} == {"bm25": "tantivy", "dense": "faiss"}
    assert [b.backend for b in settings.retrieve.branches] == ["bm25", "dense"]
    served = EmbeddedEngine.serve(settings)
    assert served.indexes == settings.indexes and served.branches == settings.retrieve.branches


def test_a_registered_engine_is_found_by_name_without_editing_the_settings_tree(only_sparse: None) -> None:
    settings = load_settings("hybrid", ["index.backend=only-sparse"])
    assert list(settings.indexes) == ["bm25"]
    assert [b.backend for b in settings.retrieve.branches] == ["bm25"]
    # the milvus engine is found the same way: its switch lives in medcite.index.milvus.engine
    assert registry.load("engine", "milvus").__module__ == "medcite.index.milvus.engine"
    assert load_settings("hybrid", ["index.backend=milvus"]).indexes["dense"].backend == "milvus-dense"


def test_an_unknown_engine_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match="unknown index engine 'qdrant': choose one of embedded, milvus"):
        load_settings("offline", ["index.backend=qdrant"])
