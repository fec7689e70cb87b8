"""LLMGenerator: cited mode, constraint retries with feedback, extractive fallback, condensation, post-hoc."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.generate.attribution import attribute, negated
from medcite.generate.citations import DraftSentence
from medcite.generate.llm_generator import FALLBACK, LLMGenerator, cited_violations
from medcite.llm.base import BaseLLM, Completion, Message
from medcite.llm.trace import trace_context, trace_to
from medcite.types import Evidence, Query, Topic


class ScriptedLLM(BaseLLM):
    """A real LLM backend whose answers the test scripts (a list, or a function of the messages)."""

    name = "scripted"

    def __init__(self, answers: Sequence[str] | Callable[[list[Message]], str]) -> None:
        super().__init__("scripted-model")
        self.answers: Any = answers if callable(answers) else list(answers)
        self.prompts: list[list[Message]] = []

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.prompts.append(messages)
        text = self.answers(messages) if callable(self.answers) else self.answers.pop(0)
        return Completion(text=text, model=self.model)


EVIDENCE = [
    Evidence(1, "111", "Statins lowered LDL cholesterol by 30% in adults.", score=0.9),
    Evidence(2, "222", "Myalgia was reported by 10% of statin users.", score=0.8),
    Evidence(3, "333", "Statin therapy reduced major cardiovascular events.", score=0.7),
    Evidence(4, "444", "Ezetimibe added to statins lowered LDL further.", score=0.6),
]
TOPIC = Topic("t1", "Do statins lower cholesterol?")
QUERIES = [Query("q0", TOPIC.question)]


def _gen(llm: ScriptedLLM, **kw: Any) -> LLMGenerator:
    return LLMGenerator(llm, **kw)


def test_valid_first_answer_maps_indices_to_pmids() -> None:
    llm = ScriptedLLM(["Statins lower LDL cholesterol by 30% [1]. Myalgia affects some users [2, 2]."])
    ans = _gen(llm).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == "llm"
    assert [s.pmids for s in ans.sentences] == [("111",), ("222",)]
    assert len(llm.prompts) == 1
    assert "[1] (111) Statins lowered LDL" in llm.prompts[0][-1]["content"]


def test_retry_feeds_violations_back_then_accepts() -> None:
    llm = ScriptedLLM([
        "Statins lower LDL [9]. Statins are popular.",
        "Statins lower LDL [1]. Statins reduce events [3].",
    ])
    ans = _gen(llm, max_attempts=3).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == "llm"
    assert [s.pmids for s in ans.sentences] == [("111",), ("333",)]
    assert len(llm.prompts) == 2
    retry = llm.prompts[1]
    assert retry[-2] == {"role": "assistant", "content": "Statins lower LDL [9]. Statins are popular."}
    feedback = retry[-1]["content"]
    assert "[9], which is not in the evidence list (1 to 4)" in feedback
    assert 'sentence 2 ("Statins are popular.") has no citation' in feedback
    assert any(d.what == "answer" and d.reason.startswith("attempt 1 rejected") for d in ans.dropped)


def test_still_invalid_falls_back_to_extractive() -> None:
    llm = ScriptedLLM(["No citations here.", "Still none."])
    ans = _gen(llm, max_attempts=2).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == FALLBACK
    assert len(llm.prompts) == 2
    assert ans.sentences and ans.sentences[0].text == "Statins lowered LDL cholesterol by 30% in adults."
    why = [d.reason for d in ans.dropped if "extractive answer used" in d.reason]
    assert why and "after 2 attempt(s)" in why[0] and "has no citation" in why[0]


def test_without_fallback_keeps_what_survives_postprocessing() -> None:
    llm = ScriptedLLM(["Statins lower LDL [1]. Uncited claim."])
    ans = _gen(llm, max_attempts=1, fallback=False).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == "llm"
    assert [s.text for s in ans.sentences] == ["Statins lower LDL."]
    assert any(d.what == "sentence" and d.reason == "no valid citation" for d in ans.dropped)


def test_a_papers_post_processing_repairs_and_falls_back_only_when_nothing_valid_is_left() -> None:
    """Issue 25 (CLaC 2025 §6.2): a citation outside the evidence is discarded and a sentence left without one
    dropped -- no retry, no fallback -- and only an answer with no valid sentence left is replaced (marked)."""
    llm = ScriptedLLM(["Statins lower LDL [1]. Statins are popular [9]. Uncited claim."])
    ans = _gen(llm, max_attempts=1, fallback_when="empty").generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == "llm" and len(llm.prompts) == 1
    assert [s.text for s in ans.sentences] == ["Statins lower LDL."]
    llm = ScriptedLLM(["Statins are popular [9]. Uncited claim."])
    ans = _gen(llm, max_attempts=1, fallback_when="empty").generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == FALLBACK
    assert any("no valid sentence left after post-processing" in d.reason for d in ans.dropped)
    with pytest.raises(ConfigError):
        _gen(llm, fallback_when="sometimes")


def test_more_than_three_pmids_and_direct_pmids_are_violations() -> None:
    drafts = [DraftSentence("A claim.", [1, 2, 3, 4]), DraftSentence("B claim.", [], ["[PMID 5] cites PMIDs"])]
    v = cited_violations(drafts, EVIDENCE)
    assert any("cites 4 sources; cite at most 3" in x for x in v)
    assert any("cites PMIDs" in x for x in v)
    long = [DraftSentence("word " * 251, [1])]
    assert cited_violations(long, EVIDENCE) == ["the answer has 251 words; use at most 250"]
    assert cited_violations([], EVIDENCE)[0].startswith("the answer is empty")


def test_condensation_of_a_long_answer_is_traced(tmp_path: Path) -> None:
    long = " ".join(f"Statins lower LDL in study number {i} of many [1]." for i in range(40))  # 360 words
    llm = ScriptedLLM([long, "Statins lower LDL cholesterol [1]. Myalgia occurs [2]."])
    path = tmp_path / "trace.jsonl"
    with trace_to(path), trace_context(topic_id="t1"):
        ans = _gen(llm, condense=True).generate(TOPIC, QUERIES, EVIDENCE)
    assert [s.text for s in ans.sentences] == ["Statins lower LDL cholesterol.", "Myalgia occurs."]
    assert "Shorten the answer" in llm.prompts[1][-1]["content"]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["topic_id"], r["stage"]) for r in rows] == [("t1", "generation"), ("t1", "condensation")]
    assert any("condensed by the LLM" in d.reason for d in ans.dropped)


def test_posthoc_attributes_by_tfidf_and_drops_unsupported() -> None:
    drafts = attribute(["Statins lowered LDL cholesterol in adults.", "The moon is bright tonight."], EVIDENCE)
    assert drafts[0].indices == [1]  # only the item it was written from
    assert drafts[1].indices == []
    llm = ScriptedLLM(["Statins lowered LDL cholesterol in adults. The moon is bright tonight."])
    ans = _gen(llm, mode="posthoc", max_attempts=1, fallback=False).generate(TOPIC, QUERIES, EVIDENCE)
    assert "Do not write citations" in llm.prompts[0][-1]["content"]
    assert [s.text for s in ans.sentences] == ["Statins lowered LDL cholesterol in adults."]
    assert ans.sentences[0].pmids[0] == "111"
    assert any(d.what == "sentence" and "moon" in d.text for d in ans.dropped)


def test_posthoc_retry_uses_plain_feedback() -> None:
    llm = ScriptedLLM(["The moon is bright.", "Myalgia was reported by statin users."])
    ans = _gen(llm, mode="posthoc", max_attempts=2).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == "llm"
    assert ans.sentences[0].pmids[0] == "222"
    assert "is not supported by any evidence item" in llm.prompts[1][-1]["content"]


def test_no_evidence_means_no_call() -> None:
    llm = ScriptedLLM([])
    ans = _gen(llm).generate(TOPIC, QUERIES, [])
    assert ans.sentences == [] and llm.prompts == []


def test_posthoc_citation_never_crosses_negation() -> None:
    """Finding: TF-IDF attribution let "did not prevent" cite the abstract that says "prevented"."""
    ev = [Evidence(1, "501", "Vitamin D prevented hip fractures in older women.", score=0.9),
          Evidence(2, "502", "Vitamin D did not prevent hip fractures in older women.", score=0.8)]
    drafts = attribute(["Vitamin D prevented hip fractures.", "Vitamin D did not prevent hip fractures."], ev)
    assert [d.indices for d in drafts] == [[1], [2]]
    # when only the contradicting abstract is similar, the sentence stays uncited (and is dropped)
    assert attribute(["Vitamin D did not prevent hip fractures."], ev[:1])[0].indices == []
    assert negated("No difference was found") and negated("Statins failed to reduce mortality")
    assert not negated("Statins reduced mortality and notably improved outcomes")


def test_from_config_needs_an_llm() -> None:
    from medcite.pipeline import Context

    s = load_settings("offline", ["generate.backend=llm", "generate.max_attempts=5", "generate.mode=posthoc"])
    with pytest.raises(ConfigError, match="needs a language model"):
        Context(s).build("generate", s.generate)
    g = Context(s, llm=ScriptedLLM([])).build("generate", s.generate)
    assert isinstance(g, LLMGenerator) and (g.max_attempts, g.mode) == (5, "posthoc")


_TEXT = st.lists(
    st.one_of(st.text(max_size=40), st.sampled_from(["[1]", "[2-4]", "[1,3]", "[7]", "[1][2][3][4]", ". ", "[PMID 9]",
                                                      "word " * 30, "[0]", "[3-1]"])),
    max_size=30,
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs=st.lists(_TEXT, min_size=3, max_size=3), mode=st.sampled_from(["cited", "posthoc"]))
def test_no_output_breaks_the_invariants(outputs: list[str], mode: str) -> None:
    llm = ScriptedLLM(list(outputs) * 3)
    ans = LLMGenerator(llm, mode=mode, max_attempts=3, condense=True).generate(TOPIC, QUERIES, EVIDENCE)
    allowed = {e.pmid for e in EVIDENCE}
    assert sum(len(s.text.split()) for s in ans.sentences) <= 250
    for s in ans.sentences:
        assert s.pmids and set(s.pmids) <= allowed and len(s.pmids) <= 3


def test_the_topic_prompt_carries_topic_narrative_reformulations_and_the_sentence_range() -> None:
    """CLaC 2025's generation prompt: topic, narrative, original and reformulated questions, sentence range."""
    llm = ScriptedLLM(["Statins lowered LDL cholesterol [1]. Myalgia was reported by some users [2]."])
    topic = Topic("t1", "Do statins lower cholesterol?", narrative="A 60-year-old on atorvastatin asks.",
                  topic="statins and LDL")
    queries = [Query("q0", topic.question), Query("q1", "What is the effect of HMG-CoA reductase inhibitors on "
                                                       "LDL-C?", "reformulation")]
    _gen(llm, prompt="generate_topic", min_sentences=2, max_sentences=6).generate(topic, queries, EVIDENCE)
    user = llm.prompts[0][-1]["content"]
    assert "Topic: statins and LDL" in user and "A 60-year-old on atorvastatin asks." in user
    assert "Question: Do statins lower cholesterol?" in user
    assert "- What is the effect of HMG-CoA reductase inhibitors on LDL-C?" in user
    assert "- Do statins lower cholesterol?" not in user  # the original is not repeated as a reformulation
    assert "Write 2 to 6 sentences and at most 250 words" in user
    assert "[1] (111) Statins lowered LDL cholesterol by 30% in adults." in user


