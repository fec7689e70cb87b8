"""The text-to-text NLI stance backend (``t5-nli``, SciFive-MedNLI in CLaC 2024 System 2) on a tiny T5 built here:
the label words' log-likelihoods, normalised, are the stance probabilities; the input follows the template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medcite.attribute.t5_nli import SCIFIVE_MEDNLI, T5NLIConfig, T5NLIStance
from medcite.config import load_settings
from medcite.errors import ConfigError

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_t5_nli

    return build_tiny_t5_nli(tmp_path_factory.mktemp("t5nli") / "m")


def test_probabilities_are_the_softmax_of_the_label_words_likelihoods(tiny: Path) -> None:
    import torch

    stance = T5NLIStance.from_config(T5NLIConfig(model=str(tiny)), None)
    claims, passages = ["statins lower ldl", "malaria kills children"], ["statins lower ldl", "sleep apnea"]
    got = stance.probabilities(claims, passages)
    assert got.shape == (2, 3) and np.allclose(got.sum(axis=1), 1.0)
    # by hand: one teacher-forced pass per label word (+ EOS) for the first pair, log-probabilities summed
    tok, model = stance.tokenizer, stance.model
    enc = tok(["mednli: sentence1: statins lower ldl sentence2: statins lower ldl"], return_tensors="pt")
    enc = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}
    logs = []
    with torch.inference_mode():
        for word in ("entailment", "contradiction", "neutral"):
            labels = torch.tensor([tok(word, add_special_tokens=False).input_ids + [tok.eos_token_id]])
            logp = torch.log_softmax(model(**enc, labels=labels).logits, dim=-1)
            logs.append(float(logp.gather(-1, labels.unsqueeze(-1)).sum()))
    assert np.allclose(got[0], np.exp(logs) / np.exp(logs).sum(), atol=1e-5)
    batched = T5NLIStance.from_config(T5NLIConfig(model=str(tiny), batch_size=1), None)
    assert np.allclose(batched.probabilities(claims, passages), got, atol=1e-5)  # padding changes nothing


def test_label_words_the_tokenizer_cannot_tell_apart_are_refused(tiny: Path) -> None:
    with pytest.raises(ConfigError, match="cannot tell the label words"):
        T5NLIStance.from_config(T5NLIConfig(model=str(tiny), labels=("yes", "no", "maybe")), None)
    with pytest.raises(ConfigError, match="premise"):
        T5NLIStance.from_config(T5NLIConfig(model=str(tiny), template="nli: {hypothesis}"), None)


def test_a_verdict_names_its_passage(tiny: Path) -> None:
    stance = T5NLIStance.from_config(T5NLIConfig(model=str(tiny)), None)
    (v,) = stance.classify([("statins lower ldl", "statins lower ldl. malaria kills children.")])
    assert v.label.value in ("supports", "contradicts", "neutral") and v.start is not None


def test_scifive_mednli_is_the_default_and_a_missing_model_says_how_to_get_it() -> None:
    cfg: Any = load_settings("clac24-llm-nli").ground.contradict_filter
    assert cfg.model == SCIFIVE_MEDNLI == "razent/SciFive-large-Pubmed_PMC-MedNLI"
    with pytest.raises(ConfigError, match="hf download"):
        T5NLIStance.from_config(T5NLIConfig(), None)
