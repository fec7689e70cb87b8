"""medcite's own safety nets stay out of the papers' runs: every paper preset that writes queries with an LLM (or
cleans a Rocchio expansion with one) turns the format reminder off, and says so as medcite's choice; medcite's own
default keeps it on. Issue 43: the same for every asking-again switch the run reads, wherever it sits (Task A's
contradiction sub-queries, the BioASQ answers' repair retry)."""

from __future__ import annotations

import pytest

from medcite.config import load_settings, preset_json, preset_names
from medcite.presets import coverage, provenance
from medcite.qa.llm_qa import LLMQAConfig
from medcite.retrieve.llm_queries import DecomposeConfig

PAPER_PRESETS = [n for n in preset_names() if "paper" in preset_json(n)]


def _reminders(name: str) -> dict[str, bool]:
    retrieve = load_settings(name).retrieve
    out = {}
    for key, items in (("queries", retrieve.queries), ("branches", retrieve.branches)):
        for i, item in enumerate(items):
            flag = getattr(item, "format_reminder", None)
            if flag is not None and (key == "queries" or getattr(item, "clean", False)):
                out[f"retrieve.{key}.{i}.format_reminder"] = flag
    return out


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_a_paper_run_asks_each_query_prompt_once(name: str) -> None:
    for path, on in _reminders(name).items():
        assert not on, f"{name}: {path} is on; the format reminder is medcite's safety net, not the paper's"
        source = provenance.sources(name).get(path)
        assert source is not None and not source.from_paper and "safety net" in (source.choice or ""), (name, path)


def test_the_papers_write_queries_with_an_llm_and_medcite_reminds_by_default() -> None:
    assert sum(bool(_reminders(n)) for n in PAPER_PRESETS) >= 8  # CLaC 2024/2025 and Dalhousie runs
    assert DecomposeConfig().format_reminder is True


#: the switches that make medcite ask a model again after an unreadable reply
ASK_AGAIN = ("format_reminder", "repair")


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_no_paper_run_asks_again_anywhere_it_reads(name: str) -> None:
    rows, _, _ = coverage.resolved(name)
    switches = [r for r in rows if r.path.rsplit(".", 1)[-1] in ASK_AGAIN and not r.source.unused]
    for r in switches:
        assert r.value is False, f"{name}: {r.path} is on; asking again is medcite's safety net, not the paper's"
        assert r.by == r.path and "safety net" in r.source.choice, (name, r.path, r.source)


def test_the_switches_are_found_where_the_old_check_did_not_look() -> None:
    found = {(n, r.path) for n in ("clac24-llm", "dsgt-b1", "pjs-config-1") for r in coverage.resolved(n)[0]
             if r.path.rsplit(".", 1)[-1] in ASK_AGAIN and not r.source.unused}
    assert ("clac24-llm", "ground.contradict_queries.1.format_reminder") in found
    assert {("dsgt-b1", "qa.repair"), ("pjs-config-1", "qa.repair")} <= found
    assert LLMQAConfig().repair is True  # medcite's own default keeps the repair retry
