"""Root of the ``medcite`` CLI. Sub-commands live one module each and are imported only when used."""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
from typing import Any, NoReturn

import click

from .. import __version__
from ..errors import MedciteError
from ..progress import set_quiet
from ..write_failures import write_failure

# command name -> "module:attribute" (relative to medcite.cli); keep heavy imports inside the commands
COMMANDS: dict[str, str] = {
    "ingest": "ingest:ingest",
    "index": "index:index",
    "search": "search:search",
    "eval": "evaluate:eval_group",
    "config": "config:config_group",
    "ask": "ask:ask",
    "demo": "demo:demo",
    "run": "run:run",
    "ground": "ground:ground",
    "stance": "stance:stance",
    "validate": "validate:validate",
    "corpus": "corpus:corpus_group",
    "view": "view:view",
    "train": "train:train",
    "models": "models:models_group",
    "bioasq": "bioasq:bioasq_group",
    "pubmed": "pubmed:pubmed_group",
    "cache": "cache:cache_group",
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use (keeps `medcite --help` fast)."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name].partition(":")
            return getattr(importlib.import_module(f"medcite.cli.{module}"), attr)  # type: ignore[no-any-return]
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # bytes the locale cannot decode reach Python as lone surrogates; nothing downstream can write them
        for arg in args:
            if _SURROGATE.search(arg):
                shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                click.echo(f"error: the argument '{shown}' is not valid UTF-8 text", err=True)
                click.echo("  hint: re-type it, or convert the file name / text to UTF-8", err=True)
                ctx.exit(2)
        ctx.meta["medcite.args"] = list(args)  # to name the input files in errors without a reader's own
        if ctx.parent is None:
            args = hoist_global_options(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MedciteError as exc:
            _fail(ctx, exc)
        except OSError as exc:
            # a file system error outside the checked paths: one line naming the file, not a traceback
            path = exc.filename or _written(ctx)
            failed = write_failure(exc, path)
            if failed is not None:
                _fail(ctx, failed)
            _fail(ctx, MedciteError(f"{path}: {exc.strerror or exc}"))
        except (RecursionError, EOFError) as exc:
            # a reader without its own check met JSON/XML nested thousands deep, or a gzip stream cut short
            # (click would print a bare "Aborted!" for EOFError): name the files the command was given
            what = "nested too deeply to read" if isinstance(exc, RecursionError) else "truncated (corrupt gzip?)"
            _fail(ctx, _input_error(ctx, f"is {what}"))
        except ValueError as exc:
            # json.loads met an integer past Python's int-string conversion limit, in a reader without its own check
            if "integer string conversion" in str(exc):
                _fail(ctx, _input_error(ctx, f"holds a number of more than {sys.get_int_max_str_digits()} digits"))
            _fail_if_refused_write(ctx, exc)
            raise
        except Exception as exc:  # only a refused write becomes an error here; anything else goes on
            _fail_if_refused_write(ctx, exc)
            raise


def _fail_if_refused_write(ctx: click.Context, exc: BaseException) -> None:
    """A write the file system refused that a writer let through (SQLite, tantivy, FAISS say it in their own
    words): one error naming what the command writes."""
    failed = write_failure(exc, _written(ctx))
    if failed is not None:
        _fail(ctx, failed)


#: options whose value is a file or folder the command writes
_OUTPUT_OPTIONS = ("--out", "--run-dir", "--output", "-o", "--store", "--cache-dir", "--dest", "--ingest")


def _written(ctx: click.Context) -> str:
    """The files and folders the command was told to write (its --out, --store, --output ...), for an error whose
    library did not say which file it was writing."""
    args = ctx.meta.get("medcite.args", [])
    found = [value for option, value in zip(args, args[1:], strict=False) if option in _OUTPUT_OPTIONS]
    found += [arg.split("=", 1)[1] for arg in args if arg.split("=", 1)[0] in _OUTPUT_OPTIONS and "=" in arg]
    return ", ".join(dict.fromkeys(found)) or "a file of the command's output (it named none)"


_SURROGATE = re.compile("[\ud800-\udfff]")
# the root's own flags; no sub-command defines an option of these names (tests/unit/test_cli_global_options.py)
GLOBAL_FLAGS = re.compile(r"^(-q|--quiet|-v+|--verbose)$")


def hoist_global_options(args: list[str]) -> list[str]:
    """``medcite ingest F -q`` = ``medcite -q ingest F``: the root's flags may come anywhere before ``--``.

    Only exact flag tokens move; an option's value that happens to read ``-q`` would move too, so no
    sub-command takes a value of that spelling (none does: values are paths, names and numbers).
    """
    cut = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:cut] if GLOBAL_FLAGS.match(a)]
    if not flags:
        return args
    rest = [a for a in args[:cut] if not GLOBAL_FLAGS.match(a)]
    return [*flags, *rest, *args[cut:]]


def _input_error(ctx: click.Context, what: str) -> MedciteError:
    """An error naming the files the command was given (the reader that failed did not say which)."""
    files = [a for a in ctx.meta.get("medcite.args", []) if os.path.isfile(a)]
    return MedciteError(f"an input {what}: {', '.join(files) or 'one of the inputs'}",
                        hint="check the file(s) named here")


def _fail(ctx: click.Context, exc: MedciteError) -> NoReturn:
    """Library errors become clean CLI errors: message, hint, exit code 1."""
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"  hint: {exc.hint}", err=True)
    ctx.exit(1)


def setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.WARNING
    if verbose == 1:
        level = logging.INFO
    elif verbose >= 2:
        level = logging.DEBUG
    if quiet:
        level = logging.ERROR
    root = logging.getLogger("medcite")
    root.setLevel(level)
    # the progress lines of long loops (medcite.progress) show by default where no bar does; -q hides them
    logging.getLogger("medcite.progress").setLevel(logging.NOTSET if quiet or level < logging.INFO else logging.INFO)
    handler = next((h for h in root.handlers if getattr(h, "_medcite", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._medcite = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    else:  # a second command in one process (in-process CLI tests): its stderr may be another stream
        handler.stream = sys.stderr  # type: ignore[attr-defined]


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.version_option(__version__, prog_name="medcite")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and only errors in the log.")
def cli(verbose: int, quiet: bool) -> None:
    """Answer biomedical questions from PubMed abstracts, every sentence cited by PMID."""
    setup_logging(verbose, quiet)
    set_quiet(quiet)


def main() -> None:  # pragma: no cover - console entry point
    cli()
