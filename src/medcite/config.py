"""Nested pydantic settings, JSON presets that override only what they change, and dotted overrides.

Every stage owns one sub-model (in :mod:`medcite.stage_settings`, re-exported here). ``--set a.b=value``
on the CLI overrides any field; the fully resolved settings and their hash are written into every run
directory and index manifest.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError
from .stage_settings import (
    BranchSettings,
    CorpusSettings,
    DenseSettings,
    EvidenceSettings,
    GenerateSettings,
    IndexSettings,
    LLMSettings,
    MedCPTSettings,
    PRFSettings,
    RerankSettings,
    RetrieveSettings,
    SparseSettings,
    _Section,
)

__all__ = [
    "Settings",
    "load_settings",
    "parse_override",
    "preset_names",
    "settings_hash",
    "CorpusSettings",
    "SparseSettings",
    "DenseSettings",
    "IndexSettings",
    "BranchSettings",
    "PRFSettings",
    "RetrieveSettings",
    "EvidenceSettings",
    "GenerateSettings",
    "LLMSettings",
    "MedCPTSettings",
    "RerankSettings",
]



class Settings(_Section):
    """The whole configuration of one medcite run."""

    preset: str = Field("offline", description="Name of the preset these settings started from.")
    corpus: CorpusSettings = Field(default_factory=CorpusSettings, description="Ingest behaviour.")
    index: IndexSettings = Field(default_factory=IndexSettings, description="Index backends.")
    retrieve: RetrieveSettings = Field(default_factory=RetrieveSettings, description="First-stage retrieval.")
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings, description="Evidence selection.")
    generate: GenerateSettings = Field(default_factory=GenerateSettings, description="Answer generation.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="Language model used by LLM stages.")
    rerank: RerankSettings = Field(default_factory=RerankSettings, description="Reranking of retrieved hits.")

    def hash(self) -> str:
        return settings_hash(self)


def settings_hash(settings: BaseModel) -> str:
    blob = json.dumps(settings.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def preset_names() -> list[str]:
    folder = resources.files("medcite") / "presets"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def _read_preset(name: str, chain: tuple[str, ...] = ()) -> dict[str, Any]:
    if name in chain:
        raise ConfigError(f"preset {name!r} extends itself through {' -> '.join(chain)}")
    path = Path(name)
    if path.suffix == ".json" and path.exists():
        text = path.read_text(encoding="utf-8")
    else:
        res = resources.files("medcite") / "presets" / f"{name}.json"
        if not res.is_file():
            raise ConfigError(
                f"unknown preset {name!r}",
                hint=f"choose one of: {', '.join(preset_names())} (or give a path to a .json preset file)",
            )
        text = res.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"preset {name!r} is not valid JSON: {exc}") from exc
    parent = data.pop("extends", None)
    data.pop("description", None)
    if parent:
        return _deep_merge(_read_preset(parent, (*chain, name)), data)
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"rerank.top_k=30"`` -> (["rerank", "top_k"], 30). Values are JSON when they parse, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"cannot read override {item!r}", hint="write it as section.field=value, e.g. retrieve.k=50")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip().split("."), value


def load_settings(preset: str = "offline", overrides: list[str] | tuple[str, ...] = ()) -> Settings:
    """Resolve a preset (with its ``extends`` chain) and dotted overrides into validated Settings."""
    data = _read_preset(preset)
    data["preset"] = preset
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {part!r} is not a section")
        node[path[-1]] = value
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(
            f"invalid settings: {problems}",
            hint="run `medcite config show` to see every field with its description",
        ) from None
