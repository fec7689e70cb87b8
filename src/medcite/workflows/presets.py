"""What the presets say about themselves: each documented setting's source and offline swap (``medcite config
presets --long``) and the models the presets and commands name (``medcite models list``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..presets.inventory import ModelEntry


def provenance_lines(name: str) -> list[str]:
    """Per documented setting of a preset (of a paper preset: every setting its run reads, defaults included) the
    value, where it comes from, and its offline swap; then what the run does not read."""
    from ..config import preset_task
    from ..presets import coverage, provenance

    found = provenance.paper(name)
    out = []
    if found is not None:
        title = provenance.PAPERS.get(found.get("file", ""), ("", "?"))[1]
        out.append(f"paper {found.get('file')} ({title}), run {found.get('run', '-')}, task {preset_task(name)}")
    for path, value, source, offline in coverage.setting_rows(name):
        swap = f"   [offline: {offline}]" if offline is not None else ""
        shown = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        out.append(f"{path} = {shown}   <- {source}{swap}")
    if found is not None:
        out += [f"not used by this run ({why}): {', '.join(paths)}"
                for why, paths in coverage.unused_settings(name).items()]
    return out + offline_summary(name)


def offline_summary(name: str) -> list[str]:
    """What ``--offline`` changes in a preset (a Task A run: the stance stage counted), printed from the
    difference of its settings and their offline counterpart."""
    from ..config import load_settings
    from ..errors import ConfigError
    from ..presets.offline import offline_lines

    try:
        lines = offline_lines(load_settings(name), "local", grounding=True)
    except ConfigError as exc:
        return [f"--offline: not possible ({exc.message})"]
    return ["--offline: " + (" ".join(lines) if lines else "nothing to swap (runs on this machine as it is)")]


def model_inventory(presets: Sequence[str] | None = None) -> list[ModelEntry]:
    """Every model the presets (all when None) and commands name, with where it comes from here."""
    from ..presets.inventory import inventory

    return inventory(list(presets) if presets else None)
