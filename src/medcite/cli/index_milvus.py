"""`medcite index milvus`: build the Milvus collection of a document store, or bring it up to date."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..set_option import set_line
from ..workflows.index_milvus import sync_milvus
from .options import workflow_options


@click.command("milvus")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Document store folder to index.")
@click.option("--uri", default=None,
              help=f"Milvus server address (same as {set_line('index.milvus.uri', 'URI')}).")
@click.option("--collection", default=None,
              help=f"Collection name (same as {set_line('index.milvus.collection', 'NAME')}; default: one per "
              "store and layout).")
@click.option("--rebuild", is_flag=True, help="Drop the collection and build it from scratch.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@workflow_options
def milvus(store: Path, uri: str | None, collection: str | None, rebuild: bool, as_json: bool, preset: str,
           overrides: tuple[str, ...]) -> None:
    """Index every article of --store in a Milvus collection: BM25 text fields and the vectors of every
    named index of the settings (all of them are served by Milvus: index.backend=milvus is implied).

    Run it again after ingesting updates: only the added, replaced and deleted PMIDs are sent. Searches
    (medcite search/run/ask with --set index.backend=milvus) also apply pending changes first.
    """
    done = sync_milvus(store, preset, overrides, uri=uri, collection=collection, rebuild=rebuild)
    report, settings = done.report, done.settings
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    fields = done.fields
    click.echo(
        f"Milvus collection {report['collection']} at {settings.index.milvus.uri} (indexes {', '.join(fields)}): "
        f"added {report['added']}, replaced {report['replaced']}, deleted {report['deleted']}; {report['docs']} "
        f"documents (store seq {report['seq']}, {report['seconds']:.1f} s)"
    )
