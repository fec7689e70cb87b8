"""Load a script of benchmarks/ as a module (tests of the benchmark helpers and benchmark-backed tests)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load_bench(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``medcite_bench_<name>`` (loaded once per session).

    benchmarks/ is not a package (pysbd installs a top-level "benchmarks"), so it is loaded by path; the
    scripts import each other by bare name, hence the sys.path entry.
    """
    key = f"medcite_bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
