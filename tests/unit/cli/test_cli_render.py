"""How `ask`, `run` and `demo` print an answer: a source shows what its record holds and names what it lacks;
a lead without a citation says why."""

from __future__ import annotations

from click.testing import CliRunner

from medcite.cli.render import echo_result, source_line
from medcite.pipeline import TopicResult
from medcite.types import Answer, AnswerSentence, Article, Topic


def test_a_source_line_names_what_the_record_lacks_instead_of_printing_an_empty_gap() -> None:
    full = Article("1", "Hydin is axonemal", journal="J Cell Sci", journal_iso="J. Cell Sci.", year=2008)
    assert source_line("1", full) == "PMID 1: Hydin is axonemal (J. Cell Sci., 2008)"
    bare = Article("34352207", "")
    line = source_line("34352207", bare)
    assert "()" not in line
    assert line == "PMID 34352207: (no title in the record) (journal not recorded, year not recorded)"
    retracted = Article("2", "A title", journal="Lancet", year=2020, retracted=True)
    assert source_line("2", retracted) == "PMID 2: [RETRACTED] A title (Lancet, 2020)"


def test_an_unsettled_verdict_says_why_it_cites_nothing() -> None:
    answer = Answer("t", [AnswerSentence("The retrieved abstracts do not settle this.", kind="verdict"),
                          AnswerSentence("Hydin was found in cilia.", ("5",), (1,))], generator="extractive-qa",
                    question_type="yesno", verdict="unsettled")
    result = TopicResult(Topic("t", "Is HYDIN an axonemal protein?"), [], {}, [], answer,
                         {"5": Article("5", "", year=2001)})

    runner = CliRunner()
    import click

    @click.command()
    def show() -> None:
        echo_result(result)

    out = runner.invoke(show).output
    assert "no retrieved sentence settles it" in out
    assert "PMID 5: (no title in the record) (journal not recorded, 2001)" in out
    # undecided: the quoted finding settles it for the reader, which cannot tell which way -- never "settles nothing"
    undecided = Answer("t", [AnswerSentence("The findings below bear on this, but medcite's reader is not sure "
                                            "enough to say yes or no.", kind="verdict"),
                             AnswerSentence("Hydin was found in cilia.", ("5",), (1,))], generator="extractive-qa",
                       question_type="yesno", verdict="undecided")
    result = TopicResult(Topic("t", "Is HYDIN an axonemal protein?"), [], {}, [], undecided,
                         {"5": Article("5", "", year=2001)})
    out = runner.invoke(show).output
    assert "the reader cannot tell which way the findings go" in out and "settles it" not in out
    assert "reader" in out  # the generator is named for a person
