"""Issue 32: every stage that reads an LLM reply rejects the ones it cannot use (the cache keeps them marked and
never replays them), and accepts the ones it can. Each case runs the real stage on a scripted LLM with a cache
and reads the result back from the cache file and the trace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from medcite.attribute.llm_stance import LLMStance
from medcite.evaluate.biogen_b import completeness_scores
from medcite.evidence.summaries import SummarySelector
from medcite.generate.listwise import ListwiseCitations
from medcite.generate.llm_generator import FALLBACK, LLMGenerator
from medcite.llm.cache import LLMCache
from medcite.llm.completeness_judge import LLMCompletenessJudge
from medcite.llm.reply_parsers import names_hop_kind, names_sufficiency, says_done
from medcite.llm.trace import trace_context, trace_to
from medcite.rerank.llm_listwise import LLMListwiseReranker
from medcite.retrieve.llm_queries import LLMDecomposer, LLMReformulator, LLMStanceQueries
from medcite.retrieve.prf import llm_cleaner
from medcite.types import Answer, AnswerSentence, Article, Evidence, Hit, Query, Topic

TOPIC = Topic("t1", "Do statins lower LDL cholesterol?")
EVIDENCE = [Evidence(1, "111", "Statins lowered LDL cholesterol by 30% in adults.", score=0.9),
            Evidence(2, "222", "Myalgia was reported by 10% of statin users.", score=0.8)]
GOOD_ANSWER = "Statins lower LDL cholesterol [1]. Some users report myalgia [2]."


class Run:
    """A scripted LLM with a cache in ``tmp_path``, and the trace of what it did."""

    def __init__(self, tmp_path: Path, scripted_llm: Any, answers: Any) -> None:
        self.cache = LLMCache(tmp_path / "cache.sqlite")
        self.llm = scripted_llm(answers, cache=self.cache)
        self.trace = tmp_path / "trace.jsonl"

    def __call__(self, stage: Callable[[], Any]) -> Any:
        with trace_to(self.trace), trace_context(topic_id=TOPIC.id):
            return stage()

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.trace.read_text().splitlines()] if self.trace.exists() else []

    def rejected(self) -> list[str]:
        """The reasons of the rejected replies, checked against the cache file: marked there with the latest
        reason of their request, and not replayed."""
        rows = [r for r in self.rows() if r.get("event") == "rejected"]
        latest = {r["key"]: r["reason"] for r in rows}
        for key, reason in latest.items():
            assert self.cache.rejection(key) == reason
            assert self.cache.get(key) is None
        return [r["reason"] for r in rows]

    def accepted(self) -> int:
        """Calls whose reply the cache replays."""
        return sum(self.cache.get(r["key"]) is not None for r in self.rows() if "event" not in r)


CASES: dict[str, tuple[Callable[[Any], Any], str, str, str]] = {
    # stage: (run it with the LLM, an unusable reply, a usable one, words of the reason)
    "reformulation": (lambda llm: LLMReformulator(llm).generate(TOPIC), "ok", "1. statin LDL lowering\n2. b",
                      "no reformulation"),
    "decomposition (no list)": (lambda llm: LLMDecomposer(llm).generate(TOPIC), "ok",
                                '["statins LDL", "statin myalgia"]', "not a list"),
    "decomposition (nothing)": (lambda llm: LLMDecomposer(llm).generate(TOPIC), "```\n```", "- statins LDL",
                                "no sub-query"),
    "stance queries": (lambda llm: LLMStanceQueries(llm).generate(TOPIC), "ok",
                       "SUPPORT: statins lower LDL\nCONTRADICT: statins do not lower LDL", "no support/contradict"),
    "stance": (lambda llm: LLMStance(llm).classify([("Statins lower LDL.", "Statins lowered LDL by 30%.")]), "ok",
               "SUPPORTS\n\"Statins lowered LDL by 30%.\"", "names no stance label"),
    "citation label": (lambda llm: LLMStance(llm, prompt="bioace_citation").classify([("A.", "B.")]), "ok",
                       "NOT RELEVANT", "names no stance label"),
    "listwise rerank": (lambda llm: LLMListwiseReranker(llm, window=3, step=3, top_n=3).rerank(
        "q", [Hit(p, 1.0) for p in "123"], {p: Article(p, f"T{p}", "text") for p in "123"}, 3), "ok", "[2] > [1]",
        "no passage id"),
    "listwise citations": (lambda llm: ListwiseCitations(llm).support("A claim.", [Article("11", "T", "a")]), "ok",
                           "Supporting Citations: []", "no PMID that was shown"),
    "summary": (lambda llm: SummarySelector(llm).summarize("q?", [Article("11", "T", "An abstract.")]), "",
                "Statins lowered LDL.", "no summary"),
    "rocchio clean-up": (lambda llm: llm_cleaner(llm)("statins", _weighted()), "", "statins LDL", "no cleaned query"),
    "completeness": (lambda llm: completeness_scores([Answer("t1", [AnswerSentence("A.", ("1",))])], {},
                                                 LLMCompletenessJudge(llm)), "ok",
                     "1: required", "got no label"),
}


def _weighted() -> Any:
    from medcite.retrieve.prf import WeightedQuery

    return WeightedQuery({"statins": 1.0, "ldl": 0.5})


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unusable_reply_is_rejected_and_a_usable_one_is_kept(case: str, tmp_path: Path, scripted_llm) -> None:
    stage, bad, good, why = CASES[case]
    run = Run(tmp_path / "bad", scripted_llm, lambda messages: bad)
    run(lambda: stage(run.llm))
    reasons = run.rejected()  # a stage may ask once more with a format reminder: that reply is rejected too
    assert any(why in r for r in reasons), reasons
    assert run.accepted() == 0

    ok = Run(tmp_path / "good", scripted_llm, lambda messages: good)
    ok(lambda: stage(ok.llm))
    assert ok.rejected() == [] and ok.accepted() >= 1


def test_a_rejected_generation_is_asked_again_and_its_retry_is_replayed(tmp_path: Path, scripted_llm) -> None:
    """Attempt 1 breaks the rules (rejected), attempt 2, asked with the feedback, is kept; a re-run asks attempt
    1 again (the server may have been fixed) and, getting the same reply, takes attempt 2 from the cache."""
    replies = ["Statins help.", GOOD_ANSWER]
    run = Run(tmp_path, scripted_llm, lambda messages: replies[len(messages) > 2])
    answer = run(lambda: LLMGenerator(run.llm, max_attempts=2).generate(TOPIC, [Query("q0", TOPIC.question)],
                                                                        EVIDENCE))
    assert answer.generator == "llm" and len(run.llm.prompts) == 2
    (reason,) = run.rejected()
    assert reason.startswith("attempt 1 breaks: ") and "has no citation" in reason
    again = scripted_llm(lambda messages: replies[len(messages) > 2], cache=run.cache)
    second = LLMGenerator(again, max_attempts=2).generate(TOPIC, [Query("q0", TOPIC.question)], EVIDENCE)
    assert second.text == answer.text
    assert len(again.prompts) == 1 and len(again.prompts[0]) == 2  # only the first request went to the server


def test_the_last_attempt_of_a_fallback_is_rejected_too(tmp_path: Path, scripted_llm) -> None:
    run = Run(tmp_path, scripted_llm, lambda messages: "ok")
    answer = run(lambda: LLMGenerator(run.llm, max_attempts=2).generate(TOPIC, [], EVIDENCE))
    assert answer.generator == FALLBACK
    first, last = run.rejected()
    assert first.startswith("attempt 1 breaks") and last.startswith("LLM answer still invalid after 2 attempt(s)")
    assert run.accepted() == 0


def test_a_fallback_when_empty_rejects_only_an_answer_it_discards(tmp_path: Path, scripted_llm) -> None:
    """CLaC 2025 (fallback_when=empty, one attempt): a repaired answer is used, so its reply is replayed."""
    run = Run(tmp_path, scripted_llm, lambda messages: "Statins lower LDL [1]. Statins are popular [9].")
    answer = run(lambda: LLMGenerator(run.llm, max_attempts=1, fallback_when="empty").generate(TOPIC, [], EVIDENCE))
    assert answer.generator == "llm" and run.rejected() == [] and run.accepted() == 1


def test_a_later_check_that_discards_the_answer_rejects_its_reply(tmp_path: Path, scripted_llm) -> None:
    """The gate's extractive fallback and the citation check's regeneration reject the reply the answer came
    from; a check that could not run (its judge failed) does not."""
    run = Run(tmp_path, scripted_llm, lambda messages: GOOD_ANSWER)
    gen = LLMGenerator(run.llm)

    def gate_then_check() -> None:
        first = gen.generate(TOPIC, [], EVIDENCE)
        gen.extractive_answer(TOPIC, [], EVIDENCE, [], first.text, "the overlap gate left no supported sentence")
        gen.generate(TOPIC, [], EVIDENCE)  # the same request: asked again, since its reply was rejected
        gen.extractive_answer(TOPIC, [], EVIDENCE, [], first.text, "the check failed", reject_reply=False)
        third = gen.generate(TOPIC, [], EVIDENCE)
        gen.revise(TOPIC, [], EVIDENCE, third, ["PMID 222 does not support sentence 2"])

    run(gate_then_check)
    assert run.rejected() == ["the overlap gate left no supported sentence",
                              "generated again: PMID 222 does not support sentence 2"]
    # the first generation, asked again after the gate, replayed after the failed check, then the revision
    assert [r["cache_hit"] for r in run.rows() if "event" not in r] == [False, False, True, False]


@pytest.mark.parametrize(("text", "hop", "sufficiency", "done"), [
    ("ok", False, False, False),
    ("SIMPLE", True, False, False),
    ("MULTI-HOP: it needs two lookups", True, False, False),
    ("SUFFICIENT", False, True, False),
    ("QUERY: statin myopathy incidence", False, True, False),
    ("DONE", False, False, True),
    ("SUB-QUESTION: what is X?\nDONE", False, False, False),
])
def test_the_label_checks_of_the_loops_tell_a_default_from_an_answer(text: str, hop: bool, sufficiency: bool,
                                                                      done: bool) -> None:
    assert (names_hop_kind(text), names_sufficiency(text), says_done(text)) == (hop, sufficiency, done)
