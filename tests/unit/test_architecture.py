"""The structure the code must keep: layers, no import cycles, stages built by name, light backend modules.

- the import-linter contract of pyproject.toml (``[tool.importlinter]``): a package imports only the
  packages below it;
- no two modules import each other, directly or through others (module-level imports);
- no stage imports another stage's backend modules, and the pipeline and tasks import no backend at all:
  they build every stage through the registry (the forbidden lists are computed from the registry, so a
  newly registered backend is covered without editing this test);
- importing any registered backend (to validate its settings) needs none of the heavy optional libraries:
  a missing extra is reported when the backend is built, not when a preset is read.
"""

from __future__ import annotations

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
    package_of = {"index": "medcite.index", "encoder": "medcite.index", "engine": "medcite.index",
                  "querygen": "medcite.retrieve", "retriever": "medcite.retrieve", "rerank": "medcite.rerank",
                  "evidence": "medcite.evidence", "generate": "medcite.generate", "llm": "medcite.llm",
                  "task": "medcite.tasks", "stance": "medcite.attribute", "qa": "medcite.qa"}
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
            if stage.name not in ("task", "engine"):  # no settings model of their own (an engine's: in `index`)
                for name in registry.names(stage.name):
                    registry.config_class(stage.name, name)
        heavy = ("torch", "transformers", "sentence_transformers", "faiss", "onnxruntime", "bm25s", "openai",
                 "llama_cpp", "sklearn", "httpx")
        print(sorted(h for h in heavy if h in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
