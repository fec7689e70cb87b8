"""`medcite config`: show resolved settings and list presets."""

from __future__ import annotations

import json
import re
import textwrap

import click

from ..config import preset_description, preset_names
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
@click.option("--long", "full", is_flag=True, help="Print each preset's whole description.")
def presets(full: bool) -> None:
    """List the shipped presets, each with the first sentence of its description."""
    names = preset_names()
    width = max((len(n) for n in names), default=0)
    for name in names:
        text = " ".join(preset_description(name).split())
        if not full:
            text = textwrap.shorten(first_sentence(text), width=max(40, 118 - width), placeholder=" ...")
        click.echo(f"{name:<{width}}  {text}".rstrip())


# a full stop ends a sentence unless it ends an abbreviation ("et al.", "e.g.", "vs.")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)\.\s+(?=[A-Z(])")


def first_sentence(text: str) -> str:
    """The first sentence of a preset description."""
    m = _SENTENCE_END.search(text)
    return text if m is None else text[: m.start() + 1]
