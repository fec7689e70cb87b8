"""Printing answers for people: each sentence with its PMIDs, then the cited articles."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import click

from ..types import PREDICTED, Article, StudyDesign

if TYPE_CHECKING:
    from ..workflows.ask import TopicResult


def echo_result(result: TopicResult, *, width: int = 100) -> None:
    click.secho(f"Q: {result.topic.question}", bold=True)
    if not result.answer.sentences:
        click.echo("  (no answer: the corpus gave no usable evidence for this question)")
    for i, s in enumerate(result.answer.sentences, start=1):
        cites = ", ".join(f"PMID {p}" for p in s.pmids)
        body = textwrap.fill(s.text, width=width, initial_indent=f"  {i}. ", subsequent_indent="     ")
        click.echo(body)
        if cites:
            click.secho(f"     [{cites}]", fg="cyan")
        elif s.kind == "abstain":
            click.secho("     (no citation: the corpus holds nothing to cite)", fg="cyan")
        elif s.kind == "verdict" and result.answer.verdict == "undecided":
            click.secho("     (no citation: the reader cannot tell which way the findings go; they follow)", fg="cyan")
        elif s.kind == "verdict":
            click.secho("     (no citation: no retrieved sentence settles it; the findings follow)", fg="cyan")
        elif s.kind == "caveat":
            click.secho("     (no citation: it is about the sources cited above; each one's study design is below)",
                        fg="cyan")
        else:
            click.secho("     []", fg="cyan")
    echo_provenance(result)
    cited = result.answer.pmids
    if cited:
        click.echo("  Sources:")
        for p in cited:
            a = result.articles.get(p)
            if a is None:
                continue
            line = source_line(p, a, result.designs.get(p))
            click.echo("   - " + textwrap.shorten(line, width=width + 40))
    click.echo()


def design_text(design: StudyDesign) -> str:
    """The design as a person reads it, saying when it is predicted from the text (and how sure): ``randomised
    controlled trial`` (PubMed's indexing) or ``case report or series (predicted, 81 %)``."""
    if design.design.source == PREDICTED:
        return f"{design.text} (predicted, {design.design.confidence:.0%})"
    return design.text


def source_line(pmid: str, article: Article, design: StudyDesign | None = None) -> str:
    """``PMID p · design · year: title (journal)`` (without a design: ``PMID p: title (journal, year)``), saying
    which of them the record lacks instead of leaving a gap."""
    title = article.title.strip() or "(no title in the record)"
    journal = article.journal_iso or article.journal or "journal not recorded"
    year = str(article.year) if article.year else "year not recorded"
    mark = "[RETRACTED] " if article.retracted else ""
    if design is None:
        return f"PMID {pmid}: {mark}{title} ({journal}, {year})"
    return f"PMID {pmid} · {design_text(design)} · {year}: {mark}{title} ({journal})"


#: how each generator name reads to a person
GENERATORS = {
    "extractive": "extractive (sentences taken from the abstracts, no LLM)",
    "llm": "LLM",
    "llm+extractive-fallback": "extractive fallback (sentences taken from the abstracts): the LLM answer was "
    "discarded",
    "llm+grounded": "LLM, then grounded (each sentence cited by the stance check)",
    "extractive-qa": "extractive-qa (no LLM: medcite's reader reads the abstracts for the answer; every other "
    "sentence is quoted from them)",
}


def echo_provenance(result: TopicResult) -> None:
    """Which generator wrote the answer, and every LLM answer discarded on the way (why, what replaced it)."""
    answer = result.answer
    name = answer.generator or "unknown"
    click.secho(f"  Answer by: {GENERATORS.get(name, name)}", dim=True)
    for d in answer.dropped:
        if d.what == "answer" and d.reason:
            click.secho(f"   - {d.reason}", dim=True)
