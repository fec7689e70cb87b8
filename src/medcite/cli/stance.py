"""`medcite stance`: classify (claim, evidence) rows of a CSV with a stance model, one JSON line per row."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..workflows.stance import NoStanceError, classify_pairs, read_pairs
from .options import resolve, settings_options


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
    from ..io import atomic_write

    pairs = read_pairs(input_path)
    settings = resolve(preset, overrides)
    try:
        verdicts = classify_pairs(settings, model, pairs)
    except NoStanceError as exc:
        raise click.UsageError(exc.message) from None
    counts: dict[str, int] = {}
    with atomic_write(output) as fh:
        for (row_id, _, _), v in zip(pairs, verdicts, strict=True):
            counts[v.label.value] = counts.get(v.label.value, 0) + 1
            fh.write(json.dumps({"id": row_id, "label": v.label.value, "scores": dict(v.scores),
                                 "span": [v.start, v.end]}) + "\n")
    click.echo(f"{len(pairs)} pairs -> {output}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
