"""Index engines: what serves the settings' named indexes (``indexes``), chosen by ``index.backend``.

An engine is registered under the registry stage ``engine`` and found by name when the settings validate
(:meth:`medcite.config.Settings`): its :meth:`IndexEngine.serve` returns the named indexes and the
retrieval branches as that engine serves them. ``embedded`` (the default) keeps every entry of ``indexes``
on its own backend (tantivy, bm25s, FAISS: folders under the document store); ``milvus``
(:mod:`medcite.index.milvus.engine`) moves every one to a Milvus server. A new engine is one module with a
class like these and one registration line; the settings tree is not edited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

from ..settings_base import BackendConfig

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["EmbeddedEngine", "IndexEngine", "Served"]


class Served(NamedTuple):
    """The named indexes (name -> index config) and the retrieval branches (retriever configs) an engine serves."""

    indexes: dict[str, BackendConfig]
    branches: list[BackendConfig]


class IndexEngine(Protocol):
    """A registered engine (registry stage ``engine``): given validated settings, the indexes and branches it
    serves them with. It must return its input unchanged when nothing moves, and validated configs otherwise
    (they are set on the settings without validating them again)."""

    #: the ``medcite index`` command that builds everything this engine serves at once (None: each named index
    #: is built by its own backend's command)
    build_command: ClassVar[str | None]
    #: the section of ``index`` that holds this engine's own options (``milvus``: ``index.milvus``; None: none)
    options_section: ClassVar[str | None]

    @classmethod
    def serve(cls, settings: Settings) -> Served: ...


class EmbeddedEngine:
    """``index.backend=embedded``: each entry of ``indexes`` is served by its own backend, as configured."""

    build_command: ClassVar[str | None] = None
    options_section: ClassVar[str | None] = None

    @classmethod
    def serve(cls, settings: Settings) -> Served:
        return Served(dict(settings.indexes), list(settings.retrieve.branches))
