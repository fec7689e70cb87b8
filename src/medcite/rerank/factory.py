"""Build the reranker the settings name (through the registry, stage ``"rerank"``)."""

from __future__ import annotations

from ..config import RerankSettings
from ..errors import ConfigError
from ..registry import load
from .base import Reranker

ENSEMBLES = ("ensemble-union", "ensemble-weighted")


def build_reranker(settings: RerankSettings) -> Reranker | None:
    """The reranker of ``settings.backend`` built from the settings, or None for ``"none"``."""
    if settings.backend == "none":
        return None
    cls = load("rerank", settings.backend)
    reranker: Reranker = cls.from_settings(settings)
    return reranker


def member_settings(settings: RerankSettings, spec: str) -> RerankSettings:
    """Settings of one ensemble member from ``"backend"`` or ``"backend:model"`` (other fields shared)."""
    backend, _, model = spec.partition(":")
    backend = backend.strip()
    if not backend or backend in ENSEMBLES:
        raise ConfigError(
            f"ensemble member {spec!r} is not a single reranker",
            hint="write members as 'backend' or 'backend:model', e.g. 'cross-encoder:minilm-l12'",
        )
    return settings.model_copy(
        update={"backend": backend, "model": model.strip() or None, "members": [], "weights": []}
    )
