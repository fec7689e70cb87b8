"""A tiny document store and one answered BioGen Task B run over it, shared by the workflow tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.types import Article
from medcite.workflows.tasks import read_inputs, run_task
from stores import store_of

DOCS = [Article("11", "Statins and LDL", "Statins lowered LDL cholesterol in adults."),
        Article("12", "Statin myopathy", "Statin myopathy presents as muscle pain."),
        Article("13", "Vitamin D", "Vitamin D supplementation did not prevent fractures in older adults."),
        *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(5)]]
TOPICS = [{"id": "1", "question": "Do statins lower LDL cholesterol?", "narrative": "", "topic": "statins"},
          {"id": "2", "question": "Does vitamin D prevent fractures?", "narrative": "", "topic": "vitamin d"}]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("workflows") / "store", DOCS)


@pytest.fixture(scope="module")
def biogen_run(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of biogen25 over ``store`` with the bm25 preset."""
    root = tmp_path_factory.mktemp("biogen-run")
    topics = root / "topics.json"
    topics.write_text(json.dumps(TOPICS))
    out = root / "run"
    run_task("biogen25", load_settings("bm25"), read_inputs("biogen25", topics), corpus=store, out=out,
             command="test", options={"team_id": "wf"})
    return out
