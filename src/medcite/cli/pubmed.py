"""`medcite pubmed sync`: mirror NLM's PubMed baseline and update files, verified, and optionally ingest them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .numbers import Count, Finite
from .options import resolve, settings_options

if TYPE_CHECKING:
    from ..workflows.corpus import OnError


@click.group("pubmed")
def pubmed_group() -> None:
    """Fetch PubMed from NLM (baseline and daily update files)."""


@pubmed_group.command("sync")
@click.option("--dest", required=True, type=click.Path(file_okay=False),
              help="Local mirror folder (NLM's layout: baseline/, updatefiles/; created if missing).")
@click.option("--baseline", is_flag=True, help="Sync the yearly baseline files (with --updates: both; neither: both).")
@click.option("--updates", is_flag=True, help="Sync the daily update files.")
@click.option("--since", metavar="FILE", default=None,
              help="Start after this file, e.g. pubmed25n1300.xml.gz (NLM order: baseline, then updates).")
@click.option("--limit", type=Count(1), default=None,
              help="Consider only the first N files of the selection (after --since), in NLM order.")
@click.option("--base-url", default=None, metavar="URL",
              help="Where the baseline/ and updatefiles/ folders are listed (default: NLM's, "
                   "https://ftp.ncbi.nlm.nih.gov/pubmed/).")
@click.option("--ingest", "store_dir", default=None, type=click.Path(file_okay=False),
              help="Then apply the verified files to this document store, in NLM order (updates and deletions "
                   "included); indexes of the store follow it when next opened.")
@click.option("--retries", type=Count(0), default=3, show_default=True,
              help="Tries after the first for a dropped connection, a timeout, a 5xx answer or a checksum mismatch.")
@click.option("--backoff", "backoff_s", type=Finite(min=0), default=1.0, show_default=True,
              help="Seconds before the first retry (doubled for each later one).")
@click.option("--timeout", "timeout_s", type=Finite(min=1), default=60.0, show_default=True,
              help="Seconds without data before a request counts as failed (and is retried).")
@click.option("--retry-quarantined", is_flag=True,
              help="Download again the files an earlier run quarantined for a checksum mismatch.")
@click.option("--wait", "wait_s", type=Finite(min=0), default=600.0, show_default=True,
              help="With --ingest: seconds to wait for another process writing to the store.")
@settings_options
def sync(
    dest: str, baseline: bool, updates: bool, since: str | None, limit: int | None, base_url: str | None,
    store_dir: str | None, retries: int, backoff_s: float, timeout_s: float, retry_quarantined: bool,
    wait_s: float, preset: str, overrides: tuple[str, ...],
) -> None:
    """Download the PubMed files not yet in --dest, each checked against its .md5, and keep a state file.

    Interrupted downloads resume; a file whose checksum still fails after the retries is quarantined in
    DEST/quarantine (never ingested); a re-run with nothing new downloads nothing. Exits with status 1
    when a file could not be verified (it is listed), after ingesting what could be.
    """
    from ..workflows.corpus import sync_mirror

    report = sync_mirror(dest, base_url, baseline=baseline, updates=updates, since=since, limit=limit,
                         retries=retries, backoff_s=backoff_s, timeout_s=timeout_s,
                         retry_quarantined=retry_quarantined)
    listed = ", ".join(f"{n} in {folder}/" for folder, n in report.listed.items())
    shown = [o for o in report.outcomes if o.status != "present"]
    for o in shown:
        size = f"{o.bytes / 1e6:.1f} MB" if o.bytes else ""
        click.echo(f"{o.folder + '/' + o.name:<33} {o.status:<16} {size:>9}  {o.detail}".rstrip())
    mb = sum(o.bytes for o in report.outcomes if o.status == "downloaded") / 1e6
    click.echo(
        f"pubmed sync {dest}: listed {listed}; {len(report.outcomes)} selected, {report.downloaded} downloaded "
        f"({mb:.1f} MB), {report.count('adopted')} verified on disk, {report.count('present')} already present, "
        f"{len(report.problems)} not verified"
    )
    if store_dir is not None:  # the settings (corpus.on_error, corpus.batch_size) matter only to the ingest
        settings = resolve(preset, overrides)
        _ingest(dest, store_dir, settings.corpus.on_error, settings.corpus.batch_size, wait_s)
    if report.problems:
        from ..errors import MedciteError

        names = ", ".join(f"{o.folder}/{o.name} ({o.status})" for o in report.problems[:5])
        more = f" and {len(report.problems) - 5} more" if len(report.problems) > 5 else ""
        raise MedciteError(
            f"{len(report.problems)} file(s) not verified: {names}{more}",
            hint=f"run the command again to retry (downloads resume); details in {dest}/.medcite-sync.json and "
            f"{dest}/quarantine/",
        )


def _ingest(dest: str, store_dir: str, on_error: OnError, batch_size: int, wait_s: float) -> None:
    from ..workflows.corpus import ingest_mirror
    from .ingest import echo_results

    done, stopped = ingest_mirror(dest, store_dir, on_error=on_error, batch_size=batch_size, wait_s=wait_s)
    if done is None:
        click.echo(f"nothing to ingest into {store_dir}" + (f": {stopped}" if stopped else ""))
        return
    echo_results(done.results, store_dir, done.total)
    if stopped:
        click.echo(f"stopped before {stopped}: later files wait for it, so updates apply in NLM order")
