"""Global options (-q, -v) work before or after the sub-command (issue 16, item 7)."""

from __future__ import annotations

import logging

import click
import pytest
from click.testing import CliRunner

from medcite import progress
from medcite.cli.main import GLOBAL_FLAGS, cli, hoist_global_options


def _walk(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command]]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        out.append((name, cmd))
        if isinstance(cmd, click.Group):
            out.extend((f"{name} {sub}", c) for sub, c in _walk(cmd, ctx))
    return out


def test_no_sub_command_reuses_a_global_flag() -> None:
    ctx = click.Context(cli)
    commands = _walk(cli, ctx)
    assert len(commands) > 20
    for name, cmd in commands:
        for param in cmd.params:
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                assert not GLOBAL_FLAGS.match(opt), f"`medcite {name}` defines {opt}, a global flag"


@pytest.mark.parametrize(("args", "expected"), [
    (["ingest", "f.xml", "-q"], ["-q", "ingest", "f.xml"]),
    (["-q", "ingest", "f.xml"], ["-q", "ingest", "f.xml"]),
    (["train", "encoder", "--verbose", "-vv"], ["--verbose", "-vv", "train", "encoder"]),
    (["ask", "--", "-q"], ["ask", "--", "-q"]),  # after --, a question may read -q
    (["search", "-k", "10"], ["search", "-k", "10"]),
])
def test_hoist(args: list[str], expected: list[str]) -> None:
    assert hoist_global_options(args) == expected


def test_quiet_after_the_sub_command_silences_progress_and_logs() -> None:
    progress.set_quiet(False)
    try:
        result = CliRunner().invoke(cli, ["config", "presets", "-q"])
        assert result.exit_code == 0, result.output
        assert not progress.enabled()
        assert logging.getLogger("medcite").level == logging.ERROR
        result = CliRunner().invoke(cli, ["config", "presets", "-v"])
        assert result.exit_code == 0, result.output
        assert logging.getLogger("medcite").level == logging.INFO
    finally:
        progress.set_quiet(False)
        logging.getLogger("medcite").setLevel(logging.WARNING)
