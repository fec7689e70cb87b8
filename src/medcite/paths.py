"""Where medcite finds shared evaluation data and keeps its caches (both configurable by env)."""

from __future__ import annotations

import os
from pathlib import Path


def shared_data_dir() -> Path:
    """``$MEDCITE_DATA_DIR``, else ``../shared/data`` beside the repository (where CI puts it)."""
    env = os.environ.get("MEDCITE_DATA_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "data"
        if (parent / "pyproject.toml").exists() and candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared" / "data"


def cache_dir() -> Path:
    """``$MEDCITE_CACHE_DIR``, else ``~/.cache/medcite``."""
    env = os.environ.get("MEDCITE_CACHE_DIR")
    path = Path(env) if env else Path.home() / ".cache" / "medcite"
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_dir() -> Path:
    """Where a command keeps a run directory the user did not place (``medcite ask`` without ``--out``):
    ``$MEDCITE_RUNS_DIR``, else ``runs`` in medcite's per-user data folder (platformdirs: ~/.local/share/medcite
    on Linux), never the current folder. Only named here; the command creates it when it writes a run."""
    env = os.environ.get("MEDCITE_RUNS_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("medcite")) / "runs"


MODELS_PREFIX = "models:"


def models_dir() -> Path:
    """Where trained models live: ``$MEDCITE_MODELS_DIR``, else ``<cache_dir>/models`` (~/.cache/medcite/models)."""
    env = os.environ.get("MEDCITE_MODELS_DIR")
    return Path(env).expanduser() if env else cache_dir() / "models"
