"""`medcite ground`: TREC BioGen 2025 Task A — new supporting and contradicting PMIDs for every answer sentence."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.tasks import read_inputs, run_task
from .options import preset_options, resolve


@click.command("ground")
@click.option("--input", "input_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Task A input: a JSON list or JSONL of {meta_data|metadata, answer: [{text, "
              "existing_supported_citations}]}.")
@click.option("--corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
@click.option("--out", required=True, type=click.Path(path_type=Path),
              help="Run directory (resumed if it exists); DIR/submission.jsonl is the official file.")
@click.option("--team-id", default="medcite", show_default=True)
@click.option("--run-id", default=None, help="Run id in the submission (default: the --out folder name).")
@click.option("--pmid-type", type=click.Choice(["str", "int"]), default="str", show_default=True,
              help="Write every PMID as a string or as an integer (one type throughout).")
@preset_options("offline-grounding", retracted=True)
def ground(input_path: Path, corpus: Path, out: Path, team_id: str, run_id: str | None, pmid_type: str,
           preset: str, overrides: tuple[str, ...]) -> None:
    """Ground each sentence of --input: retrieve, judge the stance of the best abstracts, keep <= 3 supporting
    (not already cited) and <= 3 contradicting PMIDs; write and validate DIR/submission.jsonl (exit 255 and
    a .errlog when it is invalid)."""
    items = read_inputs("biogen-a", input_path)  # bad input stops here, before any model loads or file is written
    settings = resolve(preset, overrides, grounding=True)
    result = run_task("biogen-a", settings, items, corpus=corpus, out=out,
                      command=f"medcite ground --preset {settings.preset} --input {input_path}",
                      options={"team_id": team_id, "run_id": run_id, "pmid_type": pmid_type})
    status = "valid" if result.ok else f"INVALID ({len(result.report.errors)} errors, see {result.submission}.errlog)"
    click.echo(f"{result.topics} question-answer pairs grounded -> {result.submission}: {status}")
    if not result.ok:
        raise SystemExit(255)
