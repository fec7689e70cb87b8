"""The ``bm25`` first-stage retriever: BM25 search of a sparse index with the query as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..errors import ConfigError
from .base import Retriever, RetrieverConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class BM25Config(RetrieverConfig):
    """BM25 (tantivy or bm25s, Lucene scoring) on each sub-query."""

    backend: Literal["bm25"] = "bm25"
    index: str = Field("bm25", description="Name of the sparse index (an entry of `indexes`) to search.")


def index_of_kind(ctx: BuildContext, name: str, kind: str, branch: str) -> Any:
    """The named index (built or synced by the context), which must be of ``kind`` (sparse or vector)."""
    index = ctx.index(name)
    have = getattr(ctx.index_config(name), "kind", "")
    if have != kind:
        raise ConfigError(
            f"the {branch!r} branch needs a {kind} index, but index {name!r} is a {have or 'unknown'} one",
            hint=f"point the branch's 'index' at a {kind} entry of `indexes`",
        )
    return index


def sparse_index(ctx: BuildContext, name: str, branch: str) -> Any:
    """The named index, which must be a sparse (BM25) one."""
    return index_of_kind(ctx, name, "sparse", branch)


class BM25Retriever:
    """Factory of the ``bm25`` branch: the sparse index itself answers ``search``/``search_many``."""

    Config = BM25Config

    @classmethod
    def from_config(cls, cfg: BM25Config, ctx: BuildContext) -> Retriever:
        return sparse_index(ctx, cfg.index, cfg.backend)
