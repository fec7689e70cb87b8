"""``--offline`` on the commands that take a preset and resolve it (issue 34): the settings they run are
``offline_settings`` of the preset, with the user's ``--set`` values last."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.presets.offline import is_local_model


def _show(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["config", "show", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["settings"]


def test_config_show_offline_swaps_what_is_not_here_and_keeps_the_users_values() -> None:
    plain = _show("--preset", "clac25-a")
    assert plain["rerank"]["backend"] == "cross-encoder" and plain["llm"]["backend"] == "openai"
    here = _show("--preset", "clac25-a", "--offline", "--set", "rerank.k=7")
    assert (here["rerank"]["backend"], here["rerank"]["k"], here["llm"]["backend"]) == ("embedding", 7, "local")
    # a user's --set wins over the swap, as it did before
    assert _show("--preset", "clac25-a", "--offline", "--set", "llm.backend=openai")["llm"]["backend"] == "openai"
    assert _show("--preset", "offline", "--offline") == _show("--preset", "offline")  # nothing to swap


def test_ground_swaps_the_stance_models_of_task_a() -> None:
    from medcite.workflows.tasks import settings_for

    s = settings_for("clac24-llm-nli", (), offline=True, no_llm=False, grounding=True)
    f = s.ground.contradict_filter
    assert f is not None and is_local_model(f.model) and s.ground.judge == "listwise"
    assert load_settings("clac24-llm-nli").ground.contradict_filter.model != f.model  # type: ignore[union-attr]


@pytest.mark.parametrize(("command", "has"), [(["run"], True), (["ask"], True), (["ground"], True),
                                              (["config", "show"], True), (["index", "bm25"], False)])
def test_the_commands_that_resolve_a_preset_offer_offline(command: list[str], has: bool) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert ("--offline" in result.output) is has
