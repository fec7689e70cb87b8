"""The structure the code must keep: layers, no import cycles, stages built by name, light backend modules.

- the import-linter contract of pyproject.toml (``[tool.importlinter]``): a package imports only the
  packages below it;
- no two modules import each other, directly or through others (module-level imports);
- no stage imports another stage's backend modules, and the pipeline and tasks import no backend at all:
  they build every stage through the registry (the forbidden lists are computed from the registry, so a
  newly registered backend is covered without editing this test);
- importing any registered backend (to validate its settings) needs none of the heavy optional libraries:
  a missing extra is reported when the backend is built, not when a preset is read;
- ``cli/`` only parses options and prints: it constructs no registered backend (task, stance, index, ...), calls
  no ``from_config`` or ``registry.build`` and imports no backend module; ``medcite.workflows`` imports nothing
  from ``medcite.cli``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medcite import registry

grimp = pytest.importorskip("grimp")
pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]


def _backend_modules() -> dict[str, set[str]]:
    """Stage -> the modules of its registered (built-in) backends."""
    out: dict[str, set[str]] = {}
    for stage in registry.stages():
        for name in registry.names(stage.name):
            target, _ = registry._BACKENDS[stage.name][name]
            if target.startswith("medcite."):
                out.setdefault(stage.name, set()).add(target.partition(":")[0])
    return out


def _run_linter(config: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1]))"
    return subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_the_layer_contract_holds() -> None:
    result = _run_linter(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("medcite", exclude_type_checking_imports=True)
    cycles = sorted({tuple(sorted((a, b))) for a in graph.modules for b in graph.find_modules_directly_imported_by(a)
                     if a != b and graph.chain_exists(importer=b, imported=a)})
    assert cycles == []


def test_stages_import_no_other_stages_backends(tmp_path: Path) -> None:
    backends = _backend_modules()
    package_of = {"index": "medcite.index", "encoder": "medcite.index", "querygen": "medcite.retrieve",
                  "retriever": "medcite.retrieve", "rerank": "medcite.rerank", "evidence": "medcite.evidence",
                  "generate": "medcite.generate", "llm": "medcite.llm", "task": "medcite.tasks",
                  "stance": "medcite.attribute", "qa": "medcite.qa"}
    assert set(backends) <= set(package_of), "a new stage: say which package holds its backends"
    contracts = []
    every = sorted({m for mods in backends.values() for m in mods if not m.startswith("medcite.tasks")})
    contracts.append(("the pipeline builds stages by name", ["medcite.pipeline", "medcite.tasks"], every))
    for package in sorted(set(package_of.values()) - {"medcite.tasks"}):
        others = sorted({m for stage, mods in backends.items() if package_of[stage] != package for m in mods
                         if not m.startswith("medcite.tasks")})
        contracts.append((f"{package} imports no other stage's backends", [package], others))
    config = tmp_path / "contracts.ini"
    lines = ["[importlinter]", "root_package = medcite", "exclude_type_checking_imports = True", ""]
    for i, (name, sources, forbidden) in enumerate(contracts):
        lines += [f"[importlinter:contract:c{i}]", f"name = {name}", "type = forbidden",
                  "source_modules =", *(f"    {s}" for s in sources),
                  "forbidden_modules =", *(f"    {f}" for f in forbidden), ""]
    config.write_text("\n".join(lines))
    result = _run_linter(config)
    assert result.returncode == 0, result.stdout + result.stderr


def test_backend_modules_import_without_heavy_libraries() -> None:
    modules = sorted({m for mods in _backend_modules().values() for m in mods})
    code = textwrap.dedent(f"""
        import importlib, sys
        from medcite import registry
        for m in {modules!r}:
            importlib.import_module(m)
        for stage in registry.stages():
            if stage.name != "task":
                for name in registry.names(stage.name):
                    registry.config_class(stage.name, name)
        heavy = ("torch", "transformers", "sentence_transformers", "faiss", "onnxruntime", "bm25s", "openai",
                 "llama_cpp", "sklearn", "httpx")
        print(sorted(h for h in heavy if h in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _backend_classes() -> set[str]:
    """The class names of every built-in registered backend (``module:Class`` targets)."""
    return {target.partition(":")[2] for stage in registry.stages() for name in registry.names(stage.name)
            for target, _ in [registry._BACKENDS[stage.name][name]] if target.startswith("medcite.")}


def _constructions(tree: ast.AST, classes: set[str]) -> list[str]:
    """Calls in ``tree`` that build a backend outside the build context: ``X.from_config(...)``,
    ``registry.build(...)``, ``registry.load(...)(...)`` and ``Backend(...)`` of a registered class."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "from_config" or name in classes:
            found.append(f"line {node.lineno}: {name}(...)")
        elif isinstance(func, ast.Attribute) and name == "build" and isinstance(func.value, ast.Name) \
                and func.value.id == "registry":
            found.append(f"line {node.lineno}: registry.build(...)")
        elif isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "load":
            found.append(f"line {node.lineno}: registry.load(...)(...)")
    return found


def test_the_construction_finder_finds_each_form() -> None:
    code = ("OverlapStance()\nx.Config.from_config(c, ctx)\nregistry.build('s', c, ctx)\n"
            "registry.load('task', n)(team_id='t')\nctx.build('task', c)\nprint(TaskA)\n")
    assert _constructions(ast.parse(code), {"OverlapStance", "TaskA"}) == [
        "line 1: OverlapStance(...)", "line 2: from_config(...)", "line 3: registry.build(...)",
        "line 4: registry.load(...)(...)"]


def test_cli_builds_nothing_and_workflows_import_no_cli() -> None:
    classes = _backend_classes()
    assert {"OverlapStance", "TaskA", "PhaseA", "PhaseB", "FaissIndex"} <= classes
    found = {str(p.relative_to(ROOT)): hits for p in sorted((ROOT / "src/medcite/cli").glob("*.py"))
             if (hits := _constructions(ast.parse(p.read_text(encoding="utf-8")), classes))}
    assert found == {}, "cli/ must ask a workflow or the build context: " + repr(found)
    graph = grimp.build_graph("medcite", exclude_type_checking_imports=True)
    backends = {m for mods in _backend_modules().values() for m in mods}
    cli = {m for m in graph.modules if m == "medcite.cli" or m.startswith("medcite.cli.")}
    imported = {(m, b) for m in cli for b in graph.find_modules_directly_imported_by(m) if b in backends}
    assert imported == set(), "cli/ imports backend modules: " + repr(sorted(imported))
    assert not graph.chain_exists(importer="medcite.workflows", imported="medcite.cli", as_packages=True)
