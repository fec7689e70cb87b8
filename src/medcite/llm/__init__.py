"""The LLM layer: one protocol, backends by name (openai, local, llamacpp, none), cache, trace, prompts.
The build context (:class:`medcite.pipeline.Context`) makes an LLM: ``Context(settings).llm()``.

See docs/LLM.md. Heavy dependencies (httpx, transformers, llama-cpp-python) load only with their backend.
"""

from .base import LLM, Completion, llm_enabled

__all__ = ["LLM", "Completion", "llm_enabled"]
