"""The oracle recognises each request by the prompt file medcite rendered (issue 23), never by keywords."""

from __future__ import annotations

import pytest

from medcite.llm.prompts import placeholders, prompt_names, render
from oracle.templates import recognise

# said after an answer, about the prompt before it
FEEDBACK = ("retry", "retry_plain", "bioasq_repair", "format_reminder")


@pytest.mark.parametrize("name", [n for n in prompt_names() if n not in FEEDBACK])
def test_every_prompt_file_is_recognised_as_itself_with_its_values(name: str) -> None:
    # values without spaces or hyphens: prompts write "{title} {abstract}" and "{min_sentences}-{max_sentences}"
    values = {p: f"<{p}_{n}>" for n, p in enumerate(sorted(placeholders(name)))}
    if "hint" in values:
        values["hint"] = " (Hint: short answer is yes)"
    if "json" in values:  # medcite's JSON request (bioasq_json) after a new line, or nothing
        values["json"] = "\n" + render("bioasq_json", shape="{}")[0]["content"]
    found = recognise(render(name, **values))
    assert found is not None and found.name == name
    assert found.values == values


def test_a_retry_keeps_its_original_prompt_and_a_few_shot_example_is_passed_over() -> None:
    first = render("generate", question="Do statins lower LDL?", evidence="[1] (1) Statins lower LDL.", max_words=250)
    retry = render("retry", violations="- sentence 1 has no citation", max_words=250, n_evidence=1)
    found = recognise([*first, {"role": "assistant", "content": "Statins lower LDL."}, *retry])
    assert found is not None and found.name == "generate" and found.retry is not None
    assert found.values["question"] == "Do statins lower LDL?"
    assert found.retry == {"violations": "- sentence 1 has no citation", "max_words": "250", "n_evidence": "1"}
    shot = render("bioasq_answer", passage="p1", question="Example?", hint="", rules="r", json="")
    real = render("bioasq_answer", passage="p2", question="Real?", hint="", rules="r", json="")
    found = recognise([*shot, {"role": "assistant", "content": "{}"}, *[m for m in real if m["role"] == "user"]])
    assert found is not None and found.values["question"] == "Real?"


def test_text_no_prompt_file_renders_is_not_recognised() -> None:
    assert recognise([{"role": "user", "content": "Tell me about statins."}]) is None


@pytest.mark.parametrize("framing", ["expert", "emotionprompt"])
def test_a_dalhousie_framing_is_taken_off_and_reported(framing: str) -> None:
    from medcite.llm.personas import frame

    messages = render("stance", statement="Statins lower LDL.", title="T", abstract="Statins lowered LDL.")
    found = recognise(frame(messages, framing))
    assert found is not None and found.name == "stance" and found.framing == framing
    assert found.values["statement"] == "Statins lower LDL."
    assert recognise(messages) is not None and recognise(messages).framing is None
    # a stimulus in the middle of the text is not a framing: the message is not any prompt file
    tampered = [dict(m) for m in messages]
    tampered[-1]["content"] = "This is very important to my career.\n\n" + tampered[-1]["content"]
    assert recognise(tampered) is None


def test_a_format_reminder_keeps_its_prompt_and_the_oracle_answers_that_prompt() -> None:
    """Issue 32: the one format reminder of a query prompt is recognised as a retry of it (framed or not), and the
    oracle answers the retry as a capable model would: with the prompt's own answer, in its form."""
    from medcite.llm.format_retry import reminder
    from medcite.llm.personas import frame
    from medcite.llm.reply_parsers import decomposition_is_list, parse_decomposition, parse_stance_queries
    from medcite.types import Question
    from oracle.gold import Gold
    from oracle.server import PLAIN_LINE, OracleServer

    gold = Gold()
    gold.add_questions([Question("q1", "summary", "Describe ANTISOMA",
                                 ideal_answers=("ANTISOMA is a tumour antigen of melanoma cells.",))])
    asked = render("decompose", question="Describe ANTISOMA")
    retry = reminder(asked, PLAIN_LINE, problem="it is not a list of keyword queries", form="as a JSON list")
    found = recognise(retry)
    assert found is not None and found.name == "decompose" and found.values == {"question": "Describe ANTISOMA"}
    assert found.retry == {"problem": "it is not a list of keyword queries", "form": "as a JSON list"}
    status, text, entry = OracleServer(gold).reply(retry)
    assert status == 200 and entry.retry and entry.topic == "q1"
    assert decomposition_is_list(text) and "ANTISOMA" in parse_decomposition(text)[0]
    status, text, _ = OracleServer(gold, degraded="plain").reply(retry)  # a weak model stays weak
    assert status == 200 and text in (PLAIN_LINE, "Describe ANTISOMA")
    # EmotionPrompt frames the request; the reminder after it is not framed
    framed = frame(render("stance_queries", sentence="ANTISOMA marks melanoma.", persona="You search PubMed."),
                   "emotionprompt")
    found = recognise(reminder(framed, PLAIN_LINE, problem="p", form="f"))
    assert found is not None and found.name == "stance_queries" and found.framing == "emotionprompt"
    status, text, _ = OracleServer(gold).reply(reminder(framed, PLAIN_LINE, problem="p", form="f"))
    assert set(parse_stance_queries(text)) == {"support", "contradict"}
