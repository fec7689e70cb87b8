"""Issue 43: which resolved settings a run reads (medcite.presets.reads), worked out from the settings the way the
stages read them, so that "not used by this run" is never a preset's own claim."""

from __future__ import annotations

import pytest

from medcite.config import load_settings, preset_names
from medcite.errors import ConfigError
from medcite.presets import provenance
from medcite.presets.reads import RULES, RunView, leaves, unread


def _unread(name: str) -> dict[str, str]:
    return unread(load_settings(name), provenance.task(name))


def test_a_task_b_run_reads_no_bioasq_task_a_or_multi_hop_settings() -> None:
    got = _unread("clac25-a")
    for path in ("qa.backend", "bioasq.documents", "hops.max_hops", "ground.candidates", "corpus.batch_size",
                 "index.milvus.uri", "stance.backend"):
        assert path in got, path
    assert "BioASQ" in got["qa.backend"] and "multi-hop" in got["hops.max_hops"]
    assert "retrieve.fusion" in got and "nothing to fuse" in got["retrieve.fusion"]  # one query, one branch
    for path in ("generate.prompt", "generate.max_words", "evidence.docs", "rerank.model", "indexes.bm25.k1"):
        assert path not in got, path
    assert "evidence.lam" in got  # one abstract per document: no MMR


def test_task_a_with_listwise_picks_reads_no_stance_stage_or_thresholds() -> None:
    got = _unread("clac24-llm")
    assert "stance.backend" in got and "listwise" in got["stance.backend"]
    assert "ground.min_support" in got and "ground.support_prompt" not in got
    assert "generate.backend" in got and "flow" in got
    assert "ground.contradict_queries.1.format_reminder" not in got  # read: the question's decomposition
    assert "ground.persona" in got  # the answer-first flow's, not Task A's


def test_the_answer_first_flow_reads_the_word_limit_and_its_llm_only() -> None:
    got = _unread("dal25-expd")
    assert "generate.max_words" not in got and "verify.llm" not in got and "ground.persona" not in got
    assert {"generate.backend", "evidence.backend", "verify.citations"} <= set(got)


def test_bioasq_runs_read_their_prompt_options_only() -> None:
    pjs = _unread("pjs-config-1")
    assert {"qa.style", "qa.json_instruction", "qa.encoder.model", "qa.draw"} <= set(pjs)  # PJs' prompt, 0 shots
    assert {"generate.backend", "evidence.backend", "indexes.bm25.k1"} <= set(pjs)
    dsgt = _unread("dsgt-b-mistral-style1")
    assert "qa.encoder.model" in dsgt and "qa.draw_seed" not in dsgt  # a random draw: no encoder, a seed
    assert "qa.passage_snippets" not in dsgt and "qa.repair" not in dsgt


def test_an_unknown_task_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown task"):
        RunView(load_settings("offline"), "task-c")


def test_every_rule_still_names_settings_that_exist() -> None:
    """A rule whose field was renamed would match nothing and silently stop saying 'not used'."""
    paths = {p for name in preset_names() for p, _ in leaves(load_settings(name).model_dump(mode="json"))}
    for rule in RULES:
        assert any(rule.matches(p.split(".")) for p in paths), rule.pattern


def test_lists_of_plain_values_are_one_setting() -> None:
    tree = {"retrieve": {"branches": [{"backend": "bm25", "queries": ["a", "b"]}]}, "llms": {}, "preset": "x"}
    assert list(leaves(tree)) == [("retrieve.branches.0.backend", "bm25"), ("retrieve.branches.0.queries", ["a", "b"]),
                                  ("llms", {})]
