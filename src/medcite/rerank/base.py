"""The rerank stage: its protocol, its base config and the stage's shorthand.

Every reranker scores (query, article) pairs and returns the top ``k``. Articles are passed in (looked up
once from the document store by the pipeline), so rerankers never open stores themselves. A reranker
that can use several query variants (MedCPT averages their vectors) also implements
:class:`VariantReranker`; the pipeline then hands it the whole query set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import Field

from ..settings_base import BackendConfig
from ..types import Article, Hit


class RerankConfig(BackendConfig):
    """Base of every reranker's settings: how many hits it reads and keeps."""

    #: False: it reorders nothing, the first stage's fused ranking is final (the ``none`` reranker)
    reranks: ClassVar[bool] = True

    top_n: int = Field(100, ge=1, description="Best input hits read by the reranker; the rest are dropped.")
    k: int = Field(10, ge=1, description="Hits kept after reranking.")

    def offline_swap(self, available: Callable[[str], bool]) -> RerankConfig | None:
        """The stand-in that runs this reranker's stages on this machine when some model it loads is not
        ``available``: a config of the same shape, same budgets (``self`` when none is needed).
        None: no offline stand-in (the offline check then fails before any work, naming the models).

        Default: None. A reranker that loads models declares its stand-in here.
        """
        return None


#: the stand-in of a hub-only pointwise reranker: the packaged all-MiniLM-L6-v2, cosine of query and article
MINILM_STAND_IN: dict[str, object] = {"backend": "embedding", "model": "minilm"}


def swapped(cfg: RerankConfig, changes: Mapping[str, object]) -> RerankConfig:
    """``cfg`` with the fields ``changes`` replaced (a new ``backend`` keeps only its own fields), validated as
    the config of the backend it names."""
    from ..registry import config_class

    # the fields that differ from the defaults, as the typed values they hold (nested configs stay configs)
    data: dict[str, object] = {k: getattr(cfg, k) for k in cfg.model_dump(exclude_defaults=True)}
    data["backend"] = cfg.backend
    backend = changes.get("backend", cfg.backend)
    fields = config_class("rerank", str(backend)).model_fields
    if backend != cfg.backend:
        data = {k: v for k, v in data.items() if k in fields}
    data.update(changes)
    out = config_class("rerank", str(backend)).model_validate(data)
    if not isinstance(out, RerankConfig):  # pragma: no cover - every rerank backend's config is one
        raise TypeError(f"rerank backend {backend!r} has no RerankConfig")
    return out


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        """Rescore ``hits`` for ``query``; return the best ``k`` with new scores, ranks from 1.

        Hits whose PMID is missing from ``articles`` are dropped (they cannot be read, so they are never cited).
        """
        ...


@runtime_checkable
class VariantReranker(Reranker, Protocol):
    """A reranker that reads the question together with its query variants (reformulations)."""

    def rerank_variants(
        self, queries: Sequence[str], hits: Sequence[Hit], articles: Mapping[str, Article], k: int
    ) -> list[Hit]:
        """Like :meth:`rerank`; ``queries[0]`` is the question, the rest are its variants."""
        ...


def parse_reranker(text: str) -> dict[str, Any]:
    """The rerank shorthand: ``"backend"`` or ``"backend:model"`` (e.g. ``"cross-encoder:minilm-l12"``,
    ``"embedding:models:medcite-minilm-bi-bioasq"``), as ensemble members are written."""
    backend, sep, model = text.strip().partition(":")
    data: dict[str, Any] = {"backend": backend.strip()}
    if sep and model.strip():
        data["model"] = model.strip()
    return data
