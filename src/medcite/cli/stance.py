"""`medcite stance`: classify (claim, evidence) rows of a CSV with a stance model, one JSON line per row."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click

from ..errors import InputError
from .options import resolve, settings_options


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


@click.command("stance")
@click.option("--model", required=True, help="A stance model folder, models:NAME, or a Hugging Face name (an NLI "
              "cross-encoder); or a stance backend name (e.g. llm) configured with --set stance....")
@click.option("--input", "input_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CSV with 'claim' and 'evidence' columns ('id' is carried over; other columns are ignored).")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSONL to write.")
@settings_options
def stance(model: str, input_path: Path, output: Path, preset: str, overrides: tuple[str, ...]) -> None:
    """Write {"id", "label", "scores": {supports, contradicts, neutral}, "span": [start, end]} for every row;
    the span is the part of the evidence that decided the label."""
    from .. import registry
    from ..io import atomic_write
    from ..pipeline import Context

    pairs = read_pairs(input_path)
    settings = resolve(preset, overrides)
    if model in registry.names("stance"):
        cfg = settings.stance if settings.stance.backend == model else registry.validate_config("stance", model)
    else:
        cfg = registry.validate_config("stance", {"backend": "classifier", "model": model})
    with Context(settings) as ctx:
        judge = ctx.build("stance", cfg)
        if judge is None:
            raise click.UsageError("--model none judges nothing")
        verdicts = judge.classify([(claim, evidence) for _, claim, evidence in pairs])
    counts: dict[str, int] = {}
    with atomic_write(output) as fh:
        for (row_id, _, _), v in zip(pairs, verdicts, strict=True):
            counts[v.label.value] = counts.get(v.label.value, 0) + 1
            fh.write(json.dumps({"id": row_id, "label": v.label.value, "scores": dict(v.scores),
                                 "span": [v.start, v.end]}) + "\n")
    click.echo(f"{len(pairs)} pairs -> {output}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
