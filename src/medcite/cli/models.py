"""`medcite models`: build the trained models a preset needs, and list them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .numbers import Count


def default_data() -> Path | None:
    """The shared BioASQ training file, when this checkout has one (``$MEDCITE_DATA_DIR`` or ../shared/data)."""
    from ..paths import shared_data_dir

    path = shared_data_dir() / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
    return path if path.is_file() else None


@click.group("models")
def models_group() -> None:
    """The models medcite trains itself (under $MEDCITE_MODELS_DIR, default ~/.cache/medcite/models)."""


@models_group.command("build")
@click.argument("presets", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every shipped preset's models.")
@click.option("--corpus", "corpus", default=None, type=click.Path(exists=True, file_okay=False),
              help="Your document store: trained on when it holds the BioASQ gold articles of --min-questions "
                   "training questions; otherwise (or when left out) medcite trains on its own store of the "
                   "training file's gold snippets (built once, beside the models folder).")
@click.option("--data", default=None, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ training JSON (default: the shared bioasq_taskb_golden_7b-11b_dev.json.gz when present).")
@click.option("--min-questions", default=20, show_default=True, type=Count(1),
              help="Train on --corpus only when at least this many training questions have gold there.")
def build(presets: tuple[str, ...], all_: bool, corpus: str | None, data: str | None, min_questions: int) -> None:
    """Train every model PRESETS need that is not yet present (resumable: present models are skipped, an
    interrupted one is trained again). Example: medcite models build best --corpus STORE"""
    from ..config import preset_names
    from .model_builds import build_models

    if all_ == bool(presets):
        raise click.UsageError("name one or more presets, or give --all (not both)")
    names = preset_names() if all_ else list(presets)
    known = set(preset_names())
    unknown = [p for p in names if p not in known and not Path(p).is_file()]
    if unknown:
        raise click.BadParameter(f"unknown preset(s) {', '.join(unknown)}; `medcite config presets` lists them",
                                 param_hint="PRESETS")
    path = Path(data) if data else default_data()
    if path is None:
        raise click.UsageError("give the BioASQ training file with --data BIOASQ.json.gz")
    records = build_models(names, path, Path(corpus) if corpus else None, echo=lambda m: click.echo(m, err=True),
                           ltr_options={"min_questions": min_questions})
    click.echo(json.dumps(records, indent=2))


@models_group.command("list")
def list_models() -> None:
    """The models medcite can build: kind, training time on 2 cores, and whether each is present."""
    from ..trained_models import CATALOGUE, folder, is_present

    rows: list[dict[str, Any]] = [
        {"model": m.name, "kind": m.kind, "minutes": m.minutes, "present": is_present(m.name),
         "folder": str(folder(m.name))} for m in CATALOGUE.values()]
    for r in rows:
        click.echo(f"{r['model']:<34} {r['kind']:<14} ~{r['minutes']:>3} min  "
                   f"{'present' if r['present'] else 'missing'}  {r['folder']}")
