"""`medcite run`: answer a topics file with a preset and write a validated submission in a run directory."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.tasks import cited_sources, read_inputs, run_task, task_names
from .options import answer_options, resolve
from .render import source_line


@click.command("run")
@click.option("--topics", required=True, type=click.Path(exists=True, path_type=Path),
              help="BioGen 2024/2025 topics, BioASQ JSON or TREC topics TSV.")
@click.option("--corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Run directory (resumed if it exists).")
@click.option("--format", "fmt", type=click.Choice(task_names("biogen")), default="biogen25", show_default=True,
              help="Official submission format (task) to write.")
@click.option("--team-id", default="medcite", show_default=True)
@click.option("--run-id", default=None, help="Run id in the submission (default: the --out folder name).")
@click.option("--contact-email", default="medcite@example.org", show_default=True, help="2024 format only.")
@answer_options
def run(topics: Path, corpus: Path, out: Path, fmt: str, team_id: str, run_id: str | None, contact_email: str,
        preset: str, overrides: tuple[str, ...]) -> None:
    """Answer every topic in --topics and write runs/ID with submission, validation and all intermediates."""
    settings = resolve(preset, overrides)
    topic_list = read_inputs(fmt, topics)
    result = run_task(fmt, settings, topic_list, corpus=corpus, out=out,
                      command=f"medcite run --preset {preset} --topics {topics}",
                      options={"team_id": team_id, "run_id": run_id, "contact_email": contact_email})
    for topic_id, sources in cited_sources(out):
        click.echo(f"Topic {topic_id}: " + ("no source cited" if not sources else f"{len(sources)} source(s)"))
        for pmid, article, design in sources:
            click.echo("   - " + (source_line(pmid, article, design) if article is not None else f"PMID {pmid}"))
    status = "valid" if result.ok else f"INVALID ({len(result.report.errors)} errors, see {result.submission}.errlog)"
    click.echo(f"{result.topics} topics answered -> {result.submission}: {status}")
    if not result.ok:
        raise SystemExit(255)
