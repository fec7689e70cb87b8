"""The structure the code must keep: layers, no import cycles, stages built by name, light backend modules.

- the import-linter contract of pyproject.toml (``[tool.importlinter]``): a package imports only the
  packages below it;
- no two modules import each other, directly or through others, counting the imports made for type checking
  only (``if TYPE_CHECKING:``): a circle hidden there is still a circle of the design;
- no stage imports another stage's backend modules, and the pipeline and tasks import no backend at all:
  they build every stage through the registry (the forbidden lists are computed from the registry, so a
  newly registered backend is covered without editing this test);
- importing any registered backend (to validate its settings) needs none of the heavy optional libraries:
  a missing extra is reported when the backend is built, not when a preset is read;
- docs/ARCHITECTURE.md is drawn from the code: its package tree names every subpackage, and every module in its
  folder's entry (``cli/`` is named by its rule, one module per command), and its layer line every layer of the
  contract.
- only the build context (``medcite.pipeline.context``) builds backends: no other module calls
  ``from_config``, calls a class ``registry.load`` returned, or constructs a registered backend class (the
  class names come from the registry), except the few listed with their reason.
- ``cli/`` only parses options and prints: it constructs no registered backend (task, stance, index, ...), calls
  no ``from_config`` or ``registry.build`` and imports no backend module; ``medcite.workflows`` imports nothing
  from ``medcite.cli``.
- no function of src/medcite is longer than 80 lines and no module longer than 600 (issue 45): a longer one is
  split into its real sub-steps.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

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


def _cycles(*, exclude_type_checking_imports: bool) -> list[tuple[str, ...]]:
    """Every direct import a -> b that lies on a circle (b reaches a again), as sorted pairs."""
    graph = grimp.build_graph("medcite", exclude_type_checking_imports=exclude_type_checking_imports, cache_dir=None)
    return sorted({tuple(sorted((a, b))) for a in graph.modules for b in graph.find_modules_directly_imported_by(a)
                   if a != b and graph.chain_exists(importer=b, imported=a)})


def test_no_import_cycles() -> None:
    assert _cycles(exclude_type_checking_imports=True) == []


def test_no_import_cycles_counting_type_checking_imports() -> None:
    assert _cycles(exclude_type_checking_imports=False) == []


def _tree_sections(text: str) -> dict[str, str]:
    """The package tree of docs/ARCHITECTURE.md: each folder it names, as a path under src/medcite ("index/sparse";
    "" for src/medcite itself), with its own text (its line and the lines up to the next folder's)."""
    block = text.split("```\nsrc/medcite/\n", 1)[1].split("```", 1)[0]
    sections: dict[str, list[str]] = {"": []}
    stack: list[tuple[int, str]] = []
    current = ""
    for line in block.splitlines():
        m = re.match(r"^( *)([a-z_]+)/(?:\s|$)", line)
        if m:
            indent, name = len(m.group(1)), m.group(2)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, name))
            current = "/".join(n for _, n in stack)
            sections.setdefault(current, [])
        sections[current].append(line)
    return {path: "\n".join(lines) for path, lines in sections.items()}


def _tree_paths(text: str) -> set[str]:
    """The folders the package tree of docs/ARCHITECTURE.md names, as paths under src/medcite ("index/sparse")."""
    return {path for path in _tree_sections(text) if path}


#: packages the tree describes by a rule instead of by name: cli/ is "one module per command"
_MODULES_BY_RULE = ("cli",)


def _unnamed_modules(text: str, src: Path) -> list[str]:
    """The modules under ``src`` whose file name the text of their own folder in the tree does not hold."""
    sections = _tree_sections(text)
    missing = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        folder = rel.parent.as_posix() if rel.parent != Path(".") else ""
        if path.name == "__init__.py" or folder.split("/")[0] in _MODULES_BY_RULE:
            continue
        if path.name not in re.findall(r"[\w.]+\.py\b", sections.get(folder, "")):
            missing.append(rel.as_posix())
    return missing


def test_architecture_doc_names_every_subpackage() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "medcite"
    packages = {p.parent.relative_to(src).as_posix() for p in src.rglob("__init__.py") if p.parent != src}
    assert packages, "no subpackage found under src/medcite"
    assert sorted(packages - _tree_paths(text)) == [], "name these subpackages in the tree of docs/ARCHITECTURE.md"
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in contract["contracts"] if c["type"] == "layers"]
    line = next(ln for ln in text.split("## Layers", 1)[1].splitlines() if " > " in ln)
    named = [n.strip() for n in line.split(" > ")]
    wanted = [layer.removeprefix("medcite.") for layer in layers]
    # in the contract's order; the doc may name a layer the contract has yet to hold (none once merged)
    assert [n for n in named if n in wanted] == wanted, f"the layer line of docs/ARCHITECTURE.md: {' > '.join(wanted)}"


def test_architecture_doc_names_every_module_in_its_folder() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = _unnamed_modules(text, ROOT / "src" / "medcite")
    assert missing == [], "name these modules in their folder's entry of the tree of docs/ARCHITECTURE.md"


