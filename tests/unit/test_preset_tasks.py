"""Issue 45: each preset file declares the task it answers (its ``task`` key), and what lists presets by task (the
docs tables, docs/PRESETS.md, ``medcite config presets``, scripts/output_snapshot.py) reads that declaration: no hand
list maps presets to tasks, so a new preset of a new task is listed by the generated docs without another file."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite import config, registry
from medcite.cli.main import cli
from medcite.config import PRESET_TASKS, is_alias, load_settings, preset_json, preset_names, preset_task
from medcite.errors import ConfigError
from medcite.presets import coverage
from medcite.presets import tables as preset_tables

REPO = Path(__file__).resolve().parents[2]

#: the ARCHITECTURE.md recipe "Add a task", step 1: one file tasks/NAME.py
TASK_MODULE = '''
from typing import Any, ClassVar, Literal

from medcite.tasks.base import TaskConfig


class ToyTaskConfig(TaskConfig):
    backend: Literal["toy-task"] = "toy-task"


class ToyTask:
    """Answers each question with its own text (a task of no shared track)."""

    Config = ToyTaskConfig
    name: ClassVar[str] = "toy-task"
    family: ClassVar[str] = "toy"
    corpus: ClassVar[bool] = False
    grounding: ClassVar[bool] = False

    @classmethod
    def from_config(cls, cfg: ToyTaskConfig, ctx: Any) -> "ToyTask":
        return cls()

    @classmethod
    def read(cls, path: Any) -> list[str]:
        return path.read_text().splitlines()

    def run(self, inputs: list[str], ctx: Any) -> Any:
        return inputs
'''


def test_every_shipped_preset_file_declares_a_known_task_itself() -> None:
    for name in preset_names():
        declared = preset_json(name).get("task")
        assert declared in PRESET_TASKS, f"{name}.json declares task {declared!r}"
        assert preset_task(name) == declared
    assert {preset_task(n) for n in preset_names()} == set(PRESET_TASKS)


def test_the_declared_tasks_are_the_ones_the_hand_lists_used_to_keep() -> None:
    assert [n for n in preset_names() if preset_task(n) == "biogen-a"] == [
        "clac24-llm", "clac24-llm-nli", "dal25-emotional", "dal25-expert", "offline-grounding"]
    assert [n for n in preset_names() if preset_task(n) == "medhopqa"] == ["clac24-medhopqa-bm25",
                                                                          "clac24-medhopqa-hybrid"]
    bioasq = [n for n in preset_names() if preset_task(n) == "bioasq"]
    assert "pjs-qwen-lora" in bioasq and all(n.startswith(("pjs-", "dsgt-")) for n in bioasq)
    assert [n for n in preset_names() if is_alias(n)] == ["dsgt-ensemble", "pjs-ensemble"]


def test_the_snapshot_runs_each_preset_through_the_command_of_its_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import output_snapshot

    assert output_snapshot.task_of("pjs-qwen-lora") == "bioasq"  # its hand list ran it as Task B
    assert output_snapshot.task_of("clac24-medhopqa-bm25") == "b"
    assert output_snapshot.task_of("offline-grounding") == "a"
    assert output_snapshot.task_of("trained-ce") == "phase-a"
    assert "pjs-ensemble" not in output_snapshot.presets() and "offline" in output_snapshot.presets()


@pytest.mark.parametrize("task", ["task-c", 3])
def test_the_loader_refuses_an_unknown_task(tmp_path: Path, task: object) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"description": "A preset of no task.", "task": task, "extends": "offline"}))
    with pytest.raises(ConfigError, match="unknown task") as err:
        load_settings(str(path))
    assert "biogen-b" in (err.value.hint or "")


def test_a_preset_of_no_task_loads_but_has_no_task_to_list(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"description": "My own settings.", "retrieve": {"k": 7}}))
    assert load_settings(str(path)).retrieve.k == 7
    with pytest.raises(ConfigError, match="declares no task"):
        preset_task(str(path))
    child = tmp_path / "child.json"
    child.write_text(json.dumps({"description": "Inherits its task.", "extends": "dsgt-b1"}))
    assert preset_task(str(child)) == "bioasq"


@pytest.fixture
def toy_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A new task (one module, one registry line) and the presets folder with a new preset of it."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "toy_task.py").write_text(textwrap.dedent(TASK_MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.delitem(sys.modules, "toy_task", raising=False)
    registry.register("task", "toy-task", "toy_task:ToyTask")  # "Add a task", step 2: the one line
    folder = tmp_path / "presets"
    folder.mkdir()
    shutil.copy(REPO / "src" / "medcite" / "presets" / "offline.json", folder)
    # "Add a preset", step 1: one file declaring its task
    (folder / "toy.json").write_text(json.dumps({"description": "Answers a toy question.", "task": "toy-task",
                                                 "extends": "offline", "retrieve": {"k": 3}}), encoding="utf-8")
    monkeypatch.setattr(config, "presets_dir", lambda: folder)
    try:
        yield folder
    finally:
        registry._BACKENDS["task"].pop("toy-task", None)


def test_a_new_preset_of_a_new_task_is_listed_by_the_generated_docs(toy_task: Path) -> None:
    assert preset_names() == ["offline", "toy"]
    assert registry.load("task", "toy-task").name == "toy-task"
    assert preset_task("toy") == "toy-task" and load_settings("toy").retrieve.k == 3
    doc = coverage.markdown(preset_names())
    section = doc[doc.index("### `toy-task`"):]
    assert section.splitlines()[2] == "- `toy` (medcite's own)"
    assert "### `biogen-b`" in doc and "- `offline` (medcite's own)" in doc
    # the per-paper tables of the track docs list the presets of their own tasks only
    assert all("toy" not in preset_tables.presets_of(kind) for kind in preset_tables.TABLE_TASKS)
    out = CliRunner().invoke(cli, ["config", "presets", "--task", "toy-task"])
    assert out.exit_code == 0, out.output
    assert [line.split()[:2] for line in out.output.splitlines()] == [["toy", "toy-task"]]
