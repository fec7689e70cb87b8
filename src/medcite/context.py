"""What a backend's ``from_config(cfg, ctx)`` receives: the :class:`BuildContext` protocol and the model cache.

The build context is the only factory: the pipeline implements it (:class:`medcite.pipeline.context.Context`),
and stages, training, evaluation and the CLI ask it for what they need, so nothing builds a backend by hand:
an ensemble asks ``ctx.build("rerank", member)``, a listwise reranker ``ctx.llm(cfg.llm)``, a retriever
``ctx.index(cfg.index)``, an embedding reranker ``ctx.encoder(cfg.model)``. ``build`` is typed per stage: it
returns that stage's protocol (``None`` from the ``none`` reranker and stance judge, which switch the stage off).

This module sits below every stage: it imports the stage protocols for typing only, and no stage module it
names imports it back at import time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeVar, cast, overload, runtime_checkable

if TYPE_CHECKING:
    from .attribute.base import StanceClassifier
    from .config import IndexSettings, Settings
    from .corpus.store import DocumentStore
    from .design.base import Labeller
    from .evidence.base import EvidenceSelector
    from .generate.base import Generator
    from .index.base import IndexConfig, SparseIndex, VectorIndex
    from .index.dense.encoders import Encoder
    from .llm.base import LLM
    from .qa.base import Answerer
    from .rerank.base import Reranker
    from .retrieve.base import QueryGenerator, Retriever
    from .settings_base import BackendConfig

    #: what ``ctx.index(name)`` returns: a BM25 index or a vector index
    Index: TypeAlias = SparseIndex | VectorIndex
    #: what names an encoder: its config, a manifest's ``encoder.spec`` or a shorthand (``"minilm"``)
    EncoderSpec: TypeAlias = BackendConfig | Mapping[str, object] | str

log = logging.getLogger(__name__)


@runtime_checkable
class Closeable(Protocol):
    """What holds a resource (a model, a connection, a file) and lets it go with ``close()``."""

    def close(self) -> None: ...


T = TypeVar("T")


class ModelCache:
    """Loaded models shared by every stage of a context (and by contexts that share this cache).

    ``get(key, load)`` returns the object cached under ``key`` or loads it once; the same encoder used by a
    dense index and an embedding reranker is loaded once. :meth:`close` closes what has a ``close()``.
    """

    def __init__(self) -> None:
        self._items: dict[Hashable, object] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        # a key names one kind of object (an encoder's key an encoder), so what it holds is what load makes
        with self._lock:
            if key in self._items:
                return cast(T, self._items[key])
        value = load()
        with self._lock:
            return cast(T, self._items.setdefault(key, value))

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def close(self) -> None:
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            if isinstance(item, Closeable):
                try:
                    item.close()
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

    def encoder(self, spec: EncoderSpec) -> Encoder:
        """The encoder ``spec`` names, loaded once per identity and shared through :attr:`models`."""
        ...

    def index(self, name: str) -> Index:
        """The index ``settings.indexes[name]``, built or brought up to date with the store, opened once."""
        ...

    def open_indexes(self) -> dict[str, Index]:
        """The indexes opened so far, by name (a reranker may reuse one's stored vectors)."""
        ...

    def index_config(self, name: str) -> IndexConfig | None:
        """The settings of the index ``name`` (its entry of ``settings.indexes``; None when there is none): what a
        backend reads of an index besides opening it (its kind, analysis, backend). Backends ask the context for
        such values instead of reading ``ctx.settings`` (tests/unit/test_architecture.py checks it)."""
        ...

    def reranker_config(self) -> BackendConfig:
        """The run's reranker settings (``settings.rerank``), for a stage that scores with the same reranker."""
        ...

    def index_configs(self) -> Mapping[str, IndexConfig]:
        """Every named index's settings (``settings.indexes``), for an engine that lays several out in one place
        (Milvus: one collection holds every Milvus index of the settings)."""
        ...

    def index_engine(self) -> IndexSettings:
        """The index engine's settings (``settings.index``: the engine and its server)."""
        ...

    @overload
    def build(self, stage: Literal["querygen"], cfg: BackendConfig) -> QueryGenerator: ...
    @overload
    def build(self, stage: Literal["retriever"], cfg: BackendConfig) -> Retriever: ...
    @overload
    def build(self, stage: Literal["rerank"], cfg: BackendConfig) -> Reranker | None: ...
    @overload
    def build(self, stage: Literal["evidence"], cfg: BackendConfig) -> EvidenceSelector: ...
    @overload
    def build(self, stage: Literal["generate"], cfg: BackendConfig) -> Generator: ...
    @overload
    def build(self, stage: Literal["stance"], cfg: BackendConfig) -> StanceClassifier | None: ...
    @overload
    def build(self, stage: Literal["qa"], cfg: BackendConfig) -> Answerer: ...
    @overload
    def build(self, stage: Literal["design"], cfg: BackendConfig) -> Labeller: ...
    @overload
    def build(self, stage: Literal["llm"], cfg: BackendConfig) -> LLM: ...
    @overload
    def build(self, stage: Literal["encoder"], cfg: BackendConfig) -> Encoder: ...
    @overload
    def build(self, stage: Literal["index"], cfg: BackendConfig) -> Index: ...
    @overload
    def build(self, stage: str, cfg: BackendConfig) -> object: ...
    def build(self, stage: str, cfg: BackendConfig) -> object:
        """Build a backend of ``stage`` through the one path (e.g. an ensemble's members), typed by stage.

        The overloads are written here once: an implementation subclasses this protocol and defines
        :meth:`build_any`, which this calls."""
        return self.build_any(stage, cfg)

    def build_any(self, stage: str, cfg: BackendConfig) -> object:
        """Build a backend of ``stage`` (untyped: what :meth:`build` returns, typed by its overloads)."""
        ...
