"""`medcite config`: show resolved settings and list presets."""

from __future__ import annotations

import json

import click

from ..config import preset_names
from .options import resolve, settings_options


@click.group("config")
def config_group() -> None:
    """Inspect settings and presets."""


@config_group.command("show")
@settings_options
def show(preset: str, overrides: tuple[str, ...]) -> None:
    """Print the fully resolved settings as JSON (with their hash)."""
    settings = resolve(preset, overrides)
    click.echo(json.dumps({"hash": settings.hash(), "settings": settings.model_dump(mode="json")}, indent=2))


@config_group.command("presets")
def presets() -> None:
    """List the shipped presets."""
    for name in preset_names():
        click.echo(name)
