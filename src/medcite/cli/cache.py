"""`medcite cache`: what the LLM cache holds, and clearing it (all of it, the old replies or the rejected ones)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import click

from ..errors import InputError

_CACHE_DIR_HELP = ("Folder of the LLM cache, as llm.cache_dir names it (default: $MEDCITE_CACHE_DIR or "
                   "~/.cache/medcite).")


def parse_date(value: str) -> datetime:
    """An ISO date (``2025-06-01``, midnight UTC) or date and time (``2025-06-01T12:00``, UTC unless it says)."""
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"--older-than {value!r} is not an ISO date",
                         hint="give a date such as 2025-06-01, or a date and time such as 2025-06-01T12:00") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@click.group("cache")
def cache_group() -> None:
    """The LLM cache: one SQLite file of model replies, keyed by backend, model, server, messages and parameters.
    Replies medcite rejected (unparseable, or breaking an answer's rules) are kept, marked, and never replayed."""


@cache_group.command("stats")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False), help=_CACHE_DIR_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the lines.")
def stats(cache_dir: str | None, as_json: bool) -> None:
    """The cache file, its size, how many replies it holds and how many were rejected, per backend, model and
    server, and the oldest and newest reply."""
    from ..workflows.cache import cache_path, cache_stats

    found = cache_stats(cache_dir)
    if found is None:  # no file (opening would create it)
        path = cache_path(cache_dir)
        if as_json:
            click.echo(json.dumps({"file": str(path), "exists": False, "replies": 0, "rejected": 0}))
        else:
            click.echo(f"no LLM cache at {path} (a run with llm.cache=true creates it)")
        return
    if as_json:
        click.echo(json.dumps({"exists": True, **found.as_dict()}, indent=2))
        return
    if found.found:
        click.echo(f"found:    {found.found}")
    click.echo(f"file:     {found.path}")
    click.echo(f"size:     {found.size_bytes / 1e6:.2f} MB")
    click.echo(f"replies:  {found.replies} ({found.rejected} rejected: kept for inspection, never replayed)")
    click.echo(f"oldest:   {found.oldest or '-'}")
    click.echo(f"newest:   {found.newest or '-'}")
    if found.sources:
        click.echo("by backend / model / server:")
    for s in found.sources:
        click.echo(f"  {s.replies:>8} ({s.rejected} rejected)  {s.backend}  {s.model}  {s.server or '(in-process)'}")


@cache_group.command("clear")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False), help=_CACHE_DIR_HELP)
@click.option("--older-than", "older_than", default=None, metavar="DATE",
              help="Only replies stored before this ISO date (2025-06-01) or date and time (UTC unless given).")
@click.option("--rejected", "rejected_only", is_flag=True, help="Only the replies medcite rejected.")
def clear(cache_dir: str | None, older_than: str | None, rejected_only: bool) -> None:
    """Delete cached replies: all of them, or those older than --older-than, or only the rejected ones (both
    options: the rejected ones older than the date). The file keeps its place; its space is given back."""
    from ..workflows.cache import cache_path, clear_cache

    before = parse_date(older_than) if older_than is not None else None
    done = clear_cache(cache_dir, older_than=before, rejected_only=rejected_only)
    if done is None:
        click.echo(f"no LLM cache at {cache_path(cache_dir)}: nothing to clear")
        return
    if done.found:
        click.echo(f"found: {done.found}")
    deleted, left, path = done.deleted, done.left, done.path
    which = ", ".join(filter(None, ["rejected" if rejected_only else "",
                                    f"stored before {before.isoformat()}" if before is not None else ""]))
    click.echo(f"deleted {deleted} repl{'y' if deleted == 1 else 'ies'}{f' ({which})' if which else ''} from {path}; "
               f"{left} left")
