"""Issue 32: every paper preset that calls an LLM runs to the end against a server that answers every prompt with
a plain line: the question itself or "I cannot help with that." (the oracle server, ``degraded="plain"``), with
offline swaps for its encoders, rerankers and stance models. Each topic gets an answer (the extractive fallback is
fine) and nothing stops the run: a reply that fails its format is left out (asked again once with the format
reminder first where the preset turns that safety net on: medcite's own, not the papers'), and a branch whose query
stages produced nothing searches the question and says so in the run directory.

Task B presets run through ``medcite run``'s pipeline, Task A presets through ``medcite ground``, BioASQ presets
through Phase A+ (retrieval, snippets and answers). Two held-back questions: the second is the issue's case,
"Describe ..." (the keyword rewrite and the decomposition both come back as the question itself); the first gets
the refusal line for both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings, preset_json, preset_names, preset_task
from medcite.presets.offline import needs_llm
from oracle.answers import sentences
from oracle.harness import questions, run_grounding, run_phase_a_plus, run_preset, snippet_store

pytestmark = pytest.mark.slow  # about a minute on 2 cores: every paper preset that calls an LLM, two topics each

PAPER_LLM_PRESETS = [n for n in preset_names() if "paper" in preset_json(n) and needs_llm(load_settings(n), True)]


def _task(preset: str) -> str:
    """The command the preset's declared task runs through: Task A (grounding), BioASQ, or Task B."""
    return {"biogen-a": "A", "bioasq": "bioasq"}.get(preset_task(preset), "B")


@pytest.fixture(scope="module")
def qs() -> list:
    first, _, describe = questions(3)
    assert describe.body.startswith("Describe ")  # the kind of question (its rewrite is itself)
    return [first, describe]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, qs: list) -> Path:
    return snippet_store(tmp_path_factory.mktemp("plain") / "store", qs)


def test_the_presets_cover_every_paper_and_task() -> None:
    assert {n.split("-")[0] for n in PAPER_LLM_PRESETS} == {"clac24", "clac25", "dal25", "dsgt", "pjs"}
    assert {"clac24-llm", "clac24-llm-nli", "dal25-emotional", "dal25-expert"} <= set(PAPER_LLM_PRESETS)
    assert {_task(n) for n in PAPER_LLM_PRESETS} == {"A", "B", "bioasq"}


@pytest.mark.parametrize("preset", PAPER_LLM_PRESETS)
def test_every_paper_preset_runs_to_the_end_on_plain_replies(preset: str, qs: list, store: Path,
                                                             tmp_path: Path) -> None:
    task = _task(preset)
    if task == "A":
        row = run_grounding(preset, qs, store, tmp_path / "ground", degraded="plain")
        assert row["unrecognised"] == 0, row["calls"]
        assert row["items"] == len(qs)  # an answer per topic, every sentence of it in the submission
        assert row["sentences"] == sum(len(sentences(q.ideal_answers[0])) for q in qs)
        return
    if task == "bioasq":
        result, server, _ = run_phase_a_plus(preset, qs, store, tmp_path / "run", degraded="plain")
        assert server.counts().get("UNRECOGNISED", 0) == 0, server.counts()
        assert result.report.ok, result.report.errors
        submitted = json.loads(result.submission.read_text())["questions"]
        assert [q["id"] for q in submitted] == [q.id for q in qs]
        assert all(q.get("ideal_answer") for q in submitted)  # an answer per question (the fallback is fine)
        return
    row = run_preset(preset, qs, store, tmp_path / "run", degraded="plain")
    assert row["unrecognised"] == 0, row["calls"]
    assert row["answered"] == len(qs), row  # every topic has a sentence, the extractive fallback at worst
    queries = [json.loads(line) for line in (tmp_path / "run" / "queries.jsonl").read_text().splitlines()]
    assert [r["topic_id"] for r in queries] == [q.id for q in qs]
    if preset == "dal25-rfr_monot5-msmarco_llama70b":  # the run: its keyword rewrite is the question
        describe = queries[1]
        assert describe["queries"][0]["stages"] == ["original", "keyword_rewrite"]
        notes = describe["notes"]
        assert any("llm_decompose" in n and "left out" in n for n in notes), notes
        assert any(n.startswith("branch dense:") and "searched the question (q0)" in n for n in notes), notes
        assert row["calls"]["decompose"] == len(qs)  # the paper's run asks once: no format reminder


def _reminded(preset: str) -> tuple[str, ...]:
    """``--set`` lines turning medcite's format reminder on in every query generator and branch of ``preset``."""
    retrieve = load_settings(preset).retrieve.model_dump(mode="json")
    out = []
    for key in ("queries", "branches"):
        items = [{**x, "format_reminder": True} if isinstance(x, dict) and "format_reminder" in x else x
                 for x in retrieve[key]]
        assert any(isinstance(x, dict) and x.get("format_reminder") for x in items)
        out.append(f"retrieve.{key}={json.dumps(items)}")
    return tuple(out)


def test_with_the_format_reminder_an_unreadable_reply_is_asked_again_once(qs: list, store: Path,
                                                                         tmp_path: Path) -> None:
    preset = "dal25-rfr_monot5-msmarco_llama70b"  # the run, with the reminder of medcite's own presets
    row = run_preset(preset, qs, store, tmp_path / "run", sets=_reminded(preset), degraded="plain")
    assert row["unrecognised"] == 0, row["calls"]
    assert row["answered"] == len(qs), row
    assert row["calls"]["decompose"] == 2 * len(qs)  # each topic's decomposition asked twice, never three times
    notes = [json.loads(line)["notes"] for line in (tmp_path / "run" / "queries.jsonl").read_text().splitlines()]
    assert all(any("llm_decompose" in n and "format reminder" in n and "left out" in n for n in ns) for ns in notes)
