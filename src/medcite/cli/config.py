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
        status = models_status(name)
        if status:
            click.echo(f"{'':<{width}}  {status}")


def models_status(preset: str) -> str:
    """``needs: medcite models build PRESET --corpus STORE, ~N min`` when a trained model the preset's retrieval
    loads is missing, ``models: present`` when it loads some and all are here, else nothing."""
    from ..config import load_settings
    from ..errors import MedciteError
    from ..trained_models import CATALOGUE, build_command, build_order, is_present, minutes, retrieval_models

    try:
        names = retrieval_models(load_settings(preset))
    except MedciteError:
        return ""
    if not names:
        return ""
    if all(is_present(n) for n in names):
        return f"models: present ({', '.join(names)})"
    absent = [n for n in build_order([n for n in names if not is_present(n)]) if not is_present(n)]
    if all(n in CATALOGUE for n in absent):
        return f"needs: {build_command(preset)}, ~{minutes(absent)} min ({', '.join(absent)})"
    return f"needs: {', '.join(absent)} (medcite train ...; docs/MODELS.md)"


# a full stop ends a sentence unless it ends an abbreviation ("et al.", "e.g.", "vs.")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)\.\s+(?=[A-Z(])")


def first_sentence(text: str) -> str:
    """The first sentence of a preset description."""
    m = _SENTENCE_END.search(text)
    return text if m is None else text[: m.start() + 1]
