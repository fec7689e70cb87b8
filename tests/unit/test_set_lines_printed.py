"""``--set`` options are written in one place (issue 34): :func:`medcite.set_option.set_line`, which
:func:`medcite.config.set_lines` prints a settings difference with. Every hint, error and help text builds its
``--set`` options there, so no string literal of src/medcite spells one out by hand.

The scan reads every module's string literals (f-string parts included) and finds each that writes an option:
``--set `` followed by a ``path=value`` or by a formatted value. Left out: docstrings (documentation), the
definitions of the ``--set`` click option itself, and prose that names the option (``with the same --set
values``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from medcite.config import load_settings, set_lines
from medcite.set_option import set_line

SRC = Path(__file__).resolve().parents[2] / "src" / "medcite"

#: the one place that formats a ``--set`` option
PRINTER = "set_option.py"

#: ``--set`` then an option (a token holding ``=``), or at the end of a literal (an f-string's value follows)
OPTION = re.compile(r"--set (\S*=|$)")


def _skipped(tree: ast.Module) -> set[int]:
    """The ids of the docstrings and of the strings of each ``--set`` click option definition."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and a.value == "--set" for a in node.args):
            out.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Constant))
    return out


def _writes_an_option(text: object) -> bool:
    return isinstance(text, str) and OPTION.search(text) is not None


def literals(src: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal of the module ``src`` that writes a ``--set`` option by hand."""
    tree = ast.parse(src)
    skipped = _skipped(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in skipped and _writes_an_option(node.value)]


def test_no_set_option_is_written_outside_the_printer() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel != PRINTER:
            found += [f"{rel}:{line}: {text!r}" for line, text in literals(path.read_text(encoding="utf-8"))]
    assert not found, "build it with medcite.set_option.set_line (or config.set_lines): " + "; ".join(found)


def test_the_scan_finds_a_hand_written_option() -> None:
    src = '''
def f(where):
    """Docs may say --set a.b=1."""
    x = f"--set {where}=auto"
    y = "or --set a.b=1"
    z = "rerun with the same --set values"
    click.option("--set", "overrides", help="e.g. --set retrieve.k=50")
'''
    assert sorted(literals(src)) == [(4, "--set "), (5, "or --set a.b=1")]


def test_set_line_prints_as_set_lines_does() -> None:
    assert set_line("llm.backend", "local") == "--set llm.backend=local"
    assert set_line("llm.model", None) == "--set llm.model=null"
    assert set_line("rerank.top_n", 100) == "--set rerank.top_n=100"
    assert set_line("retrieve.queries", ["original", "topic_narrative"]) == \
        """--set 'retrieve.queries=["original","topic_narrative"]'"""
    assert set_line("stance.model", "models:my stance") == "--set 'stance.model=models:my stance'"
    # a settings difference prints through it: one changed value, one option
    before = load_settings("offline")
    assert set_lines(before, load_settings("offline", ["retrieve.k=7"])) == [set_line("retrieve.k", 7)]
