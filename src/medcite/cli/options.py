"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..config import Settings, load_settings


def settings_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--preset`` and repeatable ``--set a.b=value`` to a command."""
    f = click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="Override one setting, e.g. --set retrieve.k=50 (repeatable).",
    )(f)
    f = click.option("--preset", default="offline", show_default=True, help="Preset name or path to a .json preset.")(f)
    return f


def resolve(preset: str, overrides: tuple[str, ...]) -> Settings:
    return load_settings(preset, list(overrides))
