"""`medcite run` closes the pipeline (indexes, LLMs, models, store) even when a topic fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.pipeline import Pipeline
from medcite.types import Article


def test_run_closes_the_pipeline_when_a_topic_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding: cli/run.py closed the pipeline outside `finally`, so a failure left it open."""
    with DocumentStore.create(tmp_path / "store") as store, store.transaction() as tx:
        tx.upsert([Article("1", "Statins", "Statins lower LDL cholesterol.")], FileStats("x"))
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps([{"id": "1", "question": "Do statins lower LDL?", "narrative": "", "topic": "x"}]))
    closed: list[bool] = []
    real_close = Pipeline.close

    def close(self: Pipeline) -> None:
        closed.append(True)
        real_close(self)

    def fail(self: Pipeline, *args: object, **kwargs: object) -> None:
        raise RuntimeError("a topic failed")

    monkeypatch.setattr(Pipeline, "close", close)
    monkeypatch.setattr(Pipeline, "run", fail)
    result = CliRunner().invoke(cli, ["run", "--topics", str(topics), "--corpus", str(tmp_path / "store"),
                                      "--out", str(tmp_path / "run")])
    assert isinstance(result.exception, RuntimeError)
    assert closed == [True]