def test_a_module_missing_from_the_tree_or_named_in_another_folder_is_caught(tmp_path: Path) -> None:
    for module in ("types.py", "rerank/base.py", "rerank/none.py", "rerank/colbert.py", "cli/run.py"):
        (tmp_path / module).parent.mkdir(exist_ok=True)
        (tmp_path / module).write_text("")
    doc = "```\nsrc/medcite/\n  types.py   the types\n  rerank/   base.py, none.py\n  retrieve/ colbert.py\n```\n"
    assert _unnamed_modules(doc, tmp_path) == ["rerank/colbert.py"]


#: the settings, the registry, the build context and the LLM base: below every stage, so on no import cycle
#: even counting the imports made for type checking only
_FACTORY_MODULES = ("medcite.config", "medcite.settings_base", "medcite.registry", "medcite.context",
                    "medcite.llm.base", "medcite.llm.cache", "medcite.pipeline.context")


def test_the_factory_is_on_no_import_cycle_counting_type_checking_imports() -> None:
    graph = grimp.build_graph("medcite", exclude_type_checking_imports=False, cache_dir=None)  # a fresh look
    cycles = [(m, graph.find_shortest_chain(importer=b, imported=m)) for m in _FACTORY_MODULES
              for b in graph.find_modules_directly_imported_by(m) if graph.chain_exists(importer=b, imported=m)]
    assert not cycles, "\n".join(f"{m} imports back through: {' > '.join(chain or ())}" for m, chain in cycles)


def test_stages_import_no_other_stages_backends(tmp_path: Path) -> None:
    backends = _backend_modules()
    package_of = {"index": "medcite.index", "encoder": "medcite.index", "engine": "medcite.index",
                  "querygen": "medcite.retrieve", "retriever": "medcite.retrieve", "rerank": "medcite.rerank",
                  "evidence": "medcite.evidence", "generate": "medcite.generate", "llm": "medcite.llm",
                  "task": "medcite.tasks", "stance": "medcite.attribute", "qa": "medcite.qa",
                  "design": "medcite.design"}
    assert set(backends) <= set(package_of), "a new stage: say which package holds its backends"
    contracts = []
    every = sorted({m for mods in backends.values() for m in mods if not m.startswith("medcite.tasks")})
    contracts.append(("the pipeline builds stages by name", ["medcite.pipeline", "medcite.tasks", "medcite.presets"],
                      every))
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


#: construction outside the context for a stated reason, one line each
_OUTSIDE_THE_CONTEXT = {
    # an index folder opened or built on its own (FaissIndex(folder), `medcite index dense`): no context there
    ("medcite.index.dense.encoders", "registry.load('encoder', cfg.backend)"),
    # the default extractive fallback of an LLMGenerator made by hand; from_config builds it with ctx.build
    ("medcite.generate.llm_generator", "ExtractiveGenerator"),
    # training wraps the model it is training (or has just saved) to measure it; train/ sits below pipeline/,
    # so it cannot make a Context itself (its callers in cli/model_builds.py would have to pass one)
    ("medcite.train.encoder", "EmbeddingReranker"),
    ("medcite.train.ltr", "LTRReranker"),
    ("medcite.train.reranker", "CrossEncoderReranker"),
}
_THE_CONTEXT = "medcite.pipeline.context"


def _backend_classes() -> dict[str, str]:
    """Class name -> module of every registered built-in backend class."""
    out: dict[str, str] = {}
    for stage in registry.stages():
        for name in registry.names(stage.name):
            target, _ = registry._BACKENDS[stage.name][name]
            if target.startswith("medcite."):
                module, _, cls = target.partition(":")
                out[cls] = module
    return out


def constructions(source: str, module: str, classes: dict[str, str]) -> set[tuple[str, str]]:
    """(module, what) for each backend built in ``source`` by hand: a ``.from_config(`` call, a call of a
    registered class outside its own module, or a call of what ``registry.load(...)`` returned."""
    import ast

    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "from_config":
            found.add((module, ast.unparse(func.value)))
        elif isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute | ast.Name) \
                and (func.func.attr if isinstance(func.func, ast.Attribute) else func.func.id) == "load":
            found.add((module, ast.unparse(func)))
        else:
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in classes and classes[name] != module:
                found.add((module, name))
    return found


def test_the_construction_scan_finds_each_way_of_building_by_hand() -> None:
    classes = {"CrossEncoderReranker": "medcite.rerank.cross_encoder"}
    source = textwrap.dedent("""
        a = registry.load("rerank", name).from_config(cfg, ctx)
        b = CrossEncoderReranker("m")
        c = cross_encoder.CrossEncoderReranker("m")
        d = registry.load("task", fmt)(team_id="t")
        e = ctx.build("rerank", cfg)
    """)
    assert constructions(source, "m", classes) == {
        ("m", "registry.load('rerank', name)"), ("m", "CrossEncoderReranker"),
        ("m", "registry.load('task', fmt)"),
    }
    assert constructions("x = CrossEncoderReranker('m')", "medcite.rerank.cross_encoder", classes) == set()


