"""Backend names are compared only where they are registered (issue 34): outside ``registry.py`` and a backend's
own files (the module of its class and of its settings), code asks a config what it can do (``calls_nothing``,
``needs_server``, ``offline_stand_in``, ``packaged_model``, an engine's ``build_command``, a reranker's
``offline_swap``) instead of testing ``cfg.backend == "name"``.

The scan reads every module of src/medcite and finds each comparison of something named ``backend`` (an attribute,
a variable or a ``["backend"]`` key) with a registered backend name, alone or in a tuple, list or set.
``REMAINING`` lists the comparisons not yet replaced, per file: the count may only go down.
"""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from pathlib import Path

from medcite import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "medcite"

#: comparisons still to replace by an ability (file relative to src/medcite -> how many)
REMAINING = {
}


def _registered() -> tuple[set[str], set[Path]]:
    names: set[str] = set()
    own: set[Path] = {SRC / "registry.py"}
    for stage in registry.stages():
        for name in registry.names(stage.name):
            names.add(name)
            target, _ = registry._BACKENDS[stage.name][name]
            modules = [target.partition(":")[0]]
            try:
                modules.append(registry.config_class(stage.name, name).__module__)
            except Exception:  # noqa: BLE001 - a stage without settings per backend (tasks): its class's file only
                pass
            for module in modules:
                if module.startswith("medcite."):
                    found = importlib.util.find_spec(module)
                    if found is not None and found.origin:
                        own.add(Path(found.origin).resolve())
    return names, own


def _is_backend(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "backend"
    if isinstance(node, ast.Name):
        return node.id == "backend"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "backend"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        return len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "backend"
    return False


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {s for e in node.elts for s in _strings(e)}
    return set()


def comparisons(names: set[str], own: set[Path]) -> list[tuple[str, int, str]]:
    """(file, line, source) of each comparison of a ``backend`` with a registered name outside its own files."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        if path.resolve() in own:
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if any(_is_backend(s) for s in sides) and any(_strings(s) & names for s in sides):
                out.append((str(path.relative_to(SRC)), node.lineno, ast.get_source_segment(text, node) or ""))
    return out


def test_no_new_comparison_with_a_backend_name_outside_its_own_files() -> None:
    names, own = _registered()
    found = comparisons(names, own)
    counts = Counter(f for f, _, _ in found)
    over = {f: n for f, n in counts.items() if n > REMAINING.get(f, 0)}
    assert not over, "ask the config what it can do instead: " + "; ".join(
        f"{f}:{line}: {src}" for f, line, src in found if f in over)
    # a comparison replaced: lower REMAINING so it cannot come back
    assert counts == Counter(REMAINING), dict(counts)


def test_the_offline_and_llm_code_compares_no_backend_name() -> None:
    names, own = _registered()
    for f, line, src in comparisons(names, own):
        assert not f.startswith(("pipeline/context.py", "presets/inventory.py", "presets/offline.py",
                                 "presets/index_purpose.py", "pipeline/multihop.py")), f"{f}:{line}: {src}"


def test_the_scan_finds_a_comparison() -> None:
    tree = ast.parse('if settings.index.backend == "milvus" or cfg.backend in ("openai", "x"): pass')
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    assert all(any(_is_backend(s) for s in [c.left, *c.comparators]) for c in compares) and len(compares) == 2
    assert _strings(compares[1].comparators[0]) & {"openai"}