def test_fuzzy_dedupe_drops_near_repeats_only() -> None:
    """Dalhousie 2025 de-duplicates answer sentences fuzzily; a distinct sentence stays."""
    text = ("Statins lowered LDL cholesterol by 30% [1]. Statins lowered LDL-cholesterol by 30% [1]. "
            "Myalgia affected 10% of users [2].")
    answer = _gen(ScriptedLLM([text]), dedupe=0.9).generate(TOPIC, QUERIES, EVIDENCE)
    assert [s.text for s in answer.sentences] == ["Statins lowered LDL cholesterol by 30%.",
                                                  "Myalgia affected 10% of users."]
    assert any("near-duplicate" in d.reason for d in answer.dropped)
    kept = _gen(ScriptedLLM([text])).generate(TOPIC, QUERIES, EVIDENCE)
    assert len(kept.sentences) == 3


def test_a_failed_llm_call_falls_back_to_the_extractive_answer_and_says_why() -> None:
    """Issue 16 item 5: a failed LLM call stopped the answer; it is discarded, replaced, and the reason kept."""
    from medcite.errors import LLMError

    def fail(messages: list[Message]) -> str:
        raise LLMError("the server closed the connection")

    ans = _gen(ScriptedLLM(fail)).generate(TOPIC, QUERIES, EVIDENCE)
    assert ans.generator == FALLBACK
    assert ans.sentences and all(len(s.pmids) == 1 for s in ans.sentences)
    reasons = [d.reason for d in ans.dropped if d.what == "answer"]
    assert any("LLM call failed" in r and "server closed the connection" in r for r in reasons)
    with pytest.raises(LLMError):
        _gen(ScriptedLLM(fail), fallback=False).generate(TOPIC, QUERIES, EVIDENCE)
