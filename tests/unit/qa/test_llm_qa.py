"""The LLM qa backend (DS@GT / PJs-team, BioASQ 13b): JSON read tolerantly, one repair retry, prompt styles,
few-shot examples drawn at random (seeded) or by similarity, exact answers normalised by type, the ideal answer's
word cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.pipeline.context import Context
from medcite.qa.answer_json import (
    AnswerFormatError,
    answer_fields,
    extract_json,
    normalize_entities,
    normalize_ideal,
    normalize_yesno,
)
from medcite.qa.base import Answerer
from medcite.qa.llm_qa import LLMQA, LLMQAConfig
from medcite.types import QAAnswer, Question, Snippet

SNIPPETS = (
    Snippet("111", "BRCA1 and TP53 mutations are frequent in ovarian cancer.", "abstract", 0, "abstract", 55),
    Snippet("222", "Olaparib targets BRCA1-deficient tumours.", "abstract", 10, "abstract", 51),
    Snippet("111", "BRCA1 and TP53 mutations are frequent in ovarian cancer.", "abstract", 0, "abstract", 55),
)
FACTOID = Question("q-fact", "factoid", "Which genes are mutated in ovarian cancer?")
YESNO = Question("q-yes", "yesno", "Is olaparib used in BRCA1-deficient ovarian cancer?")
SUMMARY = Question("q-sum", "summary", "What is olaparib?")
LIST = Question("q-list", "list", "List genes mutated in ovarian cancer.")


def _qa(tmp_path: Path, replies: list[str], examples: list[dict[str, Any]] | None = None,
        **cfg: Any) -> tuple[LLMQA, Any, Context]:
    """An LLMQA built from its config with a context whose default LLM is the `replies` fake."""
    settings = load_settings("offline", ["llm=" + json.dumps({"backend": "replies", "replies": replies})])
    if examples is not None:
        path = tmp_path / "train.json"
        path.write_text(json.dumps({"questions": examples}), encoding="utf-8")
        cfg.setdefault("examples", str(path))
        cfg.setdefault("encoder", {"backend": "hash-bow", "dim": 512})
    cfg.setdefault("shots", 0)
    ctx = Context(settings)
    qa = LLMQA.from_config(LLMQAConfig(**cfg), ctx)
    return qa, ctx.llm(), ctx


def _example(qid: str, qtype: str, body: str, exact: Any = None, ideal: str = "An ideal answer.") -> dict[str, Any]:
    q: dict[str, Any] = {"id": qid, "type": qtype, "body": body, "ideal_answer": [ideal],
                         "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/9"],
                         "snippets": [{"document": "http://www.ncbi.nlm.nih.gov/pubmed/9", "text": f"Snippet of {qid}.",
                                       "beginSection": "abstract", "endSection": "abstract",
                                       "offsetInBeginSection": 0, "offsetInEndSection": 12}]}
    if exact is not None:
        q["exact_answer"] = exact
    return q


# -- reading the JSON ----------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [
    '{"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both."}',
    'Sure! Here is the answer:\n<JSON>{"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both."}</JSON>\nThanks',
    '```json\n{"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both."}\n```',
    'The answer is {"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both."} as the passage says.',
    "{'exact_answer': ['BRCA1', 'TP53'], 'ideal_answer': 'Both.'}",
    "{'exact_answer': ['BRCA1', 'TP53'], 'ideal_answer': 'Both.', 'sure': True, 'note': None}",
    '{"exact_answer": ["BRCA1", "TP53",], "ideal_answer": "Both.",}',
    '{\u201cexact_answer\u201d: [\u201cBRCA1\u201d, \u201cTP53\u201d], \u201cideal_answer\u201d: \u201cBoth.\u201d}',
    '{"answer": {"exact answer": [["BRCA1", "breast cancer 1"], ["TP53"]], "Ideal_Answer": "Both."}}',
    '<json>\n{"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both."}',  # tag never closed
    '{"exact_answer": ["BRCA1", "TP53"], "ideal_answer": "Both [see 1]."} trailing {junk',
])
def test_every_json_variant_reads(raw: str) -> None:
    exact, ideal = answer_fields(extract_json(raw), True, True)
    assert normalize_entities(exact, 5) == ("BRCA1", "TP53")
    assert normalize_ideal(ideal, 200).startswith("Both")


def test_a_bare_list_is_the_exact_answer() -> None:
    assert answer_fields(extract_json('Answer: ["BRCA1", "TP53"]'), True, False)[0] == ["BRCA1", "TP53"]


@pytest.mark.parametrize(("raw", "says"), [
    ("I think the answer is yes.", "no JSON object"),
    ('{"exact_answer": ["BRCA1", "TP5', "never closed"),
    ('{"exact_answer": [BRCA1 TP53]}', "not valid"),
])
def test_unreadable_replies_say_why(raw: str, says: str) -> None:
    with pytest.raises(AnswerFormatError, match=says):
        extract_json(raw)
    with pytest.raises(AnswerFormatError, match='no "ideal_answer" key'):
        answer_fields({"exact_answer": "yes"}, True, True)


# -- normalisation -------------------------------------------------------------------------------------
def test_exact_answers_are_normalised_by_type() -> None:
    assert normalize_yesno("Yes.") == normalize_yesno(True) == normalize_yesno(["YES"]) == "yes"
    assert normalize_yesno("No, it is not.") == normalize_yesno("false") == "no"
    with pytest.raises(AnswerFormatError, match='"yes" or "no"'):
        normalize_yesno("maybe")
    seven = ["- BRCA1", "brca1", "**TP53**", '"PTEN".', ["KRAS", "K-ras"], "", "1. MYC", "ERBB2", "NF1"]
    assert normalize_entities(seven, 5) == ("BRCA1", "TP53", "PTEN", "KRAS", "MYC")
    assert normalize_entities("-20 degrees", 5) == ("-20 degrees",)
    assert len(normalize_entities([f"gene {i}" for i in range(30)], 10)) == 10


def test_the_ideal_answer_is_capped_in_whole_sentences() -> None:
    text = " ".join(f"Sentence number {i} has exactly seven words." for i in range(50))
    capped = normalize_ideal(text, 20)
    assert len(capped.split()) <= 20 and capped.endswith("words.")
    assert len(normalize_ideal("word " * 300, 200).split()) == 200  # one over-long sentence is cut
    with pytest.raises(AnswerFormatError, match="empty"):
        normalize_ideal("  ", 200)


def test_answers_through_the_backend_are_normalised_and_capped(tmp_path: Path) -> None:
    long_ideal = " ".join(f"Olaparib is a PARP inhibitor number {i}." for i in range(80))
    reply = json.dumps({"exact_answer": [f"gene {i}" for i in range(9)], "ideal_answer": long_ideal})
    qa, llm, ctx = _qa(tmp_path, [reply], ideal_max_words=30)
    with ctx:
        assert isinstance(qa, Answerer)
        got = qa.answer(FACTOID, SNIPPETS)
        assert got.exact == ("gene 0", "gene 1", "gene 2", "gene 3", "gene 4")
        assert len(got.ideal.split()) <= 30 and got.ideal.endswith(".")
        assert [s.pmid for s in got.sources] == ["111", "222"]  # the duplicate snippet is shown once
        summary = qa.answer(SUMMARY, SNIPPETS)
        assert summary.exact is None


# -- the repair retry ----------------------------------------------------------------------------------
def test_one_repair_retry_carries_the_parse_error(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ["Yes, olaparib is used.", '{"exact_answer": "yes", "ideal_answer": "Yes, it is."}'])
    with ctx:
        got = qa.answer(YESNO, SNIPPETS)
    assert got.exact == "yes" and got.ideal == "Yes, it is."
    assert len(llm.prompts) == 2
    retry = llm.prompts[1]
    assert retry[-2] == {"role": "assistant", "content": "Yes, olaparib is used."}
    assert "no JSON object" in retry[-1]["content"] and '"exact_answer": "yes"' in retry[-1]["content"]
    assert any("repaired after: the answer holds no JSON object" in n for n in got.notes)


def test_after_one_failed_repair_the_fallback_is_recorded(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ["no json", '{"exact_answer": "perhaps", "ideal_answer": "Unclear."}'])
    with ctx:
        got = qa.answer(YESNO, SNIPPETS)
    assert len(llm.prompts) == 2  # one repair, never more
    assert got.exact == "yes"
    assert got.ideal.startswith("BRCA1 and TP53 mutations")  # the snippets' own sentences
    notes = " | ".join(got.notes)
    assert "unreadable" in notes and '"yes" or "no"' in notes
    assert "fallback exact answer: 'yes'" in notes and "fallback ideal answer" in notes


def test_without_repair_a_bad_reply_falls_back_at_once(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ["no json"], repair=False)
    with ctx:
        got = qa.answer(LIST, SNIPPETS)
    assert len(llm.prompts) == 1 and got.exact == ()


# -- prompt styles -------------------------------------------------------------------------------------
def _user_text(prompt: list[dict[str, str]]) -> str:
    return prompt[-1]["content"]


def test_style_1_asks_exact_and_ideal_in_one_json(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'], style=1)
    with ctx:
        qa.answer(FACTOID, SNIPPETS)
    assert len(llm.prompts) == 1
    text = _user_text(llm.prompts[0])
    assert '{"exact_answer": ["entity 1", "entity 2"], "ideal_answer": "one paragraph"}' in text
    assert "Passage: BRCA1 and TP53 mutations" in text and "\nQuestion: Which genes are mutated" in text
    assert "at most 5 entity names" in text and "Hint" not in text
    assert llm.prompts[0][0]["role"] == "system"


def test_style_2_feeds_the_system_exact_answer_into_the_ideal_prompt(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": ["BRCA1", "TP53"]}', '{"ideal_answer": "BRCA1 and TP53."}'],
                       style=2)
    with ctx:
        got = qa.answer(FACTOID, SNIPPETS)
    assert got.exact == ("BRCA1", "TP53") and got.ideal == "BRCA1 and TP53."
    first, second = _user_text(llm.prompts[0]), _user_text(llm.prompts[1])
    assert '{"exact_answer": ["entity 1", "entity 2"]}' in first and "ideal_answer" not in first
    assert "Question: Which genes are mutated in ovarian cancer? (Hint: short answer is BRCA1, TP53)" in second
    assert '{"ideal_answer": "one paragraph"}' in second and "exact_answer" not in second
    assert "synonyms" not in first and "direct phrases" not in second  # template 1


def test_style_3_uses_the_stricter_formatting_template(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": ["BRCA1"]}', '{"ideal_answer": "BRCA1."}'], style=3)
    with ctx:
        qa.answer(FACTOID, SNIPPETS)
        qa.answer(LIST, SNIPPETS)
    fact_exact, fact_ideal, list_exact = (_user_text(p) for p in llm.prompts[:3])
    # answer formatting template 2 as 004 Fig. 5 prints it (checked line by line in tests/unit/presets)
    assert "Do not include synonyms or duplicate meanings." in fact_exact
    assert "merge them into a single range or compact expression if appropriate" in fact_exact
    assert "(Hint: short answer is BRCA1)" in fact_ideal
    assert "Prefer answers of only combining direct phrases or sentences from the Passage." in fact_ideal
    assert "Note that all phrases, even not complete, are related to the question." in list_exact
    assert "most direct entry cut from the Passage that -accurately answer the question" in list_exact


def test_summary_questions_get_the_ideal_prompt_only(tmp_path: Path) -> None:
    for style in (1, 2, 3):
        qa, llm, ctx = _qa(tmp_path, ['{"ideal_answer": "A PARP inhibitor."}'], style=style)
        with ctx:
            got = qa.answer(SUMMARY, SNIPPETS)
        assert len(llm.prompts) == 1 and got.exact is None and got.ideal == "A PARP inhibitor."
        assert '{"ideal_answer": "one paragraph"}' in _user_text(llm.prompts[0])
        assert "Hint" not in _user_text(llm.prompts[0])


# -- few-shot examples ---------------------------------------------------------------------------------
TRAINING = [
    _example(FACTOID.id, "factoid", FACTOID.body, [["BRCA1"]]),                       # the question itself
    _example("copy", "factoid", "  which GENES are mutated in ovarian cancer? ", [["X"]]),  # the same text
    _example("near", "factoid", "Which genes are mutated in breast cancer?", [["BRCA2"], ["PALB2"]]),
    _example("mid", "factoid", "Which genes are mutated in lung tumours?", [["EGFR"]]),
    _example("far", "factoid", "What is the half-life of aspirin?", [["20 minutes"]]),
    _example("other-type", "yesno", "Which genes are mutated in ovarian cancer cells?", "yes"),
    _example("no-answer", "factoid", "Which genes are mutated in ovarian tumours?"),  # no exact answer: unusable
    _example("list-ex", "list", "List genes mutated in breast cancer.", [["BRCA2"], ["PALB2"], ["CHEK2"]]),
]


def test_few_shot_picks_the_most_similar_questions_never_the_question_itself(tmp_path: Path) -> None:
    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    qa, llm, ctx = _qa(tmp_path, [reply], examples=TRAINING, shots=2, style=1)
    with ctx:
        got = qa.answer(FACTOID, SNIPPETS)
    prompt = llm.prompts[0]
    roles = [m["role"] for m in prompt]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Which genes are mutated in breast cancer?" in prompt[1]["content"]   # most similar first
    assert "Which genes are mutated in lung tumours?" in prompt[3]["content"]
    assert "Snippet of near." in prompt[1]["content"]
    assert json.loads(prompt[2]["content"]) == {"exact_answer": ["BRCA2", "PALB2"], "ideal_answer": "An ideal answer."}
    shown = " ".join(m["content"] for m in prompt[1:-1])
    assert "ovarian" not in shown  # neither the question, its copy, the other type nor the unusable one
    assert "examples near, mid" in got.notes[0]


def _drawn(qa: LLMQA, question: Question, n: int) -> list[str]:
    assert qa.picker is not None
    return [e.id for e in qa.picker.pick(question, n)]


def test_random_draw_is_seeded_by_the_question_and_never_shows_the_question(tmp_path: Path) -> None:
    """DS@GT: 'The examples were drawn from the training set' (004 §3.3): draw=random, of the question's type."""
    training = TRAINING + [_example(f"f{i}", "factoid", f"Which enzyme number {i} is it?", [[f"E{i}"]])
                           for i in range(12)]
    usable = {"near", "mid", "far", *(f"f{i}" for i in range(12))}  # factoid, answered, not the question
    qa, _, ctx = _qa(tmp_path, ["{}"], examples=training, shots=10, draw="random")
    with ctx:
        ten = _drawn(qa, FACTOID, 10)
        assert len(ten) == len(set(ten)) == 10 and set(ten) <= usable
        assert _drawn(qa, FACTOID, 10) == ten  # the same question, the same draw
        draws = {tuple(_drawn(qa, Question(f"q{i}", "factoid", f"Question {i}?"), 1)) for i in range(20)}
        assert len(draws) > 3  # another question, another draw
        other = Question("q-other", "factoid", "Which kinase is it?")
        assert set(_drawn(qa, other, 30)) == usable | {FACTOID.id, "copy"}  # at most every usable one
        assert _drawn(qa, LIST, 5) == ["list-ex"]
    again, _, ctx = _qa(tmp_path, ["{}"], examples=list(reversed(training)), shots=10, draw="random")
    with ctx:
        assert _drawn(again, FACTOID, 10) == ten  # whatever the order of the training file
    seeded, _, ctx = _qa(tmp_path, ["{}"], examples=training, shots=10, draw="random", draw_seed=14)
    with ctx:
        assert _drawn(seeded, FACTOID, 10) != ten
    # no encoder is loaded for a random draw
    hub = "BAAI/bge-large-en"
    assert LLMQAConfig(shots=1, draw="random", examples="x.json", encoder=hub).model_names() == []
    assert LLMQAConfig(shots=1, examples="x.json", encoder=hub).model_names() == [hub]


