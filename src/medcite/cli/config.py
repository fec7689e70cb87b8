"""`medcite config`: show resolved settings and list presets."""

from __future__ import annotations

import json
import re
import textwrap

import click

from ..config import preset_description, preset_names, preset_task, preset_tasks
from ..workflows.presets import provenance_lines
from .options import resolve, settings_options


@click.group("config")
def config_group() -> None:
    """Inspect settings and presets."""


@config_group.command("show")
@settings_options
def show(preset: str, overrides: tuple[str, ...]) -> None:
    """Print the fully resolved settings as JSON (with their hash), and beside them what each torch stage's device
    and dtype settings resolve to on this machine (``devices``; ``auto``: CUDA, then MPS, else the CPU)."""
    from ..devices import auto_summary, machine

    settings = resolve(preset, overrides)
    dumped = settings.model_dump(mode="json")
    m = machine()
    devices = {"machine": m.describe(), "auto": auto_summary(m), "settings": device_settings(dumped)}
    click.echo(json.dumps({"hash": settings.hash(), "settings": dumped, "devices": devices}, indent=2))


#: backends whose model overflows float16 (dtype auto stays float32 on a GPU without bfloat16)
_NO_HALF = ("monot5", "t5-nli")


def device_settings(tree: object, path: str = "") -> dict[str, str]:
    """Each settings section with a ``device`` (dotted path) -> how its device and dtype resolve here:
    ``{"rerank": "auto -> cpu, dtype auto -> float32"}``; a device this machine lacks says so."""
    from ..devices import explain

    out: dict[str, str] = {}
    if isinstance(tree, dict):
        if isinstance(tree.get("device"), str):
            dtype = tree.get("dtype")
            out[path or "."] = explain(tree["device"], dtype if isinstance(dtype, str) else None,
                                       half=tree.get("backend") not in _NO_HALF)
        for key, value in tree.items():
            out.update(device_settings(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out.update(device_settings(value, f"{path}[{i}]"))
    return out


@config_group.command("presets")
@click.option("--long", "full", is_flag=True, help="Print each preset's whole description.")
@click.option("--task", "task", default=None, metavar="TASK",
              help="Only the presets that declare this task (biogen-a, biogen-b, medhopqa, bioasq, search, or a "
                   "registered task).")
def presets(full: bool, task: str | None) -> None:
    """List the shipped presets, each with the task it declares (its file's ``task``), the first sentence of its
    description and, for a preset that loads models medcite trains, whether they are present (or the command that
    builds them)."""
    known = preset_tasks()
    if task is not None and task not in known:
        raise click.BadParameter(f"unknown task {task!r}; one of: {', '.join(known)}", param_hint="--task")
    names = [n for n in preset_names() if task is None or preset_task(n) == task]
    width = max((len(n) for n in names), default=0)
    tasks = {n: preset_task(n) for n in names}
    task_width = max((len(t) for t in tasks.values()), default=0)
    for name in names:
        text = " ".join(preset_description(name).split())
        status = models_status(name)
        head = f"{name:<{width}}  {tasks[name]:<{task_width}}"
        if not full:
            room = max(10 if status else 40, 118 - len(head) - (len(status) + 3 if status else 0))
            text = textwrap.shorten(first_sentence(text), width=room, placeholder=" ...")
        click.echo(f"{head}  {text}{f' [{status}]' if status else ''}".rstrip())
        if full:
            click.echo(f"    task: {tasks[name]} ({known[tasks[name]]})")
            for line in provenance_lines(name):
                click.echo(f"    {line}")


def models_status(preset: str) -> str:
    """For a preset that loads models medcite trains: ``models shipped`` / ``models trained here`` when all are
    here, else ``needs: medcite models build PRESET, ~N min`` (or the models' names when medcite has no recipe)."""
    from ..config import load_settings
    from ..errors import MedciteError
    from ..trained_models import CATALOGUE, SHIPPED, build_order, is_present, locate, minutes, retrieval_models

    try:
        names = retrieval_models(load_settings(preset))
    except MedciteError:
        return ""
    if not names:
        return ""
    if all(is_present(n) for n in names):
        sources = {locate(n)[1] for n in names}
        return "models shipped" if sources == {SHIPPED} else "models trained here" if SHIPPED not in sources \
            else "models shipped and trained here"
    absent = [n for n in build_order([n for n in names if not is_present(n)]) if not is_present(n)]
    if all(n in CATALOGUE for n in absent):
        return f"needs: medcite models build {preset}, ~{minutes(absent)} min"
    return f"needs: {', '.join(absent)} (docs/MODELS.md)"


# a full stop ends a sentence unless it ends an abbreviation ("et al.", "e.g.", "vs.")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)\.\s+(?=[A-Z(])")


def first_sentence(text: str) -> str:
    """The first sentence of a preset description."""
    m = _SENTENCE_END.search(text)
    return text if m is None else text[: m.start() + 1]
