"""The LLM layer: one protocol, backends by name (openai, local, llamacpp, none), cache, trace, prompts.

See docs/LLM.md. Heavy dependencies (httpx, transformers, llama-cpp-python) load only with their backend.
"""

from .base import LLM, Completion, llm_enabled, make_llm

__all__ = ["LLM", "Completion", "llm_enabled", "make_llm"]