def test_the_drawn_example_ids_are_in_the_answer_and_the_run_directory(tmp_path: Path) -> None:
    from medcite.tasks.bioasq_task import _answer_of, _answer_row

    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    qa, llm, ctx = _qa(tmp_path, [reply], examples=TRAINING, shots=2, style=1, draw="random")
    with ctx:
        got = qa.answer(FACTOID, SNIPPETS)
    assert len(got.examples) == 2 and set(got.examples) <= {"near", "mid", "far"}
    shown = [m["content"] for m in llm.prompts[0] if m["role"] == "user"][:-1]
    assert [next(e for e in got.examples if f"Snippet of {e}." in text) for text in shown] == list(got.examples)
    row = _answer_row(got)
    assert row["examples"] == list(got.examples) and _answer_of(FACTOID.id, row).examples == got.examples
    assert "examples" not in _answer_row(QAAnswer(FACTOID.id, "no", "No."))  # zero-shot rows stay as they were


def test_one_shot_list_examples_show_one_gold_item_in_style_1_and_all_in_style_2(tmp_path: Path) -> None:
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": ["BRCA1"], "ideal_answer": "x."}'], examples=TRAINING,
                       shots=1, style=1)
    with ctx:
        qa.answer(LIST, SNIPPETS)
    assert json.loads(llm.prompts[0][2]["content"])["exact_answer"] == ["BRCA2"]
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": ["BRCA1"]}', '{"ideal_answer": "x."}'], examples=TRAINING,
                       shots=1, style=2)
    with ctx:
        qa.answer(LIST, SNIPPETS)
    assert json.loads(llm.prompts[0][2]["content"])["exact_answer"] == ["BRCA2", "PALB2", "CHEK2"]
    # the ideal-answer example carries its own gold exact answer as the hint
    assert "(Hint: short answer is BRCA2, PALB2, CHEK2)" in llm.prompts[1][1]["content"]


