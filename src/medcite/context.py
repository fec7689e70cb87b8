"""What a backend's ``from_config(cfg, ctx)`` receives: the :class:`BuildContext` protocol and the model cache.

The pipeline implements the context (:class:`medcite.pipeline.context.Context`); stages only use this
protocol, so they never build another stage's backends by hand: an ensemble asks ``ctx.build("rerank",
member)``, a listwise reranker ``ctx.llm(cfg.llm)``, a retriever ``ctx.index(cfg.index)``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from .config import Settings
    from .corpus.store import DocumentStore
    from .llm.base import LLM
    from .settings_base import BackendConfig

log = logging.getLogger(__name__)

T = TypeVar("T")


class ModelCache:
    """Loaded models shared by every stage of a context (and by contexts that share this cache).

    ``get(key, load)`` returns the object cached under ``key`` or loads it once; the same encoder used by a
    dense index and an embedding reranker is loaded once. :meth:`close` closes what has a ``close()``.
    """

    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                return self._items[key]  # type: ignore[no-any-return]
        value = load()
        with self._lock:
            return self._items.setdefault(key, value)  # type: ignore[no-any-return]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def close(self) -> None:
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            close = getattr(item, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # noqa: BLE001 - one failed close must not keep the others open
                    log.warning("closing %r failed: %s", item, exc)


@runtime_checkable
class BuildContext(Protocol):
    """Shared resources handed to every ``from_config``; the context owns (and closes) what it opens."""

    settings: Settings
    store: DocumentStore | None
    models: ModelCache

    def llm(self, name: str | None = None, *, purpose: str = "") -> LLM:
        """The LLM ``name`` (None: ``settings.llm``; else an entry of ``settings.llms``), made once and
        shared. Raises ConfigError, naming ``purpose`` and the offline swap, when it is the ``none`` backend."""
        ...

    def index(self, name: str) -> Any:
        """The index ``settings.indexes[name]``, built or brought up to date with the store, opened once."""
        ...

    def open_indexes(self) -> dict[str, Any]:
        """The indexes opened so far, by name (a reranker may reuse one's stored vectors)."""
        ...

    def build(self, stage: str, cfg: BackendConfig) -> Any:
        """Build another backend through the same path (e.g. an ensemble's members)."""
        ...
