"""What capable models write around their answers is taken off before a stage reads them (issue 23)."""

from __future__ import annotations

from medcite.generate.citations import split_cited_sentences
from medcite.llm.base import _visible
from medcite.llm.completion import Completion
from medcite.llm.reply import prose, split_reasoning
from medcite.llm.reply_parsers import parse_stance


def test_a_think_block_is_reasoning_not_answer() -> None:
    assert split_reasoning("<think>[1] might SUPPORT it</think>\n\nNEUTRAL\nNONE") == (
        "[1] might SUPPORT it", "NEUTRAL\nNONE")
    # the server's reasoning parser took the opening tag; a block cut off by the token limit leaves no answer
    assert split_reasoning("it CONTRADICTS?</think>SUPPORTS") == ("it CONTRADICTS?", "SUPPORTS")
    assert split_reasoning("<think>still thinking about SUPPORTS") == ("still thinking about SUPPORTS", "")
    assert split_reasoning("SUPPORTS\nNONE") == ("", "SUPPORTS\nNONE")


def test_every_completion_loses_its_think_block_and_keeps_it_as_reasoning() -> None:
    raw = Completion("<think>Evidence [1] does NOT SUPPORT it.</think>\nCONTRADICTS\nStatins raised LDL.", "m")
    seen = _visible(raw)
    assert seen.text == "CONTRADICTS\nStatins raised LDL." and "NOT SUPPORT" in seen.reasoning
    assert parse_stance(seen.text)[0] == "contradicts"
    assert parse_stance(raw.text)[0] != "contradicts"  # what the stage would have read without it


def test_prose_framing_goes_and_every_cited_sentence_stays() -> None:
    framed = ("**Answer**\n\nHere is the answer based on the evidence provided:\n\n"
              "- Statins lower LDL cholesterol. [1]\n- Muscle pain is reported by **10%** of users [2].\n\n"
              "I hope this helps! Let me know if you have questions.")
    clean = prose(framed)
    assert clean == "Statins lower LDL cholesterol. [1] Muscle pain is reported by 10% of users [2]."
    drafts = split_cited_sentences(clean)
    assert [(d.text, d.indices) for d in drafts] == [("Statins lower LDL cholesterol.", [1]),
                                                    ("Muscle pain is reported by 10% of users.", [2])]


def test_prose_keeps_a_cited_line_that_looks_like_framing_and_bullets_without_stop_end_sentences() -> None:
    assert prose("Note: statins lower LDL [1].") == "Note: statins lower LDL [1]."
    assert prose("Answer: Statins lower LDL [1].") == "Statins lower LDL [1]."
    assert prose("- Statins lower LDL\n- Pain is common [2]") == "Statins lower LDL. Pain is common [2]"
