"""What ``medcite view`` serves: the viewer's web application over a folder of runs. Importing this module imports
the viewer, so a missing ``web`` extra (fastapi, jinja2) is an ImportError here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI

from ..viewer.app import create_app


def viewer_app(runs_dir: Path, allowed_hosts: Sequence[str] | None) -> FastAPI:
    """The viewer over ``runs_dir``, answering only the ``allowed_hosts`` (None: any Host header)."""
    return create_app(runs_dir, allowed_hosts=allowed_hosts)