def test_few_shot_needs_a_training_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="qa.examples"):
        _qa(tmp_path, ["{}"], shots=1)
    qa, llm, ctx = _qa(tmp_path, ['{"exact_answer": "no", "ideal_answer": "No."}'], shots=0)
    with ctx:
        assert qa.answer(YESNO, SNIPPETS).exact == "no"
    assert [m["role"] for m in llm.prompts[0]] == ["system", "user"]


def test_the_bioasq_prompt_files_load_with_their_placeholders() -> None:
    from medcite.llm.prompts import load_prompt, placeholders

    assert [m["role"] for m in load_prompt("bioasq_answer")] == ["system", "user"]
    assert placeholders("bioasq_answer") == {"passage", "question", "hint", "rules", "json"}
    assert placeholders("bioasq_repair") == {"error", "shape"}
    for name in ("factoid", "factoid_strict", "list", "list_strict"):
        assert placeholders(f"bioasq_rules_{name}") == {"max_items"}
    assert placeholders("bioasq_rules_ideal") == placeholders("bioasq_rules_ideal_strict") == {"max_words"}
    assert placeholders("bioasq_rules_yesno") == set()


def test_a_name_loses_its_full_stop_and_a_sentence_answer_keeps_it() -> None:
    """Issue 23: with gold answers played back, stripping every trailing "." cost half the factoid strict
    accuracy (BioASQ writes 35 of its 40 names that end in "." as sentences)."""
    assert normalize_entities(["Daratumumab.", "msDNA is a complex of DNA, RNA, and protein."], 5) == (
        "Daratumumab", "msDNA is a complex of DNA, RNA, and protein.")
    assert normalize_entities(["hearing loss.;"], 5) == ("hearing loss",)


