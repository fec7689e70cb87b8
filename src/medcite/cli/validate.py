"""`medcite validate`: check a BioGen submission like the official validators (exit 0, or 255 + .errlog)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..workflows.validate import (
    citation_support,
    kinds,
    support_report,
    validate_bioasq_file,
    validate_submission,
    write_errlog,
)


@click.command("validate")
@click.argument("kind", type=click.Choice(sorted(kinds())))
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--corpus", type=click.Path(path_type=Path), help="Document store: every PMID must be in it.")
@click.option("--topics", type=click.Path(exists=True, path_type=Path),
              help="Topics file: every topic must be answered.")
@click.option("--run-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Run directory: every cited PMID must be in that topic's evidence.")
def validate_kind(kind: str, file: Path, corpus: Path | None, topics: Path | None, run_dir: Path | None) -> None:
    """Validate FILE as a KIND submission (biogen-b = 2025 Task B JSONL, biogen24 = 2024 JSON); for BioASQ:
    `medcite validate bioasq --phase A|A+|B FILE`."""
    report = validate_submission(kind, file, corpus, topics, run_dir)
    errlog = write_errlog(report)
    if report.ok:
        click.echo(f"{file}: format OK ({report.topics} topics)")
    else:
        for err in report.errors[:50]:
            click.echo(f"  {err}", err=True)
        click.echo(f"{file}: format: {len(report.errors)} errors, written to {errlog}", err=True)
    _support_line(file, run_dir)
    if not report.ok:
        sys.exit(255)


def _support_line(file: Path, run_dir: Path | None) -> None:
    """Citation support, reported apart from format validity: a valid file can cite what does not support it."""
    if run_dir is None:
        click.echo(f"{file}: citation support: not checked (give --run-dir DIR, the run that wrote the file, to "
                   "check every citation against the abstract it cites)")
        return
    from ..io import write_json

    summary = citation_support(run_dir)
    click.echo(f"{file}: citation support: {summary.line('overlap (lexical entailment proxy)')}")
    if summary.failures:
        out = file.with_name(file.name + ".support.json")
        write_json(out, support_report(summary))
        click.echo(f"  {len(summary.failures)} unsupported citations listed in {out}; the trained stance model "
                   f"judges paraphrase better: medcite eval biogen-b --run {run_dir}")


@click.command("bioasq")
@click.option("--phase", required=True, type=click.Choice(["A", "A+", "B"]),
              help="A: documents and snippets; B: answers; A+: answers plus optional documents and snippets.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--questions", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The input questions: each must be answered exactly once, no other id; types come from here.")
def validate_bioasq(phase: str, file: Path, questions: Path | None) -> None:
    """Validate a BioASQ Task b submission FILE (exit 0, or 255 and FILE.errlog; docs/BIOASQ.md lists the rules)."""
    report = validate_bioasq_file(phase, file, questions)
    for warning in report.warnings[:50]:
        click.echo(f"  warning: {warning}", err=True)
    if len(report.warnings) > 50:
        click.echo(f"  ... and {len(report.warnings) - 50} more warnings", err=True)
    errlog = write_errlog(report)
    if report.ok:
        click.echo(f"{file}: OK ({report.topics} questions, {len(report.warnings)} warnings)")
        return
    for err in report.errors[:50]:
        click.echo(f"  {err}", err=True)
    click.echo(f"{file}: {len(report.errors)} errors, written to {errlog}", err=True)
    sys.exit(255)


class _KindOrCommand(click.Group):
    """`medcite validate KIND FILE` for the task kinds (``validate_kind``), or a sub-command with options of its
    own when one is named first (``medcite validate bioasq --phase A FILE``)."""

    def __init__(self, fallback: click.Command, commands: list[click.Command]) -> None:
        super().__init__(fallback.name, commands=commands, help=fallback.help, short_help=fallback.short_help)
        self.fallback = fallback

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        if args and args[0] in self.commands:
            return super().make_context(info_name, args, parent=parent, **extra)
        return self.fallback.make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.command is not self:  # the KIND form: the fallback's own context
            return ctx.command.invoke(ctx)
        return super().invoke(ctx)


validate = _KindOrCommand(validate_kind, [validate_bioasq])
