"""Backends receive what they need from the build context, never the whole settings tree (issue 34): outside the
context modules (``context.py``, ``pipeline/``), no module reads ``ctx.settings``; a backend asks the context for
the one value it needs (``ctx.index_config(name)``, ``ctx.reranker_config()``, ``ctx.llm(name)``, ...).

``tasks/`` is left out: a task's ``ctx`` is its :class:`~medcite.tasks.base.RunContext`, whose ``settings`` are the
run's own. ``REMAINING`` lists the reads not yet replaced, per file: the count may only go down.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "medcite"
#: the modules that implement the build context and may read the whole settings tree
ALLOWED = ("context.py", "pipeline/", "tasks/")
#: reads still to replace (file relative to src/medcite -> how many)
REMAINING: dict[str, int] = {}


def settings_reads(text: str) -> list[int]:
    """Lines of each ``ctx.settings`` (an attribute ``settings`` of a name ``ctx``) in the source ``text``."""
    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Attribute)
            and node.attr == "settings" and isinstance(node.value, ast.Name) and node.value.id == "ctx"]


def test_backends_read_no_settings_from_the_build_context() -> None:
    found: Counter[str] = Counter()
    where = []
    for path in sorted(SRC.rglob("*.py")):
        name = str(path.relative_to(SRC))
        if name.startswith(ALLOWED):
            continue
        for line in settings_reads(path.read_text(encoding="utf-8")):
            found[name] += 1
            where.append(f"{name}:{line}")
    over = [w for w in where if found[w.partition(":")[0]] > REMAINING.get(w.partition(":")[0], 0)]
    assert not over, "ask the context for the value (ctx.index_config(name), ...) instead: " + ", ".join(over)
    assert found == Counter(REMAINING), dict(found)  # a read replaced: lower REMAINING so it cannot come back


def test_the_scan_finds_a_read_and_not_a_comment() -> None:
    text = "# ctx.settings.indexes\nx = ctx.settings.rerank\ny = self.settings\nz = ctx.index_config('bm25')\n"
    assert settings_reads(text) == [2]
