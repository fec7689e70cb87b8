"""`medcite bioasq phase-a | phase-aplus | phase-b`: BioASQ Task b submissions from a questions file."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.tasks import Result, read_inputs, run_task, settings_for
from .options import Decorated, preset_options


def _swap_options(f: Decorated) -> Decorated:
    f = click.option("--no-llm", is_flag=True,
                     help="Run with no language model: the preset's documented swaps for llm=none "
                     "(implies --offline).")(f)
    f = click.option("--offline", is_flag=True,
                     help="Apply the preset's documented offline swaps (models not on this machine -> packaged "
                     "MiniLM, LLM -> packaged local model); see `medcite config show --preset P`.")(f)
    return click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="Run directory (resumed if it exists with the same settings; default: "
                        "bioasq-PHASE-<time> in medcite's runs folder: $MEDCITE_RUNS_DIR, else the per-user data "
                        "folder).")(f)


def _common(f: Decorated) -> Decorated:
    f = preset_options("offline", retracted=True, offline=False)(f)  # its own --offline and --no-llm
    f = _swap_options(f)
    f = click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
                     help="Submission JSON to write (atomically, only when every question is answered and valid).")(f)
    return click.option("--questions", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="BioASQ questions JSON (.json or .json.gz).")(f)


def _report(result: Result, what: str) -> None:
    status = "valid" if result.ok else f"INVALID ({len(result.report.errors)} errors)"
    click.echo(f"{result.topics} questions {what} -> {result.submission}: {status} "
               f"(run directory: {result.run_dir})")
    if not result.ok:
        raise SystemExit(255)


@click.group("bioasq")
def bioasq_group() -> None:
    """BioASQ Task b: Phase A (documents, snippets), A+ (answers from own snippets), B (answers from gold ones)."""


def _phase(task: str, command: str, questions: Path, output: Path, corpus: Path | None, preset: str,
           overrides: tuple[str, ...], offline: bool, no_llm: bool, run_dir: Path | None) -> Result:
    items = read_inputs(task, questions)  # bad input stops here, before any model loads or file is written
    settings = settings_for(preset, overrides, offline, no_llm)
    return run_task(task, settings, items, corpus=corpus, out=run_dir, output=output,
                    command=f"medcite bioasq {command} --preset {settings.preset} --questions {questions}")


@bioasq_group.command("phase-a")
@_common
@click.option("--corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
def phase_a(questions: Path, output: Path, corpus: Path, preset: str, overrides: tuple[str, ...], offline: bool,
            no_llm: bool, run_dir: Path | None) -> None:
    """<= 10 ranked documents and <= 10 snippets (with BioASQ section offsets) per question."""
    _report(_phase("bioasq-a", "phase-a", questions, output, corpus, preset, overrides, offline, no_llm, run_dir),
            "retrieved")


@bioasq_group.command("phase-aplus")
@_common
@click.option("--corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
def phase_aplus(questions: Path, output: Path, corpus: Path, preset: str, overrides: tuple[str, ...], offline: bool,
                no_llm: bool, run_dir: Path | None) -> None:
    """Phase A's documents and snippets, plus exact and ideal answers from those snippets (the `qa` stage)."""
    _report(_phase("bioasq-aplus", "phase-aplus", questions, output, corpus, preset, overrides, offline, no_llm,
                   run_dir), "answered")


@bioasq_group.command("phase-b")
@_common
def phase_b(questions: Path, output: Path, preset: str, overrides: tuple[str, ...], offline: bool, no_llm: bool,
            run_dir: Path | None) -> None:
    """Exact and ideal answers from the gold snippets given with each question (the `qa` stage; no corpus)."""
    _report(_phase("bioasq-b", "phase-b", questions, output, None, preset, overrides, offline, no_llm, run_dir),
            "answered")
