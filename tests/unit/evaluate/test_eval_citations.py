"""Citation coverage, support and contradiction rates by hand, and `medcite eval biogen-b` on a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.evaluate.citations import citation_metrics
from medcite.types import Answer, AnswerSentence, Article, Stance, Topic

S, C, N = Stance.SUPPORTS, Stance.CONTRADICTS, Stance.NEUTRAL


def test_rates_by_hand() -> None:
    a = Answer("1", [AnswerSentence("x", ("11", "12")), AnswerSentence("y", ()), AnswerSentence("z", ("13",))])
    b = Answer("2", [AnswerSentence("w", ("21",))])
    judged = {("1", 0, "11"): S, ("1", 0, "12"): C, ("1", 2, "13"): N, ("2", 0, "21"): S}
    r = citation_metrics([a, b], judged)
    # micro: 3 of 4 sentences cited; 2 of 4 citations support, 1 contradicts
    assert r.micro == pytest.approx({"coverage": 0.75, "support_rate": 0.5, "contradiction_rate": 0.25,
                                     "neutral_rate": 0.25, "not_relevant_rate": 0.0})
    # macro: topic 1 (2/3, 1/3, 1/3), topic 2 (1, 1, 0)
    assert r.macro == pytest.approx({"coverage": (2 / 3 + 1) / 2, "support_rate": (1 / 3 + 1) / 2,
                                     "contradiction_rate": (1 / 3 + 0) / 2, "neutral_rate": (1 / 3 + 0) / 2,
                                     "not_relevant_rate": 0.0})
    unjudged = citation_metrics([b], {})
    assert unjudged.counts.citations == 1 and unjudged.counts.judged == 0 and unjudged.micro["support_rate"] == 0.0
    assert citation_metrics([], {}).micro["coverage"] == 0.0


def test_eval_biogen_b_judges_a_real_run(tmp_path: Path) -> None:
    from medcite.config import load_settings
    from medcite.pipeline import Pipeline

    with DocumentStore.create(tmp_path / "store") as store, store.transaction() as tx:
        tx.upsert([Article("1", "Statins", "Statins lowered LDL cholesterol in adults."),
                   Article("2", "Exercise", "Aerobic exercise lowered blood pressure.")], FileStats("x"))
    with Pipeline(load_settings("offline"), tmp_path / "store") as pipe:
        pipe.run([Topic("t1", "What is the effect of statins on LDL cholesterol?")], tmp_path / "run")
    result = CliRunner().invoke(cli, ["eval", "biogen-b", "--run", str(tmp_path / "run"), "--stance", "words"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "run" / "metrics_task_b.json").read_text())
    counts = report["citations"]["counts"]
    assert counts["citations"] >= 1 and counts["judged"] == counts["citations"]
    assert report["citations"]["micro"]["coverage"] == 1.0  # every sentence of an extractive answer cites
    assert "support_rate" in result.output
