"""tqdm progress bars that switch off with --quiet or when stderr is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def enabled() -> bool:
    return not _quiet and sys.stderr.isatty()


def progress(iterable: Iterable[T] | None = None, **kwargs: Any) -> Any:
    """``tqdm(iterable, **kwargs)`` with ``disable`` decided by medcite's settings."""
    kwargs.setdefault("disable", not enabled())
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, **kwargs)
