"""Rerankers in sequence: each reads the hits the previous one kept (its own ``k``) in that one's order.

DS@GT (BioASQ 13b, "Ensembling Cross-Encoders and GPT Rerankers with LLMs") rerank the dense top 1,000 with a
fine-tuned cross-encoder, keep its top 30, and weight that cross-encoder against a GPT listwise reranker of
the same 30 (1:7): ``cascade[cross-encoder (k 30), ensemble-weighted[cross-encoder, llm-listwise] (k 10)]``.
A listwise reranker reads its window in the order it is given, so it must follow the cross-encoder in a
cascade rather than sit beside it over the first-stage order. Scores of the returned hits are the last
stage's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from ..errors import ConfigError
from ..registry import stage_field
from ..types import Article, Hit
from .base import RerankConfig, Reranker, swapped

if TYPE_CHECKING:
    from ..context import BuildContext


class CascadeConfig(RerankConfig):
    """Rerankers applied in order; each keeps its own ``k`` hits for the next (DS@GT: cross-encoder top 30, then
    its weighted ensemble with a listwise LLM, top 10)."""

    backend: Literal["cascade"] = "cascade"
    stages: list[stage_field("rerank")] = Field(  # type: ignore[valid-type]
        default_factory=list, description="The rerankers in order (configs or 'backend:model' shorthands); each "
        "one's `k` is how many hits it passes on, its `top_n` how many it reads."
    )

    @field_validator("stages")
    @classmethod
    def _only_rerankers(cls, stages: list[object]) -> list[object]:
        if any(getattr(s, "backend", None) in ("cascade", "none") for s in stages):
            raise ValueError("a cascade stage must be a reranker (not 'none', not another cascade)")
        return stages

    def model_names(self) -> list[str]:
        return [name for s in self.stages for name in s.model_names()]

    def llm_names(self) -> set[str | None]:
        return {name for s in self.stages for name in s.llm_names()}

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """Each stage whose models are not all ``available`` replaced by its own stand-in, with its ``k`` (None
        if a stage has none)."""
        stages: list[RerankConfig] = []
        for s in self.stages:
            if all(available(name) for name in s.model_names()):
                stages.append(s)
                continue
            stand_in = s.offline_swap(available)
            if stand_in is None:
                return None
            stages.append(swapped(stand_in, {"k": s.k}))
        return swapped(self, {"stages": stages})


class CascadeReranker:
    """Runs its stages in order on the survivors of the previous stage (see the module docstring)."""

    name = "cascade"
    Config = CascadeConfig

    def __init__(self, stages: Sequence[tuple[Reranker, int]]) -> None:
        if not stages:
            raise ConfigError("a cascade needs at least one reranker",
                              hint='set rerank.stages, e.g. [{"backend": "cross-encoder", "k": 30}, "llm-listwise"]')
        self.stages = list(stages)

    @classmethod
    def from_config(cls, cfg: CascadeConfig, ctx: BuildContext) -> CascadeReranker:
        stages: list[tuple[Reranker, int]] = []
        for s in cfg.stages:
            built = ctx.build("rerank", s)
            if built is None:  # the settings refuse 'none'; a plugin backend may still build to nothing
                raise ConfigError(f"cascade stage {s.backend!r} builds no reranker", hint="name a reranker backend")
            stages.append((built, s.k))
        return cls(stages)

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        current = list(hits)
        for i, (stage, keep) in enumerate(self.stages):
            last = i == len(self.stages) - 1
            current = stage.rerank(query, current, articles, min(keep, k) if last else keep)
            if not current:
                break
        return current[:k]