def test_a_phase_b_run_records_each_questions_drawn_examples(tmp_path: Path) -> None:
    """A DS@GT Phase B preset through the CLI: the ids of the training questions each question was shown are in the
    run directory (bioasq.jsonl), the same on a second run into a fresh directory (seeded)."""
    from click.testing import CliRunner

    from medcite.cli.main import cli

    training = tmp_path / "train.json"
    training.write_text(json.dumps({"questions": TRAINING}), encoding="utf-8")
    questions = tmp_path / "q.json"
    snippet = {"document": "http://www.ncbi.nlm.nih.gov/pubmed/1", "text": "BRCA1 is mutated.",
               "beginSection": "abstract", "endSection": "abstract", "offsetInBeginSection": 0,
               "offsetInEndSection": 17}
    questions.write_text(json.dumps({"questions": [
        {"id": "b1", "type": "factoid", "body": "Which gene is mutated in ovarian cancer?", "snippets": [snippet]},
        {"id": "b2", "type": "list", "body": "List genes mutated in ovarian cancer.", "snippets": [snippet]}]}))
    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1 is mutated."}'
    llm = "llm=" + json.dumps({"backend": "replies", "replies": [reply]})
    drawn = []
    for run in ("r1", "r2"):
        result = CliRunner().invoke(cli, [
            "-q", "bioasq", "phase-b", "--questions", str(questions), "--preset", "dsgt-b-gpt4-style1",
            "--set", f"qa.examples={training}", "--set", llm,
            "--output", str(tmp_path / f"{run}.json"), "--run-dir", str(tmp_path / run)])
        assert result.exit_code == 0, result.output
        rows = [json.loads(x) for x in (tmp_path / run / "bioasq.jsonl").read_text().splitlines() if x.strip()]
        drawn.append({r["id"]: r["examples"] for r in rows})
    assert drawn[0] == drawn[1]
    assert len(drawn[0]["b1"]) == 1 and drawn[0]["b1"][0] in {"q-fact", "copy", "near", "mid", "far"}
    assert drawn[0]["b2"] == ["list-ex"]


