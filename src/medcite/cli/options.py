"""Options shared by several commands."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ..config import Settings, load_settings

#: a command function that a decorator returns with options added (its signature is click's business)
Decorated = TypeVar("Decorated", bound=Callable[..., object])


def preset_options(default: str, *, retracted: bool = False) -> Callable[[Decorated], Decorated]:
    """Add ``--preset`` (default ``default``) and repeatable ``--set a.b=value`` to a command; with
    ``retracted`` also ``--allow-retracted`` (:func:`retracted_option`)."""

    def decorate(f: Decorated) -> Decorated:
        if retracted:
            f = retracted_option(f)
        f = click.option(
            "--set", "overrides", multiple=True, metavar="KEY=VALUE",
            help="Override one setting, e.g. --set retrieve.k=50 (repeatable).",
        )(f)
        return click.option("--preset", default=default, show_default=True,
                            help="Preset name or path to a .json preset.")(f)

    return decorate


settings_options = preset_options("offline")
#: the options of the commands that answer questions: ``--preset``, ``--set`` and ``--allow-retracted``
answer_options = preset_options("offline", retracted=True)


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


def resolve(preset: str, overrides: tuple[str, ...]) -> Settings:
    return load_settings(preset, list(overrides))
