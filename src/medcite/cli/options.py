"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..config import Settings, load_settings


def preset_options(default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add ``--preset`` (default ``default``) and repeatable ``--set a.b=value`` to a command."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--set", "overrides", multiple=True, metavar="KEY=VALUE",
            help="Override one setting, e.g. --set retrieve.k=50 (repeatable).",
        )(f)
        return click.option("--preset", default=default, show_default=True,
                            help="Preset name or path to a .json preset.")(f)

    return decorate


settings_options = preset_options("offline")


def resolve(preset: str, overrides: tuple[str, ...]) -> Settings:
    return load_settings(preset, list(overrides))