# -- issue 43: the passage as the papers give it -------------------------------------------------------
MANY = tuple(Snippet(str(100 + i), f"Snippet number {i} about BRCA1 in ovarian cancer.", "abstract", 0, "abstract",
                     50) for i in range(30))


def _passage(prompt: list[dict[str, str]]) -> list[str]:
    text = _user_text(prompt)
    body = text.split("Passage: ", 1)[1].split("\nQuestion: ", 1)[0]
    return body.split("\n")


def test_all_snippets_in_the_passage_when_passage_snippets_is_none(tmp_path: Path) -> None:
    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    qa, llm, ctx = _qa(tmp_path, [reply, reply], passage_snippets=None)
    capped, llm_capped, ctx_capped = _qa(tmp_path, [reply], passage_snippets=20)
    with ctx, ctx_capped:
        got = qa.answer(FACTOID, MANY)
        capped.answer(FACTOID, MANY)
    assert len(_passage(llm.prompts[0])) == 30 and len(got.sources) == 30  # DS@GT 004 Fig. 4: "{All snippets}"
    assert len(_passage(llm_capped.prompts[0])) == 20  # medcite's cap, where a preset sets one


def test_a_repeated_snippet_stays_when_dedupe_is_off(tmp_path: Path) -> None:
    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    qa, llm, ctx = _qa(tmp_path, [reply], dedupe_snippets=False, passage_snippets=None)
    with ctx:
        got = qa.answer(FACTOID, SNIPPETS)
    assert len(_passage(llm.prompts[0])) == 3 and [s.pmid for s in got.sources] == ["111", "222", "111"]


