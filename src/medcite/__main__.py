"""``python -m medcite`` runs the CLI."""

from medcite.cli.main import cli

cli()
