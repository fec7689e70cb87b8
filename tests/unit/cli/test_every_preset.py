"""Every shipped preset resolves to valid settings and says what it is."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from medcite.config import load_settings, preset_names


@pytest.mark.parametrize("name", preset_names())
def test_preset_loads_and_describes_itself(name: str) -> None:
    settings = load_settings(name)
    raw = json.loads((resources.files("medcite") / "presets" / f"{name}.json").read_text(encoding="utf-8"))
    assert len(raw.get("description", "")) > 20, f"{name}: no description"
    assert settings.hash() == load_settings(name).hash()  # deterministic


def test_int8_variant_differs_only_by_quantization() -> None:
    base, q8 = load_settings("trained-ce"), load_settings("trained-ce-int8")
    assert q8.rerank.quantize and not base.rerank.quantize
    assert q8.rerank.model_copy(update={"quantize": False}) == base.rerank
    assert q8.retrieve == base.retrieve and q8.indexes == base.indexes
