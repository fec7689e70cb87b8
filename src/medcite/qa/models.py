"""The qa stage's trained models: where they are, how they are named, and the shared sentence encoder.

Each model is a small folder written by one ``medcite train`` command: a JSON head (format, feature list,
weights or a LightGBM model file, tuned thresholds) and ``training.json``. Presets name them
``models:NAME`` (:func:`medcite.paths.models_dir`); a missing one fails at build time with the command that
makes it. The encoder the features need (the packaged MiniLM unless a head says otherwise) is loaded once
per context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..io import read_model_head
from ..paths import MODELS_PREFIX, models_dir

#: model kind -> the command that trains it (without --out)
TRAIN_COMMANDS = {
    "yesno": "medcite train yesno --data BIOASQ.json.gz --data ori_pqal.json",
    "ideal": "medcite train ideal --data BIOASQ.json.gz",
}


def model_folder(name: str, kind: str, head_file: str) -> Path:
    """``models:NAME`` or a folder -> the folder holding ``head_file``; ConfigError with the train command."""
    if name.startswith(MODELS_PREFIX):
        rel = name[len(MODELS_PREFIX):].strip()
        folder = models_dir() / rel
    else:
        rel, folder = name, Path(name).expanduser()
    if not rel or not (folder / head_file).is_file():
        raise ConfigError(
            f"the trained {kind} model {name!r} is not at {folder} (no {head_file})",
            hint=f"train it with `{TRAIN_COMMANDS[kind]} --out {folder}`, set MEDCITE_MODELS_DIR to the folder "
            f"that holds it, or set qa.{kind}_model to another model",
        )
    return folder


def read_head(folder: Path, head_file: str, fmt: str, kind: str) -> dict[str, Any]:
    """The JSON head in ``folder``; ConfigError naming the retrain command if it is not of format ``fmt``."""
    return read_model_head(folder / head_file, fmt, kind, f"retrain it with `{TRAIN_COMMANDS[kind]} --out {folder}`")


def encoder_dir(name: str) -> str:
    """``minilm`` -> the packaged all-MiniLM-L6-v2 folder; any other value is a local model folder."""
    if name.strip().lower() in ("minilm", "packaged-minilm"):
        from ..index.dense.encoders import packaged_minilm_dir

        return str(packaged_minilm_dir())
    return name
