"""`medcite ingest`: load PubMed XML / JSONL files into a document store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .numbers import Count, Finite
from .options import resolve, settings_options

if TYPE_CHECKING:
    from ..workflows.corpus import FileStats, Format, OnError

_COLUMNS = ("status", "added", "replaced", "deleted", "kept_newer", "skipped", "warnings")


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False),
              help="Document store folder (created if missing).")
@click.option("--on-error", type=click.Choice(["raise", "skip"]), default=None,
              help="On a bad record or damaged file: stop (raise), or count, skip and go on (skip): one warning "
              "per reason, every skipped record listed in STORE/skipped.jsonl. "
              "Default: the corpus.on_error setting ('raise').")
@click.option("--format", "fmt", type=click.Choice(["auto", "xml", "jsonl"]), default="auto", show_default=True,
              help="Input format; 'auto' looks at the content (gzip, '<' or '{').")
@click.option("--batch-size", type=Count(1), default=None,
              help="Articles written per batch. Default: the corpus.batch_size setting (2000).")
@click.option("--wait", "wait_s", type=Finite(min=0), default=600.0, show_default=True,
              help="Seconds to wait when another ingest is writing to the store; then fail saying which "
              "process holds it.")
@settings_options
def ingest(
    paths: tuple[str, ...], store_dir: str, on_error: OnError | None, fmt: Format, batch_size: int | None,
    wait_s: float, preset: str, overrides: tuple[str, ...],
) -> None:
    """Ingest FILES, folders or glob patterns (PubMed XML[.gz], JSONL[.gz]) into the store at --store.

    Each file is committed atomically; files already ingested (same sha256) are skipped, so re-running
    after an interruption finishes the job without duplicates. DeleteCitation entries delete PMIDs and a
    newer Version of a PMID replaces the older one.
    """
    from ..workflows.corpus import ingest_files

    settings = resolve(preset, overrides)
    mode = on_error or settings.corpus.on_error
    batch = batch_size or settings.corpus.batch_size
    done = ingest_files(paths, store_dir, on_error=mode, batch_size=batch, fmt=fmt, wait_s=wait_s)
    echo_results(done.results, store_dir, done.total)


def echo_results(results: list[FileStats], store_dir: str, total: int) -> None:
    """The per-file table of an ingest run (also printed by `medcite pubmed sync --ingest`)."""
    name_width = min(60, max([len(r.path) for r in results] + [4]))
    click.echo(f"{'file':<{name_width}}  " + "  ".join(f"{c:>10}" for c in _COLUMNS))
    sums = dict.fromkeys(_COLUMNS[1:], 0)
    for r in results:
        name = r.path if len(r.path) <= name_width else "..." + r.path[-(name_width - 3):]
        cells = [r.status] + [str(getattr(r, c)) for c in _COLUMNS[1:]]
        click.echo(f"{name:<{name_width}}  " + "  ".join(f"{c:>10}" for c in cells))
        for c in sums:
            sums[c] += getattr(r, c)
        if r.error:
            click.echo(f"  {r.status}: {r.error}")
    click.echo(f"{'total':<{name_width}}  {len(results):>10}  " + "  ".join(f"{sums[c]:>10}" for c in sums))
    click.echo(f"store {store_dir}: {total} articles")
