"""`medcite ask`: answer one question from a document store, every sentence cited."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InputError
from ..paths import runs_dir
from ..rundir import answer_json, check_run_target, is_run_dir, new_run_dir
from ..types import Topic
from .options import answer_options, resolve
from .render import echo_result


@click.command("ask")
@click.argument("question")
@click.option("--corpus", "corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run directory to write (default: a new ask-<time> folder in $MEDCITE_RUNS_DIR, else in "
              "medcite's data folder, e.g. ~/.local/share/medcite/runs; the path is printed).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON instead of text.")
@answer_options
def ask(question: str, corpus: Path, out: Path | None, as_json: bool, preset: str, overrides: tuple[str, ...]) -> None:
    """Answer QUESTION from the PubMed articles in --corpus."""
    from ..pipeline import Pipeline

    if not question.strip():
        raise InputError("the question is empty",
                         hint=f'medcite ask "Do statins lower LDL cholesterol?" --corpus {corpus}')
    settings = resolve(preset, overrides)
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file, not a folder",
                         hint="give a new folder for --out (it is created), or omit it")
    if out is not None and is_run_dir(out):
        raise InputError(f"{out} already holds a run", hint="choose a new --out folder (or omit it)")
    if out is not None:
        check_run_target(out)
    pipeline = Pipeline(settings, corpus)
    topic = Topic("q1", question)
    claimed = out is None
    try:
        # claimed only now, so that a failed start leaves no folder behind; never shared with another ask
        out = out or new_run_dir(runs_dir(), "ask")
        result = pipeline.run([topic], out, command=f"medcite ask {question!r}")[0]
    except BaseException:
        if claimed and out is not None and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    finally:
        pipeline.close()
    if as_json:
        click.echo(json.dumps(answer_json(result.answer), indent=2, ensure_ascii=False))
        click.echo(f"run directory: {out}", err=True)  # stdout stays one JSON document
    else:
        echo_result(result)
        click.echo(f"run directory: {out}")
