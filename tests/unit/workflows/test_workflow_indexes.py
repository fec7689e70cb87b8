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


def test_encoder_options_merge_into_the_encoder_settings() -> None:
    """--encoder / --query-encoder name the model; the user's --set device, dtype and batch size stay."""
    runtime = ["indexes.dense.encoder.device=cuda", "indexes.dense.encoder.dtype=float16",
               "indexes.dense.encoder.batch_size=256"]
    cfg = dense_settings("dense", "offline", runtime, "/models/my-encoder", None)
    enc = cfg.encoder
    assert (enc.backend, enc.model) == ("sentence-transformers", "/models/my-encoder")  # type: ignore[attr-defined]
    assert (enc.device, enc.dtype, enc.batch_size) == ("cuda", "float16", 256)
    pair = dense_settings("dense", "offline", runtime, None, "ncbi/MedCPT-Query-Encoder").encoder
    assert pair.backend == "hf-asymmetric" and (pair.device, pair.dtype, pair.batch_size) == ("cuda", "float16", 256)
    medcpt = dense_settings("dense", "offline", runtime, "medcpt", None).encoder
    assert medcpt.backend == "hf-asymmetric" and medcpt.device == "cuda"
    as_json = dense_settings("dense", "offline", runtime, HASH, None).encoder
    assert as_json.backend == "hash-bow" and (as_json.device, as_json.batch_size) == ("cuda", 256)
    # --batch-size sets that one field, over a --set of it, and keeps the rest
    opt = dense_settings("dense", "offline", runtime, "minilm", None, batch_size=64).encoder
    assert (opt.batch_size, opt.device, opt.dtype) == (64, "cuda", "float16")
    # without any of them the defaults hold: auto, auto, by device
    plain = dense_settings("dense", "offline", [], "minilm", None).encoder
    assert (plain.device, plain.dtype, plain.batch_size) == ("auto", "auto", None)


def test_encoder_option_drops_the_preset_models_own_settings_but_not_the_users() -> None:
    # pjs-config-1 indexes with intfloat/e5-base and its 'query: ' / 'passage: ' prefixes: they are e5's, not MiniLM's
    swapped = dense_settings("dense", "pjs-config-1", [], "minilm", None).encoder
    assert swapped.model == "minilm" and swapped.query_prefix is None and swapped.document_prefix is None  # type: ignore[attr-defined]
    mine = dense_settings("dense", "pjs-config-1", ["indexes.dense.encoder.query_prefix=q: "], "minilm", None).encoder
    assert mine.query_prefix == "q: " and mine.document_prefix is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="not a valid JSON object"):
        dense_settings("dense", "offline", [], '{"backend": ', None)


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
