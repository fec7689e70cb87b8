"""Options shared by several commands."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ..config import Settings, load_settings

#: a command function that a decorator returns with options added (its signature is click's business)
Decorated = TypeVar("Decorated", bound=Callable[..., object])


def preset_options(default: str, *, retracted: bool = False, offline: bool = True) -> Callable[[Decorated], Decorated]:
    """Add ``--preset`` (default ``default``) and repeatable ``--set a.b=value`` to a command; with
    ``retracted`` also ``--allow-retracted`` (:func:`retracted_option`); with ``offline`` also ``--offline``
    (:func:`offline_option`: :func:`resolve` then runs the preset on this machine)."""

    def decorate(f: Decorated) -> Decorated:
        if retracted:
            f = retracted_option(f)
        if offline:
            f = offline_option(f)
        f = click.option(
            "--set", "overrides", multiple=True, metavar="KEY=VALUE",
            help="Override one setting, e.g. --set retrieve.k=50 (repeatable).",
        )(f)
        return click.option("--preset", default=default, show_default=True,
                            help="Preset name or path to a .json preset.")(f)

    return decorate


settings_options = preset_options("offline")
#: the options of the commands that answer questions: ``--preset``, ``--set``, ``--offline`` and ``--allow-retracted``
answer_options = preset_options("offline", retracted=True)
#: the options of a command that passes the preset on to a workflow, which resolves it (no ``--offline``)
workflow_options = preset_options("offline", offline=False)

#: where :func:`offline_option` leaves the flag for :func:`resolve` (click's per-invocation ``meta``)
_OFFLINE = "medcite.offline"


def offline_option(f: Decorated) -> Decorated:
    """Add ``--offline``: :func:`resolve` applies the preset's offline swaps (models this machine lacks -> their
    stand-ins, a server LLM -> the packaged local one) before the user's ``--set`` values."""

    @functools.wraps(f)
    def wrapper(*args: Any, offline: bool = False, **kwargs: Any) -> Any:
        click.get_current_context().meta[_OFFLINE] = offline
        return f(*args, **kwargs)

    return cast(Decorated, click.option(
        "--offline", is_flag=True,
        help="Run the preset on this machine: models it lacks become their packaged stand-ins and a server LLM "
        "the packaged local one (`medcite config presets --long` lists the swaps per preset).",
    )(wrapper))


def retracted_option(f: Decorated) -> Decorated:
    """Add ``--allow-retracted``: it becomes the override ``retrieve.allow_retracted=true`` (appended to the
    command's ``overrides``), so a retracted article may be retrieved and cited (it is still marked)."""

    @functools.wraps(f)
    def wrapper(*args: Any, allow_retracted: bool = False, **kwargs: Any) -> Any:
        if allow_retracted:
            kwargs["overrides"] = (*kwargs.get("overrides", ()), "retrieve.allow_retracted=true")
        return f(*args, **kwargs)

    return cast(Decorated, click.option(
        "--allow-retracted", is_flag=True,
        help="Keep retracted articles in the rankings (they are dropped by default, so no answer cites one); "
        "they are marked RETRACTED wherever shown.",
    )(wrapper))


def _known_designs(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an unknown design name before anything is built, naming the choices."""
    from ..design.base import parse_designs
    from ..errors import ConfigError

    if value is not None:
        try:
            parse_designs([value])
        except ConfigError as exc:
            raise click.BadParameter(f"{exc.message}; {exc.hint}") from None
    return value


def design_options(f: Decorated) -> Decorated:
    """Add ``--design rct,meta-analysis`` and ``--humans``: they become the overrides ``design.only`` and
    ``design.humans`` (appended to the command's ``overrides``), so every first-stage run keeps only articles of
    those study designs (and human studies)."""

    @functools.wraps(f)
    def wrapper(*args: Any, design: str | None = None, humans: bool = False, **kwargs: Any) -> Any:
        extra = ([f"design.only={json.dumps(design)}"] if design else []) + (["design.humans=true"] if humans else [])
        if extra:
            kwargs["overrides"] = (*kwargs.get("overrides", ()), *extra)
        return f(*args, **kwargs)

    with_humans = click.option(
        "--humans", is_flag=True, help="Keep only human studies (MEDLINE's Humans check tag, else predicted).",
    )(wrapper)
    return cast(Decorated, click.option(
        "--design", default=None, metavar="DESIGNS", callback=_known_designs,
        help="Keep only articles of these study designs, comma-separated: meta-analysis, rct, clinical-trial, "
        "cohort, cross-sectional, case-report, review, guideline, animal, in-vitro, other (PubMed's indexing where "
        "a record has it, else predicted from its title and abstract).",
    )(with_humans))


def resolve(preset: str, overrides: tuple[str, ...], *, grounding: bool = False) -> Settings:
    """The preset with the user's ``--set`` values; with ``--offline`` given, run on this machine (``grounding``:
    a Task A command, whose stance stage is swapped too)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(_OFFLINE):
        from ..workflows.tasks import settings_for

        return settings_for(preset, overrides, offline=True, no_llm=False, grounding=grounding)
    return load_settings(preset, list(overrides))
