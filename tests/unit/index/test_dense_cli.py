"""`medcite index dense` in-process: build, update, import, and clean errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _dense_fakes import fill_store, make_articles, make_tiny_bert, make_tiny_st
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import FileStats
from medcite.index.dense import folder as fo
from medcite.index.dense.faiss_backend import FaissIndex
from medcite.types import Article


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("cli-models")
    return str(make_tiny_st(root / "st", make_tiny_bert(root / "bert", seed=3)))


def run(*args: str) -> object:
    return CliRunner().invoke(cli, ["-q", "index", "dense", *args], catch_exceptions=False)


def test_build_then_update_from_the_command_line(tmp_path, tiny_st: str) -> None:
    arts = make_articles(12)
    store = fill_store(tmp_path / "store", arts)
    out = tmp_path / "dense"
    res = run("--store", str(tmp_path / "store"), "--out", str(out), "--encoder", tiny_st,
              "--index-type", "hnsw", "--batch-size", "4", "--chunk-size", "5", "--set", "indexes.dense.threads=1")
    assert res.exit_code == 0, res.output
    assert "12 documents" in res.output and "hnsw" in res.output
    manifest = fo.read(out)
    assert manifest["encoder"]["spec"]["batch_size"] == 4 and manifest["encoder"]["spec"]["model"] == tiny_st
    r = FaissIndex(out)  # the query encoder comes from the manifest
    assert r.search(arts[4].text, 1)[0].pmid == arts[4].pmid
    with store.transaction() as tx:
        tx.upsert([Article("99", "zebrafish fin regeneration", "")], FileStats(path="u"))
    res = run("--store", str(tmp_path / "store"), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "13 documents" in res.output and "hnsw" in res.output


def test_import_from_embeddings_from_the_command_line(tmp_path, tiny_st: str) -> None:
    emb = tmp_path / "emb"
    emb.mkdir()
    np.save(emb / "embeds_chunk_0.npy", np.eye(32, dtype=np.float32)[:5])
    (emb / "pmids_chunk_0.json").write_text(json.dumps(["11", "12", "13", "14", "15"]))
    res = run("--from-embeddings", str(emb), "--out", str(tmp_path / "dense"), "--encoder", tiny_st)
    assert res.exit_code == 0, res.output
    assert "5 documents" in res.output
    r = FaissIndex(tmp_path / "dense")
    assert r.search_vectors(np.eye(32, dtype=np.float32)[3:4], 1)[0][0].pmid == "14"
    again = run("--from-embeddings", str(emb), "--out", str(tmp_path / "dense"), "--encoder", tiny_st)
    assert again.exit_code == 1 and "already holds a dense index" in again.output


def test_wrong_sizes_and_unknown_models_are_clean_errors(tmp_path, tiny_st: str) -> None:
    emb = tmp_path / "emb"
    emb.mkdir()
    np.save(emb / "embeds_chunk_0.npy", np.ones((2, 8), dtype=np.float32))
    (emb / "pmids_chunk_0.json").write_text(json.dumps(["1", "2"]))
    res = run("--from-embeddings", str(emb), "--out", str(tmp_path / "d"), "--encoder", tiny_st)
    assert res.exit_code == 1 and "8-d" in res.output and "hint:" in res.output
    fill_store(tmp_path / "store", make_articles(3))
    res = run("--store", str(tmp_path / "store"), "--out", str(tmp_path / "d2"), "--encoder", "nobody/nothing-here")
    assert res.exit_code == 1 and "not available offline" in res.output
    res = run("--out", str(tmp_path / "d3"))
    assert res.exit_code == 1 and "--from-embeddings" in res.output
    res = run("--store", str(tmp_path / "store"), "--out", str(tmp_path / "d4"), "--encoder", str(tmp_path / "emb"))
    assert res.exit_code == 1 and "is not a model" in res.output
