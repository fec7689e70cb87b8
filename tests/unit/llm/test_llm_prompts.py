"""Prompt files and the fixed-rule parsers, on messy real-looking model outputs plus property tests."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medcite.errors import ConfigError
from medcite.llm.prompts import PROMPT_NAMES, load_prompt, placeholders, prompt_names, render
from medcite.llm.reply_parsers import (
    parse_condensation,
    parse_decomposition,
    parse_first_hop,
    parse_hop_kind,
    parse_next_hops,
    parse_permutation,
    parse_reformulations,
    parse_short_answer,
    parse_summary,
)

# -- prompt files ------------------------------------------------------------------------------------------


def test_every_prompt_loads_with_its_placeholders():
    expected = {
        "reformulate": {"question"},
        "decompose": {"question"},
        "keyword_rewrite": {"question"},
        "summarize": {"question", "title", "abstract"},
        "generate": {"question", "evidence", "max_words"},
        "generate_topic": {"topic", "narrative", "question", "reformulations", "evidence", "min_sentences",
                           "max_sentences", "max_words"},
        "condense": {"question", "answer", "max_words"},
        "listwise_rerank": {"question", "num", "passages"},
        "stance": {"statement", "title", "abstract"},
        "stance_queries": {"persona", "sentence"},
        "stance_rewrite_support": {"question", "sentence"},
        "stance_rewrite_contradict": {"question", "sentence"},
        "rocchio_clean": {"query", "expansion"},
        "sufficiency": {"question", "evidence"},
        "answer_first": {"question", "persona", "max_words"},
        "hop_classify": {"question"},
        "hop_first": {"question"},
        "hop_next": {"question", "asked", "evidence", "max_subquestions"},
        "hop_short_answer": {"question", "evidence"},
    }
    assert set(PROMPT_NAMES) == set(expected) and set(expected) <= set(prompt_names())
    for name, names in expected.items():
        messages = load_prompt(name)
        assert [m["role"] for m in messages] == ["system", "user"]
        assert placeholders(name) == names, name
        assert not any(m["content"].startswith("#") for m in messages)  # comments stripped


def test_render_fills_placeholders_and_leaves_json_braces():
    messages = render("decompose", question="Do statins cause {myopathy}?")
    user = messages[-1]["content"]
    assert user.endswith("Question: Do statins cause {myopathy}?")  # values are not re-expanded
    assert '["statin myopathy incidence", "statin muscle pain risk factors"]' in user
    assert "{question}" not in user


def test_render_names_missing_values():
    with pytest.raises(ConfigError, match=r"\['abstract', 'title'\]"):
        render("summarize", question="q")


def test_prompt_directory_override(tmp_path):
    (tmp_path / "reformulate.txt").write_text("# mine\n[user]\nQ={question}\n[assistant]\n1. x\n")
    assert render("reformulate", tmp_path, question="why") == [
        {"role": "user", "content": "Q=why"}, {"role": "assistant", "content": "1. x"}]
    (tmp_path / "decompose.txt").write_text("text before any role\n[user]\nx\n")
    with pytest.raises(ConfigError, match="before its first"):
        load_prompt("decompose", tmp_path)
    with pytest.raises(ConfigError, match="unknown prompt"):
        load_prompt("nope")


# -- reformulations ----------------------------------------------------------------------------------------

CLEAN = """1. What is the efficacy of metformin in glycemic control for type 2 diabetes mellitus?
2. Does metformin help lower my blood sugar if I have diabetes?
3. Metformin gastrointestinal side effects"""


@pytest.mark.parametrize(("raw", "expected"), [
    (CLEAN, ["What is the efficacy of metformin in glycemic control for type 2 diabetes mellitus?",
             "Does metformin help lower my blood sugar if I have diabetes?",
             "Metformin gastrointestinal side effects"]),
    # preamble, bold labels, quotes, a 4th item and a repeat
    ("Sure! Here are three reformulations:\n\n1. **Formal clinical:** \"Efficacy of metformin in T2DM\"\n"
     "2. **Patient-focused:** Will metformin help my diabetes?\n3. Aspect: metformin dosage\n"
     "4. metformin cost\n1. Efficacy of metformin in T2DM",
     ["Efficacy of metformin in T2DM", "Will metformin help my diabetes?", "metformin dosage"]),
    # a label alone on the numbered line, the query on the next line
    ("1. Formal clinical version:\n   Anticoagulation in atrial fibrillation\n2. Patient-focused:\n"
     "   Blood thinners for irregular heartbeat\n3. Stroke risk with warfarin",
     ["Anticoagulation in atrial fibrillation", "Blood thinners for irregular heartbeat",
      "Stroke risk with warfarin"]),
    # duplicates differing only in case and spacing are one query
    ("1. Vitamin D and fractures\n2. vitamin  d and FRACTURES\n3. Vitamin D falls elderly",
     ["Vitamin D and fractures", "Vitamin D falls elderly"]),
    # numbers that are not list markers, bullets and 1) are ignored by the fixed rules
    ("1.5 mg/kg dosing\n- bullet query\n1) paren query\n2. real query", ["real query"]),
    ("```\n1. fenced query\n```", ["fenced query"]),
    # a colon inside a real query is not a label
    ("1. Clinical trials of metformin: efficacy in T2DM\n2. Aspect (renal): metformin in CKD",
     ["Clinical trials of metformin: efficacy in T2DM", "metformin in CKD"]),
    ("I cannot help with that.", []),
    ("", []),
])
def test_parse_reformulations(raw, expected):
    assert parse_reformulations(raw) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=40), st.from_regex(r"\s*[1-5]\.\s?[a-zA-Z *\"]{0,20}", fullmatch=True)),
                max_size=12))
def test_reformulations_never_more_than_three_nor_duplicates(lines):
    out = parse_reformulations("\n".join(lines))
    assert len(out) <= 3
    assert len({o.casefold() for o in out}) == len(out)
    assert all(o and o == o.strip() and "\n" not in o for o in out)


# -- decomposition -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    ('["statin myopathy", "statin muscle pain", "CK elevation statins"]',
     ["statin myopathy", "statin muscle pain", "CK elevation statins"]),
    ('```json\n["a b", "c d"]\n```', ["a b", "c d"]),
    ("Here are the queries: ['HPV vaccine efficacy', 'HPV vaccine safety',]", ["HPV vaccine efficacy",
                                                                                 "HPV vaccine safety"]),
    ("[\u201csmart quotes one\u201d, \u201csmart quotes two\u201d]", ["smart quotes one", "smart quotes two"]),
    ('{"queries": ["q one", "q two"]}', ["q one", "q two"]),
    ('[{"query": "dict one"}, {"query": "dict two"}]', ["dict one", "dict two"]),
    ("[unquoted one, unquoted two]", ["unquoted one", "unquoted two"]),
    ('["alpha one", "beta two", "gam', ["alpha one", "beta two"]),  # cut off by max_tokens
    ("Queries:\n- aspirin primary prevention\n- aspirin bleeding risk\n* Aspirin primary prevention",
     ["aspirin primary prevention", "aspirin bleeding risk"]),
    ("1. zinc common cold\n2) zinc lozenges duration", ["zinc common cold", "zinc lozenges duration"]),
    ("zinc cold, zinc lozenges, zinc dose", ["zinc cold", "zinc lozenges", "zinc dose"]),
    ('["a", "b", "c", "d", "e", "f", "g"]', ["a", "b", "c", "d", "e"]),
    ('["", "  ", "x"]', ["x"]),
    ("", []),
])
def test_parse_decomposition(raw, expected):
    assert parse_decomposition(raw) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_decomposition_bounded_and_unique(raw):
    out = parse_decomposition(raw)
    assert len(out) <= 5 and len({o.casefold() for o in out}) == len(out) and all(out)


# -- summaries and condensation ----------------------------------------------------------------------------

ABSTRACT_SUMMARY = ("In 2,345 adults, metformin lowered HbA1c by 1.2% (95% CI 0.8-1.6; p < 0.001) vs. placebo "
                    "at 500 mg b.i.d. for 12 weeks. Nausea occurred in 12% of patients. No deaths were reported.")


def test_parse_summary_keeps_two_sentences_and_numbers():
    out = parse_summary("Summary: " + ABSTRACT_SUMMARY)
    assert out == ("In 2,345 adults, metformin lowered HbA1c by 1.2% (95% CI 0.8-1.6; p < 0.001) vs. placebo "
                   "at 500 mg b.i.d. for 12 weeks. Nausea occurred in 12% of patients.")
    for number in ("2,345", "1.2%", "95%", "0.8-1.6", "0.001", "500", "12%"):
        assert number in out


def test_parse_summary_drops_chatty_first_sentence():
    out = parse_summary("Sure, here is the summary. Zinc shortened colds by 2.25 days. It was safe. More.")
    assert out == "Zinc shortened colds by 2.25 days. It was safe."


def test_parse_summary_preamble_line_fences_and_word_cap():
    raw = "Here is a summary of the abstract:\n```\n" + " ".join(["word"] * 100) + ".\n```"
    out = parse_summary(raw)
    assert len(out.split()) == 80 and out.endswith("word.") and "summary" not in out
    assert parse_summary("") == "" and parse_summary("   \n") == ""


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["Dose 2.5 mg.", "Risk fell 30%.", "HR 0.71 (0.6-0.8)", "in 1,024 adults",
                                 "et al.", "vs.", "word", "\n", "- "]), max_size=60))
def test_summary_bounded_and_numbers_come_from_input(parts):
    raw = " ".join(parts)
    out = parse_summary(raw)
    assert len(out.split()) <= 80
    for number in re.findall(r"\d[\d.,\-()%]*\d|\d", out):
        assert number in raw


def test_parse_condensation_keeps_whole_sentences_with_citations():
    raw = "Condensed answer: Statins reduce LDL [1]. They lower events by 25% [2, 3]. Myopathy is rare [4]."
    assert parse_condensation(raw, max_words=12) == "Statins reduce LDL [1]. They lower events by 25% [2, 3]."
    assert parse_condensation(raw, max_words=3) == "Statins reduce LDL."  # one over-long first sentence is cut
    assert parse_condensation(raw) == raw.removeprefix("Condensed answer: ")


# -- permutations ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "n", "expected"), [
    ("[3] > [1] > [2]", 3, [2, 0, 1]),
    ("The ranking is: [2] > [4] > [1] > [3]", 4, [1, 3, 0, 2]),
    ("[2] > [1]", 4, [1, 0, 2, 3]),  # missing ids appended in original order
    ("[5] > [5] > [1] > [9] > [0] > [2]", 5, [4, 0, 1, 2, 3]),  # repeats and out-of-range ids ignored
    ("2 > 3 > 1", 3, [1, 2, 0]),  # bare numbers when nothing is bracketed
    ("Passage 2 is best, then 1.5 of 3", 3, [1, 2, 0]),  # a decimal is not an id
    ("[ 3 ]>[1]", 3, [2, 0, 1]),
    ("no idea", 3, [0, 1, 2]),
    ("", 0, []),
])
def test_parse_permutation(raw, n, expected):
    assert parse_permutation(raw, n) == expected


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=25),
       st.lists(st.one_of(st.integers(min_value=-3, max_value=40).map(lambda i: f"[{i}]"),
                          st.integers(min_value=0, max_value=10**9).map(str), st.text(max_size=8)), max_size=40))
def test_permutation_is_always_a_permutation_of_the_window(n, parts):
    out = parse_permutation(" > ".join(parts), n)
    assert sorted(out) == list(range(n))


def test_reformulation_asks_for_three_complete_questions():
    """CLaC 2025: formal clinical, patient-focused and one-aspect *questions*, not search queries."""
    user = render("reformulate", question="Do statins lower LDL?")[-1]["content"]
    assert "three different questions" in user and "complete, grammatically correct question" in user
    assert "search quer" not in user
    for kind in ("formal clinical question", "patient-focused question", "one specific aspect"):
        assert kind in user


def test_keyword_rewrite_reads_one_line_past_a_reasoning_block():
    from medcite.llm.reply_parsers import parse_keyword_rewrite

    assert parse_keyword_rewrite("<think>statins... LDL</think>\n\nQuery: \"statin LDL-C hypercholesterolemia\"") == \
        "statin LDL-C hypercholesterolemia"
    assert parse_keyword_rewrite("1. vitamin D fracture\n2. other") == "vitamin D fracture"
    assert parse_keyword_rewrite("<think>only thoughts</think>") == ""


# -- multi-hop (CLaC 2024 MedHopQA) ------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "multi"), [
    ("MULTI-HOP", True), ("multi hop", True), ("SIMPLE", False), ("Simple.", False),
    ("<think>is it simple? no</think>\nMULTI-HOP", True), ("This is a simple question, not multi-hop.", False),
    ("It is multi-hop rather than simple", True), ("I am not sure.", True)])
def test_parse_hop_kind(raw, multi):
    assert parse_hop_kind(raw) is multi


@pytest.mark.parametrize(("raw", "expected"), [
    ("KEY PHRASE: BRCA1\nSUB-QUESTION: What does BRCA1 repair?", ("BRCA1", "What does BRCA1 repair?")),
    ("**Key phrase:** \"the gene of X\"\n**Sub-question:** Which gene causes X?",
     ("the gene of X", "Which gene causes X?")),
    ("Key phrase - statins\n1. Which statins lower LDL?", ("statins", "Which statins lower LDL?")),
    ("I cannot help with that", ("", "")),
    # SmolLM2-135M's answer to hop_first: the key phrase quoted in prose, no sub-question: the key phrase is searched
    ('The key phrase to answer this question is "axonal injury" and the answer is "on my mri brain report."',
     ("axonal injury", "axonal injury")),
])
def test_parse_first_hop(raw, expected):
    assert parse_first_hop(raw) == expected


def test_parse_next_hops_reads_labelled_or_bulleted_questions_and_done():
    raw = ("SUB-QUESTION: What does BRCA1 repair?\nsub-question 2: what does brca1 repair?\n"
           "- Is olaparib a PARP inhibitor?")
    assert parse_next_hops(raw, 3) == ["What does BRCA1 repair?", "Is olaparib a PARP inhibitor?"]
    assert parse_next_hops(raw, 1) == ["What does BRCA1 repair?"]
    assert parse_next_hops("DONE") == [] and parse_next_hops("Done. The evidence answers it.") == []
    assert parse_next_hops("The evidence is clear.") == []
    assert parse_next_hops("SUB-QUESTION: 1. What is axonal injury?\nDONE") == ["What is axonal injury?"]
    long = "SUB-QUESTION: " + " ".join(["word"] * 100) + "?"
    assert len(parse_next_hops(long)[0].split()) == 40


def test_parse_short_answer():
    assert parse_short_answer("Short answer: PARP inhibitors\n\nExplanation: ...") == "PARP inhibitors"
    assert parse_short_answer("<think>hmm</think>\n**Yes**, in adults.") == "Yes, in adults."
    assert parse_short_answer("**Short answer:** olaparib") == "olaparib"
    assert parse_short_answer("") == ""
    assert len(parse_short_answer("Answer: " + "x " * 100).split()) == 30