def test_the_context_is_trimmed_to_the_token_limit_and_the_trim_noted(tmp_path: Path, caplog: Any) -> None:
    import logging

    from medcite.qa.llm_qa import estimate_tokens

    reply = '{"exact_answer": ["BRCA1"], "ideal_answer": "BRCA1."}'
    qa, llm, ctx = _qa(tmp_path, [reply, reply], passage_snippets=None, context_tokens=900, max_tokens=256,
                       prompt="pjs")
    with ctx, caplog.at_level(logging.INFO, logger="medcite.qa.llm_qa"):
        got = qa.answer(FACTOID, MANY)
        small = qa.answer(FACTOID, MANY[:2])
    kept = len(got.sources)
    assert 0 < kept < 30 and estimate_tokens(llm.prompts[0]) + 256 <= 900
    assert [s.pmid for s in got.sources] == [s.pmid for s in MANY[:kept]]  # the first snippets are kept
    assert any(f"context trimmed to {kept} of 30 snippets to fit 900 tokens" in n for n in got.notes)
    assert "context trimmed" in caplog.text and FACTOID.id in caplog.text
    assert len(small.sources) == 2 and not any("trimmed" in n for n in small.notes)  # it fitted: untouched


def test_the_query_template_is_004_fig4_and_the_json_request_an_option(tmp_path: Path) -> None:
    reply = '{"exact_answer": "yes", "ideal_answer": "Yes."}'
    qa, llm, ctx = _qa(tmp_path, [reply, "Yes.", "Olaparib is a PARP inhibitor."], style=2)
    plain, llm_plain, ctx_plain = _qa(tmp_path, ["Yes.", "Olaparib is a PARP inhibitor."], style=2,
                                      json_instruction=False)
    with ctx, ctx_plain:
        qa.answer(YESNO, SNIPPETS)
        got = plain.answer(YESNO, SNIPPETS)
    with_json, without = _user_text(llm.prompts[0]), _user_text(llm_plain.prompts[0])
    fig4 = ("Passage: BRCA1 and TP53 mutations are frequent in ovarian cancer.\nOlaparib targets BRCA1-deficient "
            "tumours.\nQuestion: Is olaparib used in BRCA1-deficient ovarian cancer?\n"
            "Answer this question in \u201cyes\u201d or \u201cno\u201d.")
    assert without == fig4  # 004 Fig. 4, Query Template 1, with its printed yes/no line
    assert with_json == fig4 + '\nReturn only a JSON object of this form, with no other text: {"exact_answer": "yes"}'
    assert got.exact == "yes" and got.ideal == "Olaparib is a PARP inhibitor."  # plain replies read as written
    assert not any("fallback" in n for n in got.notes)


def test_plain_replies_read_by_type() -> None:
    from medcite.qa.answer_json import plain_answer

    assert plain_answer("No, it is not.", "yesno", "exact") == "No, it is not."
    assert plain_answer("BRCA1, TP53 (p53, tumour protein); PTEN", "list", "exact") == [
        "BRCA1", "TP53 (p53, tumour protein)", "PTEN"]
    assert plain_answer("The genes are:\n- BRCA1\n- TP53", "list", "exact") == ["- BRCA1", "- TP53"]
    assert plain_answer("It inhibits PARP.", "summary", "ideal") == {"ideal_answer": "It inhibits PARP."}
    with pytest.raises(AnswerFormatError, match="empty"):
        plain_answer("  ", "factoid", "exact")
