"""Issue 45: "is it there?" is an ability of each LLM backend's settings (``LLMConfig.check_reachable``): an
OpenAI-compatible server answers ``GET /models``, a llama.cpp GGUF file is on this machine, a local model's folder
exists. Each fails with its own hint; the build context calls it and knows no server."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from medcite import registry
from medcite.config import load_settings
from medcite.errors import LLMError
from medcite.llm.base import LLMConfig
from medcite.llm.llamacpp_backend import LlamaCppConfig
from medcite.llm.local_backend import LocalConfig
from medcite.llm.openai_backend import OpenAIConfig
from medcite.pipeline import context
from medcite.pipeline.context import Context
from oracle.gold import Gold
from oracle.server import OracleServer


@pytest.fixture
def server() -> Iterator[str]:
    """The test suite's OpenAI-compatible oracle server (it lists its models at ``GET /v1/models``)."""
    with OracleServer(Gold()).running() as url:
        yield url


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_an_openai_compatible_server_that_answers_is_reachable(server: str) -> None:
    OpenAIConfig(model="m", base_url=server).check_reachable()


def test_an_openai_compatible_server_that_does_not_answer_names_how_to_start_one() -> None:
    url = _closed_port()
    with pytest.raises(LLMError, match="does not answer") as err:
        OpenAIConfig(model="some/model", base_url=url).check_reachable()
    assert url in err.value.message
    hint = err.value.hint or ""
    assert "vllm serve some/model" in hint and "llama-server" in hint and "llm.base_url" in hint


def test_a_llamacpp_gguf_file_that_is_not_here_is_named_with_its_own_hint(tmp_path: Path) -> None:
    missing = tmp_path / "model.gguf"
    with pytest.raises(LLMError, match="GGUF file .* is not on this machine") as err:
        LlamaCppConfig(model=str(missing)).check_reachable()
    assert "hf download" in (err.value.hint or "") and "llm.gguf_file" in (err.value.hint or "")


def test_a_local_model_folder_that_is_not_here_is_named_with_its_own_hint(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMError, match="not on this machine") as err:
        LocalConfig(model=str(tmp_path / "no-such-model")).check_reachable()
    assert "packaged SmolLM2" in (err.value.hint or "")
    LocalConfig().check_reachable()  # the packaged model is installed
    (tmp_path / "here").mkdir()
    LocalConfig(model=str(tmp_path / "here")).check_reachable()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LLMError, match="not in the Hugging Face cache"):
        LocalConfig(model="some-org/a-model-never-downloaded").check_reachable()
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    LocalConfig(model="some-org/a-model-never-downloaded").check_reachable()  # fetched on first use


def test_the_base_config_has_nothing_to_reach() -> None:
    assert LLMConfig.check_reachable is not OpenAIConfig.check_reachable
    assert "httpx" not in Path(context.__file__).read_text(encoding="utf-8")  # the context knows no server


#: an LLM backend whose own check fails, with its own hint
UNREACHABLE = '''
from typing import Any, Literal

from medcite.errors import LLMError
from medcite.llm.base import BaseLLM, LLMConfig


class FarAwayConfig(LLMConfig):
    backend: Literal["far-away"] = "far-away"

    def check_reachable(self) -> None:
        raise LLMError("the far-away model is out of reach", hint="walk over there")


class FarAway(BaseLLM):
    Config = FarAwayConfig
    name = "far-away"

    @classmethod
    def from_config(cls, cfg: Any, ctx: Any, *, cache: Any = None) -> "FarAway":
        raise AssertionError("built although unreachable")
'''


def test_the_context_asks_the_backend_and_adds_the_offline_swap(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "far_away_llm.py").write_text(textwrap.dedent(UNREACHABLE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "far_away_llm", raising=False)
    registry.register("llm", "far-away", "far_away_llm:FarAway")
    try:
        settings = load_settings("offline", ["llm.backend=far-away"])
        with Context(settings) as ctx, pytest.raises(LLMError, match="out of reach") as err:
            ctx.llm()
    finally:
        registry._BACKENDS["llm"].pop("far-away", None)
    hint = err.value.hint or ""
    assert hint.startswith("walk over there; or run offline: ") and "llm.backend=local" in hint
