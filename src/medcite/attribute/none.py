"""The ``none`` stance backend: nothing is judged (no stance stage)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .base import StanceConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class NoStanceConfig(StanceConfig):
    """No stance classification: citations are not checked."""

    backend: Literal["none"] = "none"


class NoStance:
    """Builds to None: callers that need a verdict say so (e.g. Task A needs a stance backend)."""

    Config = NoStanceConfig

    @classmethod
    def from_config(cls, cfg: NoStanceConfig, ctx: BuildContext) -> None:
        return None
