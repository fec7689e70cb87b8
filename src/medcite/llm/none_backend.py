"""The ``none`` backend: the pipeline runs without any language model (extractive paths).

Stages check :func:`medcite.llm.base.llm_enabled` and take their no-LLM path; a stage that cannot work
without a model and is still asked to call this one gets a :class:`ConfigError` saying how to fix it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from ..errors import ConfigError
from ..set_option import set_line
from . import trace
from .base import BaseLLM, Completion, LLMConfig, Message

if TYPE_CHECKING:
    from ..context import BuildContext
    from .cache import LLMCache


class NoneConfig(LLMConfig):
    """No language model: every stage takes its no-LLM path."""

    backend: Literal["none"] = "none"
    calls_nothing: ClassVar[bool] = True


class NoneLLM(BaseLLM):
    """Refuses every call with a clear error; never cached or traced."""

    name = "none"
    Config = NoneConfig

    def __init__(self) -> None:
        super().__init__("none", cache=None)

    @classmethod
    def from_config(cls, cfg: NoneConfig, ctx: BuildContext | None = None, *,
                    cache: LLMCache | None = None) -> NoneLLM:
        return cls()

    def _generate(self, messages: list[Message], params: dict[str, object]) -> Completion:
        stage = trace.current_context().get("stage")
        what = f"the {stage!r} stage" if stage else "this stage"
        raise ConfigError(
            f"{what} needs a language model, but llm.backend is 'none'",
            hint=f"choose a backend, e.g. {set_line('llm.backend', 'local')} (the packaged SmolLM2, offline) or "
            f"{set_line('llm.backend', 'openai')} {set_line('llm.model', 'NAME')} "
            f"{set_line('llm.base_url', 'http://HOST:PORT/v1')}; "
            "or configure the extractive (no-LLM) variant of that stage",
        )
