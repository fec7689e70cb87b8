"""`medcite view`: options, loopback default, and the app it serves (uvicorn.run captured, not started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.cli.view import is_loopback


def test_help_shows_loopback_defaults() -> None:
    out = CliRunner().invoke(cli, ["view", "--help"]).output
    assert "RUNS_DIR" in out and "127.0.0.1" in out and "8765" in out


def test_view_serves_the_given_folder_on_loopback(runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from fastapi.testclient import TestClient

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app, **kw))
    result = CliRunner().invoke(cli, ["view", str(runs_dir), "--port", "9999"])
    assert result.exit_code == 0, result.output
    assert seen["host"] == "127.0.0.1" and seen["port"] == 9999
    assert "http://127.0.0.1:9999/" in result.output
    client = TestClient(seen["app"], base_url="http://127.0.0.1:9999")
    assert 'href="/run/alpha"' in client.get("/").text
    # DNS rebinding guard on loopback: a foreign Host header is refused
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400


def test_port_zero_prints_the_port_it_will_use(runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    result = CliRunner().invoke(cli, ["view", str(runs_dir), "--port", "0"])
    assert result.exit_code == 0
    assert 0 < seen["port"] < 65536 and f"http://127.0.0.1:{seen['port']}/" in result.output


def test_a_single_run_folder_serves_its_parent_and_prints_the_run_page(
        runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from fastapi.testclient import TestClient

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app))
    result = CliRunner().invoke(cli, ["view", str(runs_dir / "beta")])
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:8765/run/beta " in result.output
    client = TestClient(seen["app"], base_url="http://127.0.0.1:8765")
    assert client.get("/run/beta").status_code == 200 and client.get("/run/alpha").status_code == 200


def test_view_warns_when_not_on_loopback(runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    result = CliRunner().invoke(cli, ["view", str(runs_dir), "--host", "0.0.0.0"])
    assert result.exit_code == 0
    assert "reachable from other machines" in result.output


def test_view_rejects_a_missing_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["view", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "192.168.1.4", "example.org", "::"])
