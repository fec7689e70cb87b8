"""`models:NAME` references (trained models under $MEDCITE_MODELS_DIR, or shipped) and the presets that use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.paths import models_dir
from medcite.trained_models import resolve as resolve_models_ref


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(folder))
    return folder


def test_models_dir_follows_the_environment(models: Path) -> None:
    assert models_dir() == models


def test_models_dir_defaults_under_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEDCITE_MODELS_DIR", raising=False)
    monkeypatch.setenv("MEDCITE_CACHE_DIR", str(tmp_path / "cache"))
    assert models_dir() == tmp_path / "cache" / "models"


def test_plain_names_and_paths_pass_through(models: Path) -> None:
    assert resolve_models_ref("cross-encoder/ms-marco-MiniLM-L-6-v2", "x") == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert resolve_models_ref("/some/folder", "x") == "/some/folder"


def test_a_trained_model_resolves_to_its_folder(models: Path) -> None:
    (models / "ce").mkdir()
    (models / "ce" / "config.json").write_text("{}")
    assert resolve_models_ref("models:ce", "medcite train reranker") == str(models / "ce")


@pytest.mark.parametrize("name", ["models:ce", "models:", "models:empty"])
def test_a_missing_model_names_the_command_that_trains_it(models: Path, name: str) -> None:
    (models / "empty").mkdir()  # a folder without config.json is not a model
    with pytest.raises(ConfigError) as err:
        resolve_models_ref(name, "medcite train reranker")
    assert "medcite train reranker" in (err.value.hint or "")
    assert str(models) in str(err.value)


def test_the_trained_presets_fail_clearly_without_their_models(models: Path) -> None:
    from medcite.index.dense.encoders import resolve_model
    from medcite.pipeline import Context

    for preset in ("trained-ce", "trained-ce-int8", "trained-ensemble"):
        settings = load_settings(preset)
        assert settings.retrieve.branches[0].name == "bm25" and settings.rerank.top_n == 100
        with pytest.raises(ConfigError) as err:
            Context(settings).build("rerank", settings.rerank)
        assert "medcite models build medcite-minilm-ce-bioasq --bioasq" in str(err.value) + (err.value.hint or "")
    adapted = load_settings("hybrid-adapted").indexes["dense"].encoder.model
    with pytest.raises(ConfigError) as err:
        resolve_model(adapted)
    assert "medcite models build medcite-minilm-bi-bioasq --bioasq" in (err.value.hint or "")
