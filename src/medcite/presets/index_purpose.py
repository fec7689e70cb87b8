"""Why a context builds an index, and how to do without it: the :class:`~medcite.announce.Purpose` of a long
first-use build (``ctx.index(name)``), read from the settings alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .. import registry
from ..announce import Purpose
from ..set_option import set_line

if TYPE_CHECKING:
    from ..config import Settings

#: the `medcite index` sub-command that builds an index of each kind ahead of time, and its default --index
_BUILD_COMMAND = {"sparse": ("bm25", "bm25"), "vector": ("dense", "dense")}


def index_purpose(settings: Settings, name: str, *, grounding: bool = False, store: Path | None = None) -> Purpose:
    """Which stages of ``settings`` use index ``name``, and the options that run without it (or build it first).

    ``grounding``: a Task A run (``medcite ground``), where another preset is no way out (the grounding preset
    is what it runs); ``store``: named in the command that builds the index ahead of time.
    """
    preset = settings.preset
    branches = list(settings.retrieve.branches)
    using = [b for b in branches if getattr(b, "index", None) == name]
    readers = [(path, node) for path, node in users(settings, name) if not path.startswith("retrieve.branches")]
    why = []
    if using:
        labels = ", ".join(repr(b.label or b.backend) for b in using)
        why.append(f"searches it in its retrieve branch{'es' if len(using) > 1 else ''} {labels}")
    why += [f"reads it in {path} ({getattr(node, 'backend', '?')})" for path, node in readers]
    avoid = []
    rest = [b for b in branches if getattr(b, "index", None) != name]
    if using and rest and not readers:
        avoid.append(f"{set_line('retrieve.branches', branch_value(rest))} (the preset without "
                     f"{'these branches' if len(using) > 1 else 'this branch'})")
    if not grounding and preset != "offline" and not _offline_uses(name):
        avoid.append("--preset offline (BM25 only)")
    avoid.append(f"build it beforehand, once: {build_command(settings, name, store)}")
    return Purpose(index=name, why=f"preset {preset!r} {' and '.join(why) or 'needs it'}", avoid=tuple(avoid))


def users(settings: Settings, name: str) -> Iterator[tuple[str, BaseModel]]:
    """Every config in the settings tree (outside ``indexes``) whose ``index`` field names ``name``, with its
    dotted path (``retrieve.branches[1]``, ``rerank``)."""

    def walk(node: object, path: str) -> Iterator[tuple[str, BaseModel]]:
        if isinstance(node, BaseModel):
            if getattr(node, "index", None) == name and path:
                yield path, node
            for field in type(node).model_fields:
                if not (path == "" and field == "indexes"):
                    yield from walk(getattr(node, field), f"{path}.{field}" if path else field)
        elif isinstance(node, (list, tuple)):
            for i, item in enumerate(node):
                yield from walk(item, f"{path}[{i}]")
        elif isinstance(node, dict):
            for key, item in node.items():
                yield from walk(item, f"{path}.{key}")

    yield from walk(settings, "")


def branch_list(branches: list[Any]) -> str:
    """The ``retrieve.branches`` value of ``branches`` for ``--set``, as JSON text (:func:`branch_value`)."""
    return json.dumps(branch_value(branches), separators=(",", ":"))


def branch_value(branches: list[Any]) -> list[Any]:
    """The ``retrieve.branches`` value of ``branches``: backend names where a branch is its backend's default,
    else the settings that differ from it."""
    out: list[Any] = []
    for branch in branches:
        if branch == registry.validate_config("retriever", branch.backend):
            out.append(branch.backend)
        else:
            out.append({"backend": branch.backend, **branch.model_dump(mode="json", exclude_defaults=True)})
    return out


def build_command(settings: Settings, name: str, store: Path | None) -> str:
    """The `medcite index` command that builds index ``name`` of these settings into the folder a run uses."""
    where = f"--store {store}" if store is not None else "--store STORE"
    preset = f"--preset {settings.preset}"
    engine_command = registry.load("engine", settings.index.backend).build_command
    if engine_command is not None:  # one command builds everything the engine serves (a Milvus collection)
        return f"{engine_command} {where} {preset}"
    kind = getattr(settings.indexes[name], "kind", "")
    command, default = _BUILD_COMMAND.get(kind, ("dense", "dense"))
    line = f"medcite index {command} {where} {preset}" + ("" if name == default else f" --index {name}")
    return line + ("" if _as_in_preset(settings, name) else " (with this run's --set options)")


def _as_in_preset(settings: Settings, name: str) -> bool:
    """Index ``name`` is the one the preset alone defines (no --set changed what it holds)."""
    from ..config import load_settings

    try:
        mine = load_settings(settings.preset).indexes.get(name)
    except Exception:  # noqa: BLE001 - a preset file moved since: say nothing about it
        return True
    return mine is not None and mine.identity() == settings.indexes[name].identity()


def _offline_uses(name: str) -> bool:
    from ..config import load_settings

    return any(True for _ in users(load_settings("offline"), name))
