"""`medcite ask`: answer one question from a document store, every sentence cited."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..rundir import answer_json
from ..workflows.ask import ask as ask_question
from ..workflows.ask import check_out, check_question
from .options import answer_options, design_options, resolve
from .render import echo_result


@click.command("ask")
@click.argument("question")
@click.option("--corpus", "corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run directory to write (default: a new ask-<time> folder in $MEDCITE_RUNS_DIR, else in "
              "medcite's data folder, e.g. ~/.local/share/medcite/runs; the path is printed).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON instead of text.")
@answer_options
@design_options
def ask(question: str, corpus: Path, out: Path | None, as_json: bool, preset: str, overrides: tuple[str, ...]) -> None:
    """Answer QUESTION from the PubMed articles in --corpus."""
    check_question(question, corpus)
    settings = resolve(preset, overrides)
    check_out(out)
    result, out = ask_question(settings, corpus, question, out)
    if as_json:
        click.echo(json.dumps(answer_json(result.answer, result.designs), indent=2, ensure_ascii=False))
        click.echo(f"run directory: {out}", err=True)  # stdout stays one JSON document
    else:
        echo_result(result)
        click.echo(f"run directory: {out}")
