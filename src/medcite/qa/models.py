"""The qa stage's trained models: where they are and how a head is read.

Each model is a small folder written by one ``medcite train`` command: a JSON head (format, feature version,
feature list, weights or a LightGBM model file, tuned thresholds) and ``training.json``. Presets name them
``models:NAME``: trained here (``$MEDCITE_MODELS_DIR``) or shipped with medcite (:mod:`medcite.trained_models`);
a missing one fails at build time with the command that makes it. The encoder the features need (the packaged
MiniLM unless a head says otherwise) is loaded once per context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..io import read_model_head
from ..paths import MODELS_PREFIX

#: model kind -> the medcite model of that kind (its build command names the data it reads)
DEFAULT_MODELS = {"yesno": "medcite-yesno", "ideal": "medcite-ideal"}


def train_command(kind: str, out: Path | str) -> str:
    """``medcite train KIND`` with this checkout's data paths, writing to ``out``."""
    from ..trained_models import data_path

    data = " ".join(f"--data {data_path(d)}" for d in (("bioasq", "pubmedqa") if kind == "yesno" else ("bioasq",)))
    return f"medcite train {kind} {data} --out {out}"


def model_folder(name: str, kind: str, head_file: str) -> Path:
    """``models:NAME`` (trained here or shipped) or a folder -> the folder holding ``head_file``; ConfigError
    with the command that makes it."""
    from ..trained_models import make_command, resolve

    if name.startswith(MODELS_PREFIX):
        folder = Path(resolve(name, train_command(kind, "FOLDER").removesuffix(" --out FOLDER")))
        how = make_command(name)
    else:
        folder = Path(name).expanduser()
        how = train_command(kind, folder)
    if not (folder / head_file).is_file():
        raise ConfigError(
            f"the trained {kind} model {name!r} is not at {folder} (no {head_file})",
            hint=f"make it with `{how}`, or set qa.{kind}_model to another model",
        )
    return folder


def read_head(folder: Path, head_file: str, fmt: str, kind: str, feature_version: int | None = None
              ) -> dict[str, Any]:
    """The JSON head in ``folder``; ConfigError naming the rebuild command if it is not of format ``fmt`` or was
    trained on another version of the features."""
    from ..trained_models import SHIPPED_DIR, make_command

    inside = folder.resolve().parent in (SHIPPED_DIR,) or folder.name == DEFAULT_MODELS[kind]
    how = make_command(DEFAULT_MODELS[kind]) if inside else train_command(kind, folder)
    return read_model_head(folder / head_file, fmt, kind, f"rebuild it with `{how}`", feature_version)
