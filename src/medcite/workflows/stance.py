"""Classify (claim, evidence) pairs with a stance backend built by name through a build context
(``medcite stance``)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry
from ..errors import ConfigError, InputError

if TYPE_CHECKING:
    from ..config import Settings
    from ..types import StanceVerdict


class NoStanceError(ConfigError):
    """The model named builds to no judge (``--model none``)."""


def read_pairs(path: Path) -> list[tuple[str | None, str, str]]:
    """(id or None, claim, evidence) of every row; a missing column or an empty text names the row."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            missing = [c for c in ("claim", "evidence") if c not in columns]
            if missing:
                raise InputError(f"the CSV has no column {', '.join(repr(c) for c in missing)} (it has "
                                 f"{', '.join(columns) or 'no header'})", path=str(path),
                                 hint="give a header row with 'claim' and 'evidence' (an 'id' column is kept)")
            out = []
            for n, row in enumerate(reader, start=2):
                claim, evidence = (row.get("claim") or "").strip(), (row.get("evidence") or "").strip()
                if not claim or not evidence:
                    what = "claim" if not claim else "evidence"
                    raise InputError(f"row {n} has an empty {what}", path=str(path),
                                     hint="every row needs a claim and an evidence text")
                out.append((row.get("id"), claim, evidence))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc})", path=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"not a readable CSV ({exc})", path=str(path)) from None
    if not out:
        raise InputError("the CSV has no rows", path=str(path))
    return out


def classify_pairs(settings: Settings, model: str, pairs: list[tuple[str | None, str, str]]) -> list[StanceVerdict]:
    """The verdict of every (id, claim, evidence) pair by ``model``: a stance backend name (``settings.stance``
    when it is that backend), else a classifier model (folder, ``models:NAME`` or a Hugging Face name)."""
    from ..pipeline import Context

    # a model named here keeps where the settings run the stance stage (--set stance.device=..., dtype, batch size)
    if model in registry.names("stance"):
        cfg = settings.stance if settings.stance.backend == model else registry.validate_config(
            "stance", registry.runtime_kept("stance", model, settings.stance))
    else:
        cfg = registry.validate_config("stance", registry.runtime_kept(
            "stance", {"backend": "classifier", "model": model}, settings.stance))
    with Context(settings) as ctx:
        judge = ctx.build("stance", cfg)
        if judge is None:
            raise NoStanceError("--model none judges nothing")
        verdicts: list[StanceVerdict] = judge.classify([(claim, evidence) for _, claim, evidence in pairs])
    return verdicts
