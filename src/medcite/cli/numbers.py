"""Number types of CLI options: never past what SQLite, a Rust engine or numpy can hold, never inf or nan.

click's ``IntRange(min=1)`` takes any integer above the minimum (``-k 10**60`` reached tantivy as an
OverflowError) and ``FloatRange`` takes ``nan``, which compares false with every bound. Every number option
of the CLI uses one of these instead, so a bad value is a usage error naming the option.
"""

from __future__ import annotations

import math
from typing import Any

import click

from ..settings_base import MAX_HITS

#: the largest integer SQLite and a 64-bit engine hold
MAX_INT = 2**63 - 1
#: the largest seed every random generator medcite uses accepts (LightGBM's is a C int)
MAX_SEED = 2**31 - 1

__all__ = ["MAX_HITS", "MAX_INT", "MAX_SEED", "Count", "Finite"]


class Count(click.IntRange):
    """An integer from ``min`` to ``max`` (default: the largest 64-bit integer)."""

    def __init__(self, min: int = 0, max: int = MAX_INT) -> None:
        super().__init__(min, max)


class Finite(click.FloatRange):
    """A finite float, optionally within bounds (the arguments of :class:`click.FloatRange`)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number
