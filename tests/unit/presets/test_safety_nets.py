"""medcite's own safety nets stay out of the papers' runs: every paper preset that writes queries with an LLM (or
cleans a Rocchio expansion with one) turns the format reminder off, and says so as medcite's choice; medcite's own
default keeps it on."""

from __future__ import annotations

import pytest

from medcite.config import load_settings, preset_json, preset_names
from medcite.pipeline import provenance
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
