"""``--offline`` on every command that takes a preset (issue 34): each paper preset runs through its own command
on a tiny store, with the models this machine lacks swapped for their stand-ins (``offline_settings``) while its
LLMs stay the preset's, served by the oracle server (``llm_overrides``: the default LLM and each named one).

Task B presets run through ``medcite run``, Task A presets through ``medcite ground``, BioASQ presets through
``medcite bioasq phase-aplus``; one held-back question each, one store and one server for the module.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import Settings, load_settings, preset_json, preset_names, preset_task
from medcite.presets.offline import is_local_model, stage_configs
from oracle.answers import sentences
from oracle.gold import BIOASQ as BIOASQ_FILE
from oracle.gold import load
from oracle.harness import questions, snippet_store
from oracle.server import OracleServer, llm_overrides
from oracle.styles import STYLES

pytestmark = pytest.mark.slow

PAPER = [n for n in preset_names() if "paper" in preset_json(n)]


@pytest.fixture(scope="module")
def qs() -> list:
    return questions(1)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, qs: list) -> Path:
    return snippet_store(tmp_path_factory.mktemp("offline") / "store", qs)


@pytest.fixture(scope="module")
def url(qs: list) -> Iterator[str]:
    with OracleServer(load(qs), styles=STYLES).running() as address:
        yield address


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, qs: list) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    topics = folder / "topics.json"
    topics.write_text(json.dumps([{"id": q.id, "question": q.body, "narrative": "", "topic": "x"} for q in qs]))
    items = folder / "items.jsonl"
    items.write_text("".join(json.dumps({"metadata": {"qa_id": q.id, "question": q.body},
                                         "answer": [{"text": s, "existing_supported_citations": []}
                                                    for s in sentences(q.ideal_answers[0])]}) + "\n" for q in qs))
    ids = {q.id for q in qs}
    with gzip.open(BIOASQ_FILE, "rt", encoding="utf-8") as fh:
        raw = [q for q in json.load(fh)["questions"] if q["id"] in ids]
    bioasq = folder / "bioasq.json"
    bioasq.write_text(json.dumps({"questions": raw}))
    return {"topics": topics, "items": items, "bioasq": bioasq}


def test_the_paper_presets_cover_every_task() -> None:
    assert {preset_task(n) for n in PAPER} == {"biogen-a", "biogen-b", "medhopqa", "bioasq"}


@pytest.mark.parametrize("preset", PAPER)
def test_each_paper_preset_runs_offline_through_its_command(preset: str, qs: list, store: Path, url: str,
                                                          inputs: dict[str, Path], tmp_path: Path) -> None:
    base = load_settings(preset)
    sets = [arg for s in llm_overrides(url, list(base.llms)) for arg in ("--set", s)]
    run_dir = tmp_path / "run"
    grounding = preset_task(preset) == "biogen-a"
    if grounding:
        args = ["ground", "--input", str(inputs["items"]), "--corpus", str(store), "--out", str(run_dir)]
    elif preset_task(preset) == "bioasq":
        args = ["bioasq", "phase-aplus", "--questions", str(inputs["bioasq"]), "--corpus", str(store),
                "--output", str(tmp_path / "answers.json"), "--run-dir", str(run_dir)]
    else:
        args = ["run", "--topics", str(inputs["topics"]), "--corpus", str(store), "--out", str(run_dir)]
    result = CliRunner().invoke(cli, [*args, "--preset", preset, "--offline", *sets])
    assert result.exit_code == 0, result.output[-3000:]
    resolved = Settings.model_validate(json.loads((run_dir / "config.json").read_text())["settings"])
    # every model the run loaded is on this machine; the LLMs are still the preset's, at the oracle
    missing = [(path, m) for path, cfg in stage_configs(resolved, grounding) for m in cfg.model_names()
               if not is_local_model(m)]
    assert not missing, missing
    assert all(cfg.backend == "openai" and getattr(cfg, "base_url", None) == url
               for cfg in (resolved.llm, *resolved.llms.values()))
    if any(not is_local_model(m) for _, cfg in stage_configs(base, grounding) for m in cfg.model_names()):
        assert resolved.model_dump() != load_settings(preset, [s for s in sets if s != "--set"]).model_dump()


def test_config_presets_long_prints_what_offline_changes() -> None:
    result = CliRunner().invoke(cli, ["config", "presets", "--long"])
    assert result.exit_code == 0, result.output
    assert "--set llm.backend=local --set llm.model=null" in result.output  # a served LLM -> SmolLM2
    assert "--offline: nothing to swap" in result.output  # the presets that run here as they are
