from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.train.data import Pair
from medcite.train.encoder import unique_batches

st = pytest.importorskip("sentence_transformers")


def test_unique_batches_never_repeat_a_question_or_document() -> None:
    pairs = [Pair(f"q{i % 5}", f"p{i % 7}", "q", "t", 1.0) for i in range(35)]
    batches = unique_batches(pairs, 4, seed=0)
    for batch in batches:
        assert len({p.qid for p in batch}) == len(batch) == len({p.pmid for p in batch})
        assert 2 <= len(batch) <= 4
    assert sum(len(b) for b in batches) >= 33  # at most a few leftovers of one
    assert unique_batches(pairs, 4, seed=0) == batches


def test_cli_train_encoder_end_to_end(tiny_corpus: tuple[Path, Path], tiny_body: Path, tmp_path: Path) -> None:
    data, store = tiny_corpus
    out = tmp_path / "enc"
    args = ["-q", "train", "encoder", "--data", str(data), "--corpus", str(store), "--base", str(tiny_body),
            "--out", str(out), "--epochs", "1", "--batch-size", "4", "--seed", "2", "--dev-fraction", "0.25",
            "--max-length", "64", "--threads", "1", "--lr", "1e-3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "training.json").read_text())
    assert report["kind"] == "bi-encoder" and report["pairs"]["positive"] == 18
    assert 0 <= report["metrics"]["map@10_after"] <= 1
    # a sentence-transformers folder that loads by path, and the training changed the weights
    trained = st.SentenceTransformer(str(out), device="cpu")
    base = st.SentenceTransformer(str(tiny_body), device="cpu")
    a, b = trained.encode(["metformin treats diabetes"]), base.encode(["metformin treats diabetes"])
    assert a.shape == b.shape and not (a == b).all()
    again = CliRunner().invoke(cli, [*args[:10], str(tmp_path / "enc2"), *args[11:]])
    assert again.exit_code == 0
    assert json.loads((tmp_path / "enc2" / "training.json").read_text())["loss"] == report["loss"]
