from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import medcite_fakes
from medcite.paths import shared_data_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the suite never reads or writes the user's models folder, LLM cache or runs folder: its own, empty at the start
# (the models medcite ships are found inside the package; a test that builds one builds it here)
_OWN = Path(tempfile.mkdtemp(prefix="medcite-tests-"))
os.environ["MEDCITE_CACHE_DIR"] = str(_OWN / "cache")
os.environ["MEDCITE_MODELS_DIR"] = str(_OWN / "models")
os.environ["MEDCITE_RUNS_DIR"] = str(_OWN / "runs")
atexit.register(shutil.rmtree, _OWN, ignore_errors=True)
medcite_fakes.register()  # fake backends (hash-bow encoder, rules/replies LLMs), reachable through --set


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (or $MEDCITE_DATA_DIR). Required in CI; skipped elsewhere when absent."""
    path = shared_data_dir()
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data not found at {path}; set MEDCITE_DATA_DIR")
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture(autouse=True)
def _reset_medcite_logging() -> Iterator[None]:
    """In-process CLI tests configure the 'medcite' logger (level, handler); undo that after each test
    so later tests' caplog sees every record regardless of test order."""
    yield
    import logging

    logger = logging.getLogger("medcite")
    logger.setLevel(logging.NOTSET)
    logging.getLogger("medcite.progress").setLevel(logging.NOTSET)
    for handler in [h for h in logger.handlers if getattr(h, "_medcite", False)]:
        logger.removeHandler(handler)
    from medcite.progress import set_quiet

    set_quiet(False)


@pytest.fixture(autouse=True)
def _forget_device_placements() -> Iterator[None]:
    """Where stages ran is recorded per process (medcite.devices, written to a run's devices.json): start each
    test with an empty record, so a run directory holds only the stages its own test built."""
    import sys

    if "medcite.devices" in sys.modules:
        sys.modules["medcite.devices"].forget_placements()
    yield


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URI of a loopback Milvus Lite server (``milvus-lite server`` on 127.0.0.1, a free port, a temporary
    folder), started once per session and stopped at its end. Skipped only when the [milvus] extra is missing."""
    for module in ("pymilvus", "milvus_lite"):
        pytest.importorskip(module, reason=f"{module} is not installed: pip install 'medcite[milvus]'")
    from milvus_server import running

    with running(tmp_path_factory.mktemp("milvus") / "data") as uri:
        yield uri


@pytest.fixture
def hub_only() -> Iterator[None]:
    """The rerank backend ``hub-only`` registered for one test (``medcite_fakes.HubOnly``: a model this machine
    lacks, no offline stand-in), removed after it."""
    from medcite import registry

    registry.register("rerank", "hub-only", "medcite_fakes:HubOnly")
    try:
        yield
    finally:
        registry._BACKENDS["rerank"].pop("hub-only", None)
