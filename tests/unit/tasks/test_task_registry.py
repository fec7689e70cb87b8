"""Every task is a registered backend of stage ``task``: a Config, ``from_config`` through the build context, and
one ``run(inputs, ctx)`` shape; Task A grounds with the pipeline's own Grounder."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from medcite import registry
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError
from medcite.pipeline import Context, Pipeline
from medcite.tasks.base import RunContext, Task, TaskConfig, Validating
from medcite.tasks.bioasq_task import PhaseA, PhaseAPlus, PhaseB
from medcite.tasks.biogen_a_task import TaskA
from medcite.tasks.biogen_b_task import TaskB2024, TaskB2025
from medcite.types import Article
from medcite.workflows.tasks import build_task, task_names

TASKS = {"biogen25": TaskB2025, "biogen24": TaskB2024, "biogen-a": TaskA, "bioasq-a": PhaseA,
         "bioasq-aplus": PhaseAPlus, "bioasq-b": PhaseB}


def test_every_task_is_registered_under_its_name() -> None:
    assert set(registry.names("task")) == set(TASKS)
    for name, cls in TASKS.items():
        assert registry.load("task", name) is cls and cls.name == name
        assert issubclass(registry.config_class("task", name), TaskConfig)
    assert task_names("biogen") == ["biogen-a", "biogen24", "biogen25"]
    assert task_names("bioasq") == ["bioasq-a", "bioasq-aplus", "bioasq-b"]


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_task_is_built_through_the_context_by_name(name: str) -> None:
    with Context(load_settings("offline")) as ctx:
        task = ctx.build("task", registry.validate_config("task", {"backend": name}))
    assert type(task) is TASKS[name] and isinstance(task, Task)
    assert list(inspect.signature(type(task).run).parameters) == ["self", "inputs", "ctx"]


def test_a_tasks_settings_reach_the_task_and_bad_ones_are_refused() -> None:
    with Context(load_settings("offline")) as ctx:
        a = build_task("biogen-a", ctx, {"team_id": "t1", "run_id": "r1", "pmid_type": "int",
                                         "contact_email": "ignored: Task A has no such setting"})
        b = build_task("biogen24", ctx, {"team_id": "t2", "contact_email": "x@y.org"})
        with pytest.raises(ConfigError, match="pmid_type"):
            build_task("biogen-a", ctx, {"pmid_type": "float"})
    assert isinstance(a, TaskA) and isinstance(b, TaskB2024)
    assert (a.team_id, a.run_id, a.pmid_type) == ("t1", "r1", "int")
    assert (b.team_id, b.run_id, b.contact_email) == ("t2", None, "x@y.org")
    with pytest.raises(ConfigError, match="unknown task backend 'biogen23'"):
        registry.validate_config("task", {"backend": "biogen23"})


def test_the_biogen_tasks_validate_and_the_bioasq_phases_do_not_claim_a_kind() -> None:
    kinds = {name: cls.validate_kind for name, cls in TASKS.items() if isinstance(cls, Validating)}
    assert kinds == {"biogen25": "biogen-b", "biogen24": "biogen24", "biogen-a": "biogen-a"}


def test_a_task_that_retrieves_refuses_a_run_without_a_corpus(tmp_path: Path) -> None:
    with Context(load_settings("offline")) as ctx, pytest.raises(ConfigError, match="'bioasq-a' retrieves"):
        PhaseA().run([], RunContext(ctx, tmp_path / "run"))
    assert not (tmp_path / "run").exists()


DOCS = [Article("11", "Statins and LDL", "Statins lowered LDL cholesterol in adults."),
        Article("13", "No effect of statins", "Statins never lowered LDL cholesterol in this trial."),
        *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(8)]]
SETS = ["stance.backend=words", "indexes.dense.encoder.backend=hash-bow", "ground.anchor=0", "ground.candidates=5"]


def test_task_a_grounds_with_the_pipelines_grounder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("faiss")
    from medcite.pipeline import grounding

    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert(DOCS, FileStats("fixture"))
    src = tmp_path / "input.json"
    src.write_text(json.dumps([{"meta_data": {"qa_id": "7", "question": "Do statins lower LDL?"},
                                "answer": [{"text": "Statins lowered LDL cholesterol.",
                                            "existing_supported_citations": []}]}]))
    items = TaskA.read(src)
    with Pipeline(load_settings("offline-grounding", SETS), tmp_path / "store", grounding=True) as pipe:
        assert pipe.grounder is not None
        made: list[object] = []
        monkeypatch.setattr(grounding.Grounder, "__init__",
                            lambda self, *a, **k: made.append(self))  # a second Grounder would be recorded
        seen: list[str] = []
        real = pipe.grounder.ground

        def ground(sentences: list[str], **kw: object) -> object:
            seen.extend(sentences)
            return real(sentences, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(pipe.grounder, "ground", ground)
        task = build_task("biogen-a", pipe.context, {"run_id": "r"})
        result = task.run(items, RunContext(pipe.context, tmp_path / "run", pipe))
    assert made == [] and seen == ["Statins lowered LDL cholesterol."]
    assert result.ok and result.topics == 1 and result.run_dir == tmp_path / "run"
    row = json.loads((tmp_path / "run" / "submission.jsonl").read_text())
    assert row["metadata"]["run_id"] == "r" and row["answer"][0]["supported_citations"] == ["11"]


def test_task_a_refuses_a_pipeline_without_a_grounder(tmp_path: Path) -> None:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert(DOCS, FileStats("fixture"))
    with Pipeline(load_settings("bm25"), tmp_path / "store") as pipe:
        assert pipe.grounder is None
        with pytest.raises(ConfigError, match="no grounder"):
            TaskA().run([], RunContext(pipe.context, tmp_path / "run", pipe))
