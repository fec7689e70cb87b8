"""Where a command's TREC run goes: a file (with a one-line report on stderr) or standard output."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..types import Hit


def write_trec(run: dict[str, list[Hit]], output: Path | None, tag: str) -> None:
    from ..trec import write_run

    if output is None:
        write_run(sys.stdout, run, tag)
        return
    write_run(output, run, tag)
    click.echo(f"wrote {sum(len(h) for h in run.values())} hits for {len(run)} queries to {output}", err=True)
