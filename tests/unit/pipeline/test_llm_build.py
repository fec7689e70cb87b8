"""Issue 45: building a context's LLM computes no offline swap plan unless an error needs its hint, so a stage
without an offline stand-in (here a reranker) does not stop a local LLM from being built."""

from __future__ import annotations

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.llm.local_backend import LocalBackend
from medcite.pipeline.context import Context
from medcite.presets.offline import offline_lines


def test_a_local_llm_builds_beside_a_reranker_without_an_offline_stand_in(hub_only: None) -> None:
    settings = load_settings("offline", ["rerank.backend=hub-only", "llm.backend=local"])
    with pytest.raises(ConfigError, match="no offline stand-in"):
        offline_lines(settings, "local")  # the swap plan itself is impossible ...
    with Context(settings) as ctx:
        llm = ctx.llm()  # ... yet the LLM, which needs none of it, builds
        assert isinstance(llm, LocalBackend)


def test_the_error_hint_is_still_there_when_an_llm_is_missing(hub_only: None) -> None:
    settings = load_settings("offline", ["rerank.backend=hub-only", "llm.backend=none"])
    with Context(settings) as ctx, pytest.raises(ConfigError, match="needs a language model") as err:
        ctx.llm(purpose="the test")
    assert "llm.backend=local" in (err.value.hint or "")  # the LLM's own stand-in, the stack having none
