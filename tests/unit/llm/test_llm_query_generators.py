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
    assert LLMDecomposer(scripted_llm(["   ", ""])).generate(TOPIC) == []
    assert LLMReformulator(scripted_llm(["I am not able to do that."] * 2)).generate(TOPIC) == []
    assert "no reformulation other than the question" in caplog.text


# -- the one format reminder (issue 32) ----------------------------------------------------------------------
PLAIN = "I cannot help with that."


def _reminded(prompt: list[dict[str, str]]) -> bool:
    return len(prompt) >= 2 and prompt[-2]["role"] == "assistant" and \
        prompt[-1]["content"].startswith("Your answer could not be read:")


def test_a_plain_line_decomposition_is_asked_again_once_and_its_list_is_read(scripted_llm, tmp_path):
    llm = scripted_llm([PLAIN, '["metformin lactic acidosis", "metformin CKD"]'])
    gen = LLMDecomposer(llm)
    with trace_to(tmp_path / "trace.jsonl"):
        queries = gen.generate(TOPIC)
    assert [q.text for q in queries] == ["metformin lactic acidosis", "metformin CKD"]
    assert len(llm.prompts) == 2 and not _reminded(llm.prompts[0]) and _reminded(llm.prompts[1])
    first, retry = llm.prompts
    assert retry[: len(first)] == first and retry[len(first)] == {"role": "assistant", "content": PLAIN}
    assert "JSON list of strings only" in retry[-1]["content"]  # the form its prompt asks for
    assert gen.notes and "second reply was read" in gen.notes[0]
    rows = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert [r.get("format_reminder") for r in rows if "messages" in r] == [None, True]


def test_plain_lines_twice_leave_the_decomposition_out_after_exactly_one_reminder(scripted_llm):
    llm = scripted_llm([PLAIN, TOPIC.question, "never asked"])
    gen = LLMDecomposer(llm)
    assert gen.generate(TOPIC) == []  # the question given back as a plain line is no sub-query list either
    assert len(llm.prompts) == 2 and _reminded(llm.prompts[1])
    assert gen.notes and "left out" in gen.notes[0]
    # a list at once: no reminder, no note
    llm = scripted_llm(['["a b"]'])
    gen = LLMDecomposer(llm)
    assert [q.text for q in gen.generate(TOPIC)] == ["a b"] and len(llm.prompts) == 1 and gen.notes == []


def test_an_empty_keyword_rewrite_is_asked_again_but_the_question_given_back_is_kept(scripted_llm):
    from medcite.retrieve.llm_queries import LLMKeywordRewriter

    llm = scripted_llm(["", "metformin lactic acidosis"])
    assert LLMKeywordRewriter(llm).generate(TOPIC) == [Query("keyword_rewrite-1", "metformin lactic acidosis",
                                                             "keyword_rewrite")]
    assert len(llm.prompts) == 2 and _reminded(llm.prompts[1])
    assert "one keyword query on one line" in llm.prompts[1][-1]["content"]
    llm = scripted_llm([TOPIC.question])  # a short question is often its own keyword query: read, not retried
    assert [q.text for q in LLMKeywordRewriter(llm).generate(TOPIC)] == [TOPIC.question]
    assert len(llm.prompts) == 1
    llm = scripted_llm(["  ", "\n"])
    gen = LLMKeywordRewriter(llm)
    assert gen.generate(TOPIC) == [] and len(llm.prompts) == 2 and "left out" in gen.notes[0]


def test_a_reformulation_without_numbered_lines_is_asked_again_once(scripted_llm):
    llm = scripted_llm([PLAIN, "1. metformin lactic acidosis risk\n2. can my diabetes pill hurt me"])
    queries = LLMReformulator(llm).generate(TOPIC)
    assert [q.text for q in queries] == ["metformin lactic acidosis risk", "can my diabetes pill hurt me"]
    assert len(llm.prompts) == 2 and '"1.", "2." and "3."' in llm.prompts[1][-1]["content"]


def test_stance_queries_and_rewrites_are_asked_again_for_the_missing_form(scripted_llm):
    from medcite.retrieve.llm_queries import LLMStanceQueries

    llm = scripted_llm(["SUPPORT: metformin acidosis", "SUPPORT: metformin acidosis\nCONTRADICT: metformin safe"])
    queries = LLMStanceQueries(llm).generate(TOPIC)
    assert [(q.stage, q.text) for q in queries] == [("support", "metformin acidosis"),
                                                    ("contradict", "metformin safe")]
    assert len(llm.prompts) == 2 and "CONTRADICT: <query>" in llm.prompts[1][-1]["content"]
    # one side per call: only the side whose reply was empty is asked again
    def by_side(messages: list[dict[str, str]]) -> str:
        if _reminded(messages):
            return "Metformin is safe in CKD."
        return "" if "CONTRADICT" in messages[-1]["content"] else "Metformin causes lactic acidosis."

    llm = scripted_llm(by_side)
    gen = LLMStanceQueries(llm, prompt="stance_rewrites")
    queries = gen.generate(Topic("s1", "Metformin causes lactic acidosis.", topic=TOPIC.question))
    assert [(q.stage, q.text) for q in queries] == [("support", "Metformin causes lactic acidosis."),
                                                    ("contradict", "Metformin is safe in CKD.")]
    assert [_reminded(p) for p in llm.prompts] == [False, False, True]
    assert len(gen.notes) == 1 and "(contradict)" in gen.notes[0]
