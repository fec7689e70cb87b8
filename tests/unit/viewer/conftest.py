"""Fixtures for the viewer tests; the run builders live in viewer_runs.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from viewer_runs import write_json_file, write_run


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(root / "alpha")
    write_run(root / "beta", preset="clac25-a", pmids=("111", "333"))
    write_json_file(root / "beta" / "metrics.json", {"map10": 0.5, "rouge": {"r2": 0.25},
                                                     "per_topic": {"t1": {"map10": 0.75}}})
    write_json_file(root / "beta" / "validation.json", {"ok": False, "errors": ["topic t1: too many words"]})
    return root


@pytest.fixture
def client_for() -> Callable[[Path], Any]:
    from fastapi.testclient import TestClient

    from medcite.viewer.app import create_app

    def make(root: Path) -> TestClient:
        return TestClient(create_app(root), raise_server_exceptions=True)
    return make
