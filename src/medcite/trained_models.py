"""The models medcite trains itself, which presets name as ``models:NAME``: what each is, how long it takes to
train here, and whether it is present.

``medcite models build PRESET`` trains the missing ones (:mod:`medcite.pipeline.models`); `medcite config
presets` shows per preset whether they are present; a retrieval pipeline whose models are missing stops
before any work with the command that makes them (:func:`check_present`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .paths import MODELS_PREFIX, models_dir


@dataclass(frozen=True)
class TrainedModel:
    """A model ``medcite models build`` can train: its kind, the files a finished one holds, the other trained
    models it starts from, and its training time on 2 CPU cores (minutes, measured; an estimate)."""

    name: str
    kind: str
    minutes: int
    files: tuple[str, ...] = ("config.json",)
    needs: tuple[str, ...] = ()
    description: str = ""


CATALOGUE: dict[str, TrainedModel] = {m.name: m for m in (
    TrainedModel("medcite-ltr-bioasq", "ltr", 5, ("config.json", "model.txt"),
                 description="LightGBM LambdaMART over cheap features of the hybrid first stage's top 100"),
    TrainedModel("medcite-minilm-bi-bioasq", "bi-encoder", 50,
                 description="the packaged MiniLM bi-encoder adapted to BioASQ (in-batch + 1 BM25 negative)"),
    TrainedModel("medcite-minilm-bi-bioasq-ce-base", "bi-encoder", 25,
                 description="an adapted MiniLM (in-batch negatives only) that the cross-encoder starts from"),
    TrainedModel("medcite-minilm-ce-bioasq", "cross-encoder", 60, needs=("medcite-minilm-bi-bioasq-ce-base",),
                 description="a MiniLM cross-encoder fine-tuned on BioASQ with BM25 hard negatives"),
)}


def build_command(preset: str) -> str:
    return f"medcite models build {preset} --corpus STORE"


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.startswith(MODELS_PREFIX):
            yield value[len(MODELS_PREFIX):].strip()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _refs(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _refs(v)


def retrieval_models(settings: Any) -> list[str]:
    """Names of the ``models:`` a retrieval run of ``settings`` loads: those of the indexes its branches
    search and of its reranker."""
    used = {getattr(b, "index", None) for b in settings.retrieve.branches}
    data = [settings.indexes[n].model_dump(mode="json") for n in settings.indexes if n in used]
    data.append(settings.rerank.model_dump(mode="json"))
    return list(dict.fromkeys(_refs(data)))


def build_order(names: list[str]) -> list[str]:
    """``names`` with the trained models each starts from (``needs``) put before it."""
    out: list[str] = []
    for name in names:
        for dep in (*CATALOGUE[name].needs, name) if name in CATALOGUE else (name,):
            if dep not in out:
                out.append(dep)
    return out


def is_present(name: str) -> bool:
    """Whether the trained model ``name`` is in :func:`medcite.paths.models_dir` with every file it needs."""
    folder = models_dir() / name
    files = CATALOGUE[name].files if name in CATALOGUE else ("config.json",)
    return all((folder / f).is_file() for f in files)


def folder(name: str) -> Path:
    return models_dir() / name


def missing(settings: Any) -> list[str]:
    return [n for n in retrieval_models(settings) if not is_present(n)]


def minutes(names: list[str]) -> int:
    return sum(CATALOGUE[n].minutes for n in names if n in CATALOGUE)


def check_present(settings: Any) -> None:
    """ConfigError, before any work, when a ``models:`` model the retrieval settings load is missing: it names
    the command that builds them (never falls back to another model)."""
    absent = missing(settings)
    if not absent:
        return
    buildable = all(n in CATALOGUE for n in absent)
    where = ", ".join(str(folder(n)) for n in absent)
    raise ConfigError(
        f"preset {settings.preset!r} needs the trained model(s) {', '.join(absent)}, which are not at {where}",
        hint=(f"train them once with `{build_command(settings.preset)}` (~{minutes(absent)} min on 2 cores; STORE: "
              "your document store), or set MEDCITE_MODELS_DIR to the folder that holds them"
              if buildable else "train them with `medcite train ...` (docs/MODELS.md), or set MEDCITE_MODELS_DIR"),
    )
