"""The ``dense`` first-stage retriever: k-nearest-neighbour search of a vector index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from .base import Retriever, RetrieverConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class DenseConfig(RetrieverConfig):
    """Dense kNN with the index's encoder on each sub-query."""

    backend: Literal["dense"] = "dense"
    index: str = Field("dense", description="Name of the vector index (an entry of `indexes`) to search.")


class DenseRetriever:
    """Factory of the ``dense`` branch: the vector index itself answers ``search``/``search_many``."""

    Config = DenseConfig

    @classmethod
    def from_config(cls, cfg: DenseConfig, ctx: BuildContext) -> Retriever:
        from .bm25 import index_of_kind

        return index_of_kind(ctx, cfg.index, "vector", cfg.backend)