def test_only_the_context_builds_backends() -> None:
    """Every backend is built by the build context (``ctx.build``, ``ctx.llm``, ``ctx.encoder``,
    ``ctx.index``); nothing else calls ``from_config`` or constructs a registered backend class."""
    classes = _backend_classes()
    src = ROOT / "src"
    found: set[tuple[str, str]] = set()
    for path in sorted((src / "medcite").rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        if module != _THE_CONTEXT:
            found |= constructions(path.read_text(encoding="utf-8"), module, classes)
    allowed = _OUTSIDE_THE_CONTEXT
    assert not found - allowed, f"built outside the context (ask ctx.build/llm/encoder/index): {found - allowed}"
    assert not allowed - found, f"no longer built by hand; remove from the lists: {allowed - found}"
def _backend_class_names() -> set[str]:
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


#: what the presets room may import beyond itself: the settings, the registry, the small shared modules, and of the
#: stage packages only a reranker's settings base (its offline stand-in) and the prompts (which placeholders a
#: prompt reads)
_PRESETS_MAY_IMPORT = {"medcite.config", "medcite.registry", "medcite.settings_base", "medcite.errors", "medcite.io",
                       "medcite.set_option", "medcite.paths", "medcite.trained_models", "medcite.bases",
                       "medcite.announce", "medcite.rerank.base", "medcite.llm.prompts"}


def test_the_presets_room_imports_only_settings_the_registry_and_stage_settings() -> None:
    graph = grimp.build_graph("medcite", exclude_type_checking_imports=False, cache_dir=None)
    room = {m for m in graph.modules if m == "medcite.presets" or m.startswith("medcite.presets.")}
    assert {"medcite.presets.offline", "medcite.presets.provenance", "medcite.presets.gates"} <= room
    imported = {b for m in room for b in graph.find_modules_directly_imported_by(m)
                if b.startswith("medcite") and b not in room}
    assert imported <= _PRESETS_MAY_IMPORT, sorted(imported - _PRESETS_MAY_IMPORT)


def test_cli_builds_nothing_and_workflows_import_no_cli() -> None:
    classes = _backend_class_names()
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


def test_the_contracts_ignored_imports_are_for_type_checking_only() -> None:
    """The layer contract lets the build context name the stage protocols (its typed accessors); each such
    import must be inside ``if TYPE_CHECKING:``, so at run time the context still sits below every stage."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    ignored = [tuple(x.strip() for x in line.split("->")) for c in contracts for line in c.get("ignore_imports", [])]
    assert ignored and all(a == "medcite.context" for a, _ in ignored)
    runtime = grimp.build_graph("medcite", exclude_type_checking_imports=True, cache_dir=None)
    imported = runtime.find_modules_directly_imported_by("medcite.context")
    assert {b for _, b in ignored} & imported == set()


def test_any_is_rare_and_types_hold_across_the_seams() -> None:
    """``Any`` only where a value is truly untyped (JSON from outside, objects of libraries without hints):
    at most 284 lines of src/medcite name it (issue 45; 300 in issue 26, 746 before), and mypy finds no error in the
    package."""
    lines = [line for path in sorted((ROOT / "src" / "medcite").rglob("*.py"))
             for line in path.read_text(encoding="utf-8").splitlines() if re.search(r"\bAny\b", line)]
    assert len(lines) <= 284, f"{len(lines)} lines name Any"
    mypy = pytest.importorskip("mypy.api")
    out, err, status = mypy.run([str(ROOT / "src" / "medcite"), "--no-incremental"])
    assert status == 0, out + err


MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def too_long(path: Path) -> list[str]:
    """The functions of the module at ``path`` longer than :data:`MAX_FUNCTION_LINES` (from ``def`` to their
    last line) and the module itself when it is longer than :data:`MAX_MODULE_LINES`."""
    text = path.read_text(encoding="utf-8")
    out = [f"{path.name}: {len(text.splitlines())} lines"] if len(text.splitlines()) > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{path.name}:{node.lineno} {node.name}: {length} lines")
    return out


def test_no_function_over_80_lines_and_no_module_over_600() -> None:
    found = [f"{p.relative_to(ROOT)}: {x}" for p in sorted((ROOT / "src" / "medcite").rglob("*.py"))
             for x in too_long(p)]
    assert not found, "split into real sub-steps: " + "; ".join(found)


def test_the_length_scan_finds_a_long_function_and_a_long_module(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    long_function = tmp_path / "long_function.py"
    long_function.write_text(f"def f() -> None:\n{body}\n\n\ndef g() -> None:\n    pass\n")
    assert too_long(long_function) == ["long_function.py:1 f: 81 lines"]
    long_module = tmp_path / "long_module.py"
    long_module.write_text("x = 1\n" * 601)
    assert too_long(long_module) == ["long_module.py: 601 lines"]
