"""``medcite view RUNS_DIR``: serve the read-only run viewer (FastAPI + uvicorn) on loopback by default."""

from __future__ import annotations

import ipaddress
import logging
import socket
from pathlib import Path

import click

from ..errors import InputError, MissingExtraError
from ..rundir import RUN_ID_RE

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command("view")
@click.argument("runs_dir", type=click.Path(exists=True, file_okay=False, dir_okay=True, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Keep the loopback default unless you mean to share the runs.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="TCP port to listen on (0 picks a free one).")
def view(runs_dir: Path, host: str, port: int) -> None:
    """Browse the run directories in RUNS_DIR: answers, citations, evidence, and run comparisons.

    RUNS_DIR is a folder of runs (runs/), or one run (runs/my-run: its folder is served and the address
    printed opens that run). Read-only: nothing is changed. Open the printed address in a browser.
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "web", "medcite view") from exc
    try:
        from ..workflows.view import viewer_app
    except ImportError as exc:  # fastapi or jinja2 missing
        raise MissingExtraError(exc.name or "fastapi", "web", "medcite view") from exc

    runs_dir, page = runs_dir.resolve(), "/"
    if any((runs_dir / name).is_file() for name in ("config.json", "answers.jsonl")):
        # RUNS_DIR is itself one run: serve its parent folder and open that run's page
        if not RUN_ID_RE.match(runs_dir.name):
            raise InputError(f"run directory name {runs_dir.name!r} is not a run id",
                             hint="rename it to letters, digits, '.', '_' and '-' only, or pass its parent folder")
        runs_dir, page = runs_dir.parent, f"/run/{runs_dir.name}"
    if port == 0:  # pick a free port now so the address printed below is the real one
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host.strip("[]"), 0))
            port = int(probe.getsockname()[1])
    loopback = is_loopback(host)
    if not loopback:
        click.echo(f"warning: serving on {host}, reachable from other machines; the viewer has no login.",
                   err=True)
    # on loopback, refuse other Host headers so a web page cannot reach the viewer by DNS rebinding
    hosts = sorted({"localhost", "127.0.0.1", "::1", "[::1]", host.strip("[]")}) if loopback else None
    app = viewer_app(runs_dir, hosts)
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    click.echo(f"medcite viewer: http://{shown}:{port}{page}  (runs in {runs_dir}; Ctrl+C stops)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
