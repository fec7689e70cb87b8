"""`medcite corpus`: inspect a document store (counts, files, single articles)."""

from __future__ import annotations

import dataclasses
import json

import click


@click.group("corpus")
def corpus_group() -> None:
    """Inspect the document store built by `medcite ingest`."""


@corpus_group.command("stats")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Document store folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(store_dir: str, as_json: bool) -> None:
    """Counts, ingested files, sequence number, retracted articles and year range of a store."""
    from ..workflows.corpus import store_stats

    info, files = store_stats(store_dir)
    if as_json:
        click.echo(json.dumps({**info, "files": files}, indent=2))
        return
    click.echo(f"store       {store_dir}")
    click.echo(f"store id    {info['store_id']}")
    click.echo(f"seq         {info['seq']}")
    click.echo(f"articles    {info['articles']}")
    click.echo(f"deleted     {info['deleted']}")
    click.echo(f"retracted   {info['retracted']}")
    years = f"{info['year_min']}-{info['year_max']}" if info["year_min"] is not None else "n/a"
    click.echo(f"years       {years}")
    click.echo(f"files       {len(files)}")
    for f in files:
        line = (f"  {f['status']:<8} {f['path']}  +{f['added']} ~{f['replaced']} -{f['deleted']} "
                f"skipped {f['skipped']} warnings {f['warnings']}")
        click.echo(line)
        if f["error"]:
            click.echo(f"           {f['error']}")


@corpus_group.command("show")
@click.argument("pmid")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Document store folder.")
def show(pmid: str, store_dir: str) -> None:
    """Print one article as JSON."""
    from ..workflows.corpus import store_article

    article = store_article(store_dir, pmid)
    click.echo(json.dumps(dataclasses.asdict(article), indent=2, ensure_ascii=False))
