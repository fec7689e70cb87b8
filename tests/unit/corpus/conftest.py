"""Fixtures shared by the corpus tests."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    """write(name, text_or_bytes, gz=False) -> Path inside tmp_path/in."""

    def _write(name: str, content: str | bytes, gz: bool = False) -> Path:
        data = content.encode("utf-8") if isinstance(content, str) else content
        path = tmp_path / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if gz else data)
        return path

    return _write
