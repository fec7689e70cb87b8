"""Typed error hierarchy. Every message says what was wrong and how to fix it."""

from __future__ import annotations


class MedciteError(Exception):
    """Base class of every error medcite raises on purpose.

    ``hint`` tells the user how to fix the problem; the CLI prints it after the message.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(MedciteError):
    """Invalid settings, unknown backend or preset, inconsistent options."""


class InputError(MedciteError):
    """A user-supplied file or value is malformed. Carries the file and position when known."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        path: str | None = None,
        position: str | None = None,
    ) -> None:
        where = ""
        if path:
            where = f"{path}"
            if position:
                where += f" ({position})"
            where += ": "
        super().__init__(where + message, hint)
        self.path = path
        self.position = position


class IndexMismatchError(MedciteError):
    """An index or store on disk does not match what the caller expects (settings, corpus, encoder)."""


class CorruptIndexError(MedciteError):
    """An index or store folder is damaged or incomplete; it is never used silently."""


class MissingExtraError(MedciteError, ImportError):
    """An optional dependency is missing; the hint is the exact pip command."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the Python package '{package}', which is not installed.",
            hint=f"pip install 'medcite[{extra}]'",
        )
        self.package = package
        self.extra = extra


class LLMError(MedciteError):
    """A language-model call failed. ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, hint: str | None = None, *, retryable: bool = False) -> None:
        super().__init__(message, hint)
        self.retryable = retryable


class WriteError(MedciteError):
    """A write the file system refused: ``reason`` is "disk full", "file too large", "read-only" or "disk I/O
    error". The message names the path, the space the step needs where known, and what was kept (nothing already
    written is lost: the step is rolled back to where it began). :mod:`medcite.write_failures` makes them."""

    def __init__(self, path: str, reason: str, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.path = path
        self.reason = reason


class DiskFullError(WriteError):
    """A write failed for lack of space; what was being written was rolled back to before the step."""

    def __init__(self, path: str, device: str, *, kept: str = "nothing already written was lost",
                 need: str = "") -> None:
        super().__init__(
            path, "disk full", f"disk full: no space left on {device} while writing {path}{need}; {kept}",
            hint="free some space there (or write elsewhere) and run the command again: it goes on from there",
        )
        self.device = device


class BusyError(MedciteError):
    """Another process holds what this command needs (an index it is building) longer than the wait allowed.

    Trying again later can succeed: ``retryable`` is True. ``lock``: the lock file; ``holder``: its holder's pid.
    """

    retryable = True

    def __init__(self, message: str, hint: str | None = None, *, lock: str, holder: int | None) -> None:
        super().__init__(message, hint)
        self.lock = lock
        self.holder = holder
