"""Build or update a BM25 index of a document store (``medcite index bm25``): the sparse index of the settings'
``indexes[name]`` in the folder the user names, or the one under the store that presets use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_settings
from ..errors import ConfigError
from ..set_option import set_line

if TYPE_CHECKING:
    from ..index.sparse.base import UpdateReport


@dataclass
class SparseBuild:
    """Where the index is, whether it existed before (an update), and what the build did."""

    folder: Path
    existed: bool
    report: UpdateReport


def build_bm25(store: Path, out: Path | None, name: str, preset: str, overrides: Sequence[str], *,
               backend: str | None = None, k1: float | None = None, b: float | None = None,
               rebuild: bool = False) -> SparseBuild:
    """Build (or update) the sparse index ``name`` of ``preset`` (with ``backend``, ``k1``, ``b`` set when given)
    over ``store`` in ``out`` (None: the folder under ``store/indexes/`` that presets use)."""
    from ..corpus.store import DocumentStore
    from ..index.base import index_folder
    from ..index.sparse.base import SparseConfig, build_sparse

    extra = [f"indexes.{name}.{k}={v}" for k, v in (("backend", backend), ("k1", k1), ("b", b)) if v is not None]
    cfg = load_settings(preset, [*overrides, *extra]).indexes.get(name)
    if not isinstance(cfg, SparseConfig):
        raise ConfigError(f"the settings have no sparse index named {name!r}",
                          hint="use --index bm25, or define it: " + set_line("indexes.NAME.backend", "tantivy"))
    out = out or index_folder(store, cfg)
    existed = (out / "manifest.json").exists() and not rebuild
    with DocumentStore.open(store) as docs:
        report = build_sparse(docs, out, cfg, rebuild=rebuild)
    return SparseBuild(out, existed, report)
