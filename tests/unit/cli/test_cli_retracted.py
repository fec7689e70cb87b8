"""Retracted articles: dropped from every preset's rankings unless --allow-retracted, marked wherever shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.pipeline import Pipeline
from medcite.types import Article

QUESTION = "Does vitamin X cure scurvy in children?"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """Two articles on the question: the best lexical match is retracted."""
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([
            Article("111", "Vitamin X cures scurvy in children",
                    "Vitamin X cures scurvy in children. Vitamin X cured scurvy in all children treated.",
                    retracted=True),
            Article("222", "Vitamin X and scurvy",
                    "Vitamin X reduced scurvy symptoms in children in a small trial."),
            Article("333", "Unrelated", "Aspirin lowers fever in adults."),
        ], FileStats("x"))
    return tmp_path / "store"


def test_store_lists_retracted_pmids(store: Path) -> None:
    with DocumentStore.open(store) as s:
        assert s.retracted(["111", "222", "999"]) == {"111"}


def test_presets_never_cite_a_retracted_article(store: Path) -> None:
    with Pipeline(load_settings("offline"), store) as pipe:
        result = pipe.answer(QUESTION)
    ranked = {h.pmid for hits in result.rankings.values() for h in hits}
    assert "111" not in ranked
    assert "111" not in {e.pmid for e in result.evidence}
    assert "111" not in result.answer.pmids
    assert result.answer.pmids  # the other article still answers


def test_allow_retracted_keeps_them(store: Path) -> None:
    with Pipeline(load_settings("offline", ["retrieve.allow_retracted=true"]), store) as pipe:
        result = pipe.answer(QUESTION)
    assert "111" in {h.pmid for h in result.rankings["retrieval"]}


def cites(output: str, pmid: str) -> bool:
    """Whether ``pmid`` is named as a number of its own in the output: a progress bar's "11156.79it/s" and a run
    directory's path (pytest-111/...) are not PMID 111."""
    words = " ".join(w for w in output.split() if "/" not in w)
    return re.search(rf"(?<![\d.]){pmid}(?![\d.])", words) is not None


def test_search_drops_then_marks_retracted(store: Path) -> None:
    runner = CliRunner()
    plain = runner.invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), QUESTION])
    assert plain.exit_code == 0, plain.output
    assert not cites(plain.output, "111") and cites(plain.output, "222")
    kept = runner.invoke(cli, ["search", "--preset", "bm25", "--corpus", str(store), "--allow-retracted", QUESTION])
    assert kept.exit_code == 0, kept.output
    line = next(x for x in kept.output.splitlines() if " 111 " in x)
    assert "[RETRACTED] Vitamin X cures scurvy" in line
    assert "RETRACTED" not in next(x for x in kept.output.splitlines() if " 222 " in x)


def test_ask_marks_retracted_sources(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--out", str(tmp_path / "r1"),
                                 "--allow-retracted"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "r1" / "config.json").read_text())
    assert config["settings"]["retrieve"]["allow_retracted"] is True
    line = next(x for x in result.output.splitlines() if "PMID 111 · " in x)
    assert "year not recorded: [RETRACTED] Vitamin X cures scurvy" in line
    plain = runner.invoke(cli, ["ask", QUESTION, "--corpus", str(store), "--out", str(tmp_path / "r2")])
    assert plain.exit_code == 0, plain.output
    assert not cites(plain.output, "111") and cites(plain.output, "222")
