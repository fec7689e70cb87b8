"""workflows/index_dense.py and index_sparse.py: the settings the options make, and builds over a tiny store."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.errors import ConfigError, InputError
from medcite.workflows.index_dense import build_dense, dense_settings
from medcite.workflows.index_sparse import build_bm25

N_DOCS = 8  # conftest's store
HASH = '{"backend": "hash-bow"}'  # the fake encoder of tests/medcite_fakes.py, as --encoder JSON


def test_dense_settings_apply_the_encoder_and_layout_options() -> None:
    cfg = dense_settings("dense", "offline", [], HASH, None, index_type="hnsw", chunk_size=7)
    assert cfg.encoder.backend == "hash-bow" and cfg.index_type == "hnsw" and cfg.chunk_size == 7
    pair = dense_settings("dense", "offline", [], None, "ncbi/MedCPT-Query-Encoder")
    assert pair.encoder.backend == "hf-asymmetric"
    with pytest.raises(ConfigError, match="no FAISS index named 'bm25'"):
        dense_settings("bm25", "offline", [], None, None)


def test_dense_build_then_update_and_the_missing_inputs(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    cfg = dense_settings("dense", "offline", [], HASH, None)
    out, manifest = build_dense(cfg, store, tmp_path / "dense", new_encoder=True)
    assert out == tmp_path / "dense" and manifest["counts"]["live"] == N_DOCS
    assert manifest["encoder"]["name"] == build_dense(cfg, store, out)[1]["encoder"]["name"]  # a no-op update
    with pytest.raises(InputError, match="give --out DIR"):
        build_dense(cfg, None, None)
    with pytest.raises(InputError, match="give --store"):
        build_dense(cfg, None, tmp_path / "other")
    with pytest.raises(InputError, match="already holds a dense index"):
        build_dense(cfg, store, out, from_embeddings=[tmp_path])


def test_bm25_build_then_update(store: Path, tmp_path: Path) -> None:
    first = build_bm25(store, tmp_path / "bm25", "bm25", "offline", [])
    assert not first.existed and first.report.docs == N_DOCS and first.report.added == N_DOCS
    again = build_bm25(store, tmp_path / "bm25", "bm25", "offline", [])
    assert again.existed and again.report.added == 0 and again.folder == tmp_path / "bm25"
    with pytest.raises(ConfigError, match="no sparse index named 'dense'"):
        build_bm25(store, None, "dense", "offline", [])
