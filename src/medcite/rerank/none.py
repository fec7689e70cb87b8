"""The ``none`` reranker: no rerank stage, the first stage's fused ranking is final."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from .base import RerankConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class NoRerankConfig(RerankConfig):
    """No reranking: the first stage's fused ranking is final."""

    backend: Literal["none"] = "none"
    reranks: ClassVar[bool] = False


class NoReranker:
    """Builds to None, which the pipeline reads as 'no rerank stage'."""

    Config = NoRerankConfig

    @classmethod
    def from_config(cls, cfg: NoRerankConfig, ctx: BuildContext) -> None:
        return None
