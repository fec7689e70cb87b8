"""`medcite index bm25`: build a BM25 index of a document store, or bring an existing one up to date."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..workflows.index_sparse import build_bm25
from .numbers import Finite
from .options import workflow_options


@click.command("bm25")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Document store folder to index.")
@click.option(
    "--out",
    default=None,
    type=click.Path(path_type=Path),
    help="Index folder: built when new or empty, updated in place when it holds an index of the same store "
    "(default: the folder under STORE/indexes/ that presets use for these settings).",
)
@click.option("--index", "name", default="bm25", show_default=True,
              help="Which entry of the settings' `indexes` to build (a sparse one).")
@click.option(
    "--backend",
    default=None,
    help="Sparse backend: tantivy (default: on disk, incremental) or bm25s (in memory, any k1/b; rebuilds on update).",
)
@click.option("--k1", type=Finite(), default=None, help="BM25 k1 (tantivy: 1.2 only).")
@click.option("--b", "b", type=Finite(), default=None, help="BM25 b (tantivy: 0.75 only).")
@click.option("--rebuild", is_flag=True, help="Discard the index in --out and build it from scratch.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@workflow_options
def bm25(
    store: Path,
    out: Path | None,
    name: str,
    backend: str | None,
    k1: float | None,
    b: float | None,
    rebuild: bool,
    as_json: bool,
    preset: str,
    overrides: tuple[str, ...],
) -> None:
    """Index the title and abstract of every article of --store for BM25 search.

    Run it again after ingesting updates: only the added, replaced and deleted PMIDs are applied
    (the bm25s backend rebuilds instead).
    """
    built = build_bm25(store, out, name, preset, overrides, backend=backend, k1=k1, b=b, rebuild=rebuild)
    report, out = built.report, built.folder
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    verb = "updated" if built.existed else "built"
    click.echo(
        f"{report.backend} index {out} {verb}: added {report.added}, replaced {report.replaced}, "
        f"deleted {report.deleted}; {report.docs} documents (store seq {report.seq}, {report.seconds:.1f} s)"
    )
