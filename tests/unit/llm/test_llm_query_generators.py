"""LLM reformulation and decomposition as query generators, with a scripted LLM."""

from __future__ import annotations

import json

import pytest

from medcite.llm.trace import trace_to
from medcite.retrieve.base import QueryGenerator
from medcite.retrieve.llm_queries import LLMDecomposer, LLMReformulator
from medcite.types import Query, Topic

TOPIC = Topic(id="42", question="Does metformin cause lactic acidosis?", narrative="Patient with CKD stage 3.")


def test_reformulator_makes_three_queries_and_traces(tmp_path, scripted_llm):
    llm = scripted_llm(["Here you go:\n1. Metformin-associated lactic acidosis incidence\n"
                        "2. Can my diabetes pill make acid build up in my blood?\n"
                        "3. Does metformin cause lactic acidosis?\n4. extra"])
    gen = LLMReformulator(llm)
    assert isinstance(gen, QueryGenerator)
    with trace_to(tmp_path / "trace.jsonl"):
        queries = gen.generate(TOPIC)
    # the third line repeats the question and is dropped; the fourth is past the fixed rule
    assert queries == [
        Query("reformulation-1", "Metformin-associated lactic acidosis incidence", "reformulation"),
        Query("reformulation-2", "Can my diabetes pill make acid build up in my blood?", "reformulation"),
    ]
    assert llm.prompts[0][-1]["content"].endswith("Question: Does metformin cause lactic acidosis?")
    (row,) = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert (row["topic_id"], row["stage"], row["backend"]) == ("42", "reformulation", "scripted")


def test_reformulator_with_narrative_and_limit(scripted_llm):
    llm = scripted_llm(["1. a\n2. b\n3. c"])
    queries = LLMReformulator(llm, n=2, use_narrative=True).generate(TOPIC)
    assert [q.text for q in queries] == ["a", "b"]
    assert "Background: Patient with CKD stage 3." in llm.prompts[0][-1]["content"]
    with pytest.raises(ValueError, match="use 1 to 3"):
        LLMReformulator(llm, n=4)


def test_decomposer_reads_json_list(scripted_llm):
    llm = scripted_llm(['```json\n["metformin lactic acidosis", "metformin CKD", "lactate metformin",'
                        ' "Metformin CKD", "biguanide acidosis", "renal function metformin"]\n```'])
    gen = LLMDecomposer(llm, max_queries=4)
    assert isinstance(gen, QueryGenerator)
    assert gen.generate(TOPIC) == [
        Query("decomposition-1", "metformin lactic acidosis", "decomposition"),
        Query("decomposition-2", "metformin CKD", "decomposition"),
        Query("decomposition-3", "lactate metformin", "decomposition"),
        Query("decomposition-4", "biguanide acidosis", "decomposition"),
    ]


def test_unreadable_answer_gives_no_queries(scripted_llm, caplog):
    assert LLMDecomposer(scripted_llm(["   "])).generate(TOPIC) == []
    assert LLMReformulator(scripted_llm(["I am not able to do that."])).generate(TOPIC) == []
    assert "no reformulation other than the question" in caplog.text
