"""Issue 16 item 9: `config presets` describes each preset in one line; the empty-question hint is a real command."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.config import first_sentence
from medcite.cli.main import cli
from medcite.config import load_settings, preset_names, preset_task
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import InputError
from medcite.pipeline import Pipeline
from medcite.types import Article, Topic


def test_config_presets_prints_one_described_line_per_preset() -> None:
    result = CliRunner().invoke(cli, ["config", "presets"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(preset_names())
    for name, line in zip(preset_names(), lines, strict=True):
        assert line.split()[:2] == [name, preset_task(name)]
        assert len(line.split(maxsplit=2)) == 3, f"preset {name} has no description"
        assert len(line) <= 120
    assert any(line.startswith("bm25") and "BM25 (tantivy, Lucene scoring) on the question" in line for line in lines)


def test_config_presets_lists_the_presets_of_one_task() -> None:
    result = CliRunner().invoke(cli, ["config", "presets", "--task", "bioasq"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()]
    assert "pjs-qwen-lora" in names and "dsgt-b1" in names and "offline" not in names
    assert all(preset_task(n) == "bioasq" for n in names)
    refused = CliRunner().invoke(cli, ["config", "presets", "--task", "task-c"])
    assert refused.exit_code == 2 and "unknown task 'task-c'" in refused.output


def test_first_sentence_skips_abbreviations() -> None:
    text = "Verma et al. 2025 rerank (e.g. MedCPT). The rest."
    assert first_sentence(text) == "Verma et al. 2025 rerank (e.g. MedCPT)."


def _hint_command(hint: str) -> list[str]:
    return shlex.split(hint[hint.index("medcite ") :].split(";")[0])[1:]


def test_empty_question_is_refused_with_a_hint_that_runs(tmp_path: Path) -> None:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([Article("1", "Statins", "Statins lowered LDL cholesterol in adults.")], FileStats("x"))
    runner = CliRunner()
    result = runner.invoke(cli, ["ask", "  ", "--corpus", str(tmp_path / "store")])
    assert result.exit_code != 0
    assert "the question is empty" in result.output
    hint = next(line for line in result.output.splitlines() if "hint:" in line)
    args = _hint_command(hint)
    ran = runner.invoke(cli, [*args, "--out", str(tmp_path / "r")])
    assert ran.exit_code == 0, ran.output


def test_an_empty_topic_question_names_the_topic(tmp_path: Path) -> None:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([Article("1", "Statins", "Statins lowered LDL cholesterol in adults.")], FileStats("x"))
    with Pipeline(load_settings("offline"), tmp_path / "store") as pipe, \
            pytest.raises(InputError, match="topic t7 has an empty question") as err:
        pipe.answer(Topic("t7", "  "))
    assert "retrieve.queries" not in (err.value.hint or "")
