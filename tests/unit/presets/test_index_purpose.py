"""Why a context builds an index, and the options that do without it, read from real presets."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.presets.index_purpose import branch_list, index_purpose, users


def test_ground_is_told_to_drop_the_dense_branch_not_to_change_preset() -> None:
    goal = index_purpose(load_settings("offline-grounding"), "dense", grounding=True, store=Path("/data/store"))
    assert goal.why == "preset 'offline-grounding' searches it in its retrieve branch 'dense'"
    assert goal.avoid == ("--set 'retrieve.branches=[\"bm25\"]' (the preset without this branch)",
                          "build it beforehand, once: medcite index dense --store /data/store "
                          "--preset offline-grounding")


def test_search_is_also_offered_the_bm25_preset() -> None:
    goal = index_purpose(load_settings("hybrid"), "dense")
    assert "--preset offline (BM25 only)" in goal.avoid
    assert goal.avoid[-1] == "build it beforehand, once: medcite index dense --store STORE --preset hybrid"


def test_an_index_a_reranker_reads_cannot_be_dropped_by_removing_a_branch() -> None:
    goal = index_purpose(load_settings("best"), "bm25")
    assert goal.why == "preset 'best' searches it in its retrieve branch 'bm25' and reads it in rerank (ltr)"
    assert goal.avoid == ("build it beforehand, once: medcite index bm25 --store STORE --preset best",)
    assert [path for path, _ in users(load_settings("best"), "bm25")] == ["retrieve.branches[0]", "rerank"]


def test_an_index_changed_by_set_and_not_named_by_default() -> None:
    settings = load_settings("hybrid", ["indexes.medcpt.backend=faiss", "indexes.medcpt.encoder=minilm-onnx",
                                        'retrieve.branches=["bm25", {"backend": "dense", "index": "medcpt"}]'])
    goal = index_purpose(settings, "medcpt")
    assert goal.avoid[-1] == ("build it beforehand, once: medcite index dense --store STORE --preset hybrid --index "
                              "medcpt (with this run's --set options)")


@pytest.mark.parametrize(("preset", "drop"), [("dal25-afmmd", "dense"), ("dal25-rrf", "bm25"),
                                              ("hybrid", "dense")])
def test_the_branches_left_are_a_valid_set_value(preset: str, drop: str) -> None:
    settings = load_settings(preset)
    rest = [b for b in settings.retrieve.branches if b.index != drop]
    value = branch_list(rest)
    assert list(load_settings(preset, [f"retrieve.branches={value}"]).retrieve.branches) == rest
    assert index_purpose(settings, drop).avoid[0] == (f"--set 'retrieve.branches={value}' "
                                                      "(the preset without this branch)")
