"""Every Task B preset end to end on a tiny store: offline swaps, a rule-following LLM, validation, cache re-runs.

The LLM is the ``rules`` backend registered for the tests (tests/medcite_fakes.py), chosen with
``--set llm.backend=rules`` like any other: a real :class:`~medcite.llm.base.BaseLLM` whose answers follow
fixed rules of the prompt (summaries copy the abstract's first sentence; the first answer cites an index
outside the block so the constraint-retry path runs; the retry cites correctly), so every stage runs its
real code and nothing is injected by hand.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings, preset_names, with_overrides
from medcite.corpus.store import DocumentStore, FileStats
from medcite.pipeline import Pipeline
from medcite.presets.offline import needs_llm, offline_lines, offline_settings
from medcite.rundir import read_answers
from medcite.tasks.biogen_b_format import write_biogen25
from medcite.tasks.biogen_b_validate import evidence_by_topic, validate_biogen25
from medcite.types import Article, Topic

TASK_B = ["clac25-a", "clac25-b", "clac25-c", "clac25-d", "clac25-e", "dal25-rrf", "dal25-rmmln", "dal25-rmmdn",
          "clac24-simpleqa-hybrid", "clac24-medhopqa-bm25", "clac24-medhopqa-hybrid",
          "dal25-rfr_monot5-msmarco_llama70b", "dal25-rfr_monot5-msmarco_deepseek-r1", "clac24-simpleqa", "offline"]
TOPICS = [
    Topic("181", "Do statins lower LDL cholesterol and cause muscle pain?"),
    Topic("182", "Does aerobic exercise reduce blood pressure in hypertension?"),
    Topic("183", "Does vitamin D supplementation prevent fractures in older adults?"),
]
FACTS = [
    ("Statins and LDL", "Statins lowered LDL cholesterol by 30% in adults. Muscle pain was reported by 10% of users."),
    ("Statin myopathy", "Statin myopathy presents as muscle pain. Creatine kinase rose in 2% of patients on statins."),
    ("Aerobic exercise and blood pressure",
     "Aerobic exercise reduced systolic blood pressure by 5 mmHg in hypertension. Walking was the usual exercise."),
    ("Exercise in hypertension", "Regular exercise lowers blood pressure in hypertensive adults by 4 mmHg."),
    ("Vitamin D and fractures",
     "Vitamin D supplementation did not prevent fractures in older adults. Falls were unchanged over 5 years."),
    ("Vitamin D with calcium", "Vitamin D with calcium reduced hip fractures by 16% in older women in care homes."),
]


def _store(path: Path) -> Path:
    s = DocumentStore.create(path)
    arts = [Article(str(1000 + i), t, a) for i, (t, a) in enumerate(FACTS)]
    arts += [Article(str(2000 + i), f"Unrelated study {i}", f"Zebrafish fin {i} regeneration was imaged.")
             for i in range(30)]
    with s.transaction() as tx:
        tx.upsert(arts, FileStats("fixture"))
    s.close()
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("taskb") / "store")


def _run(preset: str, store: Path, out: Path, extra: list[str] | None = None) -> tuple[Any, Any, int]:
    """Answers, validation report and the number of LLM calls of one preset run with the rules LLM."""
    base = load_settings(preset)
    overrides = list(extra or [])
    if needs_llm(base):
        overrides += ["llm.backend=rules", *(f"llms.{name}.backend=rules" for name in base.llms)]
    if base.verify.citations != "off":  # the rules LLM does not judge stance: the rule-based stance stands in
        overrides += ["stance.backend=words"]
    calls = 0
    with Pipeline(with_overrides(offline_settings(base, "local"), overrides), store) as pipeline:
        pipeline.run(TOPICS, out)
        if needs_llm(base):
            calls = sum(pipeline.context.llm(name).calls  # type: ignore[attr-defined]
                        for name in (None, *base.llms))
    answers = read_answers(out)
    sub = out / "submission.jsonl"
    write_biogen25(sub, answers, "medcite", out.name)
    with DocumentStore.open(store) as s:
        report = validate_biogen25(sub, in_corpus=s.existing, expected_topics=[t.id for t in TOPICS],
                                   evidence=evidence_by_topic(out))
    return answers, report, calls


def test_task_b_presets_exist() -> None:
    assert set(TASK_B) <= set(preset_names())


@pytest.mark.parametrize("preset", TASK_B)
def test_preset_runs_offline_and_validates(preset: str, store: Path, tmp_path: Path) -> None:
    answers, report, calls = _run(preset, store, tmp_path / preset)
    assert report.ok, report.errors
    evidence = {}
    for line in (tmp_path / preset / "evidence.jsonl").read_text().splitlines():
        row = json.loads(line)
        evidence[row["topic_id"]] = {e["pmid"] for e in row["evidence"]}
    for a in answers:
        assert a.sentences
        assert sum(len(s.text.split()) for s in a.sentences) <= 250
        for s in a.sentences:
            undecided = s.kind == "verdict" and a.verdict in ("unsettled", "undecided")
            if not s.pmids and (s.kind == "abstain" or undecided):
                continue  # a lead that decides nothing, or that says the corpus holds nothing, cites nothing
            assert 1 <= len(s.pmids) <= 3 and set(s.pmids) <= evidence[a.topic_id]
    settings = load_settings(preset)
    if settings.rerank.backend != "none":  # the rerank stages run offline through their stand-ins, never skipped
        ranked = (tmp_path / preset / "rerank.trec").read_text().splitlines()
        assert {line.split()[0] for line in ranked} == {t.id for t in TOPICS}
        assert offline_settings(settings, "local").rerank.backend != "none"
    if settings.generate.backend == "llm":
        assert calls > 0
        assert {a.generator for a in answers} <= {"llm", "llm+extractive-fallback"}
        rows = [json.loads(x) for x in (tmp_path / preset / "trace.jsonl").read_text().splitlines()]
        assert {r["topic_id"] for r in rows} == {t.id for t in TOPICS}
        assert "generation" in {r["stage"] for r in rows}
        if settings.evidence.backend == "summaries":
            assert "summary" in {r["stage"] for r in rows}
            kinds = {e["kind"] for line in (tmp_path / preset / "evidence.jsonl").read_text().splitlines()
                     for e in json.loads(line)["evidence"]}
            assert kinds == {"bullet"}


def test_rerun_is_served_from_the_cache_but_for_the_rejected_replies(store: Path, tmp_path: Path) -> None:
    """The rules LLM's first answer to each topic cites outside the block: it is rejected and retried, so a re-run
    asks it again (issue 32: a rejected reply is never replayed) and takes every other reply from the cache."""
    cache = [f"llm.cache_dir={tmp_path / 'cache'}", "llm.cache=true"]
    first, _, calls = _run("clac25-b", store, tmp_path / "run1", cache)
    second, report, again = _run("clac25-b", store, tmp_path / "run2", cache)
    assert report.ok
    one = json.loads((tmp_path / "run1" / "summary.json").read_text())["llm_calls"]
    assert one["rejected"] == len(TOPICS) and one["from_cache"] == 0 and calls == one["total"] > len(TOPICS)
    assert again == len(TOPICS)
    rows = [json.loads(x) for x in (tmp_path / "run1" / "trace.jsonl").read_text().splitlines()]
    rejected = {r["key"] for r in rows if r.get("event") == "rejected"}
    rows = [json.loads(x) for x in (tmp_path / "run2" / "trace.jsonl").read_text().splitlines()]
    calls2 = [r for r in rows if "event" not in r]
    assert len(calls2) == one["total"] and all(r["cache_hit"] == (r["key"] not in rejected) for r in calls2)
    assert json.loads((tmp_path / "run2" / "summary.json").read_text())["llm_calls"] == {
        "total": one["total"], "from_cache": one["total"] - len(TOPICS), "failed": 0, "rejected": len(TOPICS)}
    assert [(a.topic_id, a.text) for a in first] == [(a.topic_id, a.text) for a in second]


def test_cli_names_the_swaps_when_the_server_is_missing(store: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps([{"id": t.id, "question": t.question, "narrative": "", "topic": "x"}
                                  for t in TOPICS]))
    args = ["run", "--topics", str(topics), "--corpus", str(store), "--out", str(tmp_path / "r1"),
            "--preset", "dal25-rrf", "--set", "llm.base_url=http://127.0.0.1:9/v1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    # Dal@TREC25 §III-B2a: Llama-3-70B (the default llm) writes dal25-rrf's queries and answer, so only it is swapped
    assert "--set llm.backend=local --set llm.model=null" in result.output
    assert "llms.deepseek" not in result.output
    assert "--set rerank.backend=embedding --set rerank.model=null" in result.output  # monoT5's stand-in
    assert "--set indexes.dense.encoder.model=minilm" in result.output
    # the printed no-LLM swaps really run the preset offline, through the CLI, into a valid submission
    none = [arg for line in offline_lines(load_settings("clac25-b"), "none") for arg in shlex.split(line)]
    args = ["run", "--topics", str(topics), "--corpus", str(store), "--out", str(tmp_path / "r2"),
            "--preset", "clac25-b", *none]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r2" / "validation.json").read_text())["ok"] is True


@pytest.mark.slow
def test_packaged_smollm2_runs_a_preset_offline_and_reruns_from_cache(store: Path, tmp_path: Path) -> None:
    """The real in-process LLM through the preset's own swaps; outputs are validated whatever it writes."""
    budget = [f"llm.cache_dir={tmp_path / 'cache'}", "evidence.docs=1", "evidence.max_tokens=16",
              "generate.max_tokens=24", "generate.max_attempts=1"]
    topics = TOPICS[:1]

    def run(out: Path) -> list[Any]:
        base = load_settings("clac25-b")
        settings = with_overrides(offline_settings(base, "local"), budget)
        assert settings.llm.backend == "local" and settings.rerank.backend == "embedding"
        pipeline = Pipeline(settings, store)
        try:
            pipeline.run(topics, out)
        finally:
            pipeline.close()
        return read_answers(out)

    first = run(tmp_path / "one")
    second = run(tmp_path / "two")
    for out in ("one", "two"):
        sub = tmp_path / out / "submission.jsonl"
        write_biogen25(sub, read_answers(tmp_path / out), "medcite", out)
        with DocumentStore.open(store) as s:
            report = validate_biogen25(sub, in_corpus=s.existing, expected_topics=["181"],
                                       evidence=evidence_by_topic(tmp_path / out))
        assert report.ok, report.errors
    first_rows = [json.loads(x) for x in (tmp_path / "one" / "trace.jsonl").read_text().splitlines()]
    assert {r["stage"] for r in first_rows} >= {"summary", "generation"}
    assert first[0].generator in ("llm", "llm+extractive-fallback")
    rejected = {r["key"] for r in first_rows if r.get("event") == "rejected"}  # never replayed (issue 32)
    rows = [json.loads(x) for x in (tmp_path / "two" / "trace.jsonl").read_text().splitlines()]
    assert len(rows) == len(first_rows)
    assert all(r["cache_hit"] == (r["key"] not in rejected) for r in rows if "event" not in r)
    assert [a.text for a in first] == [a.text for a in second]
