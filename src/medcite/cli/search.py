"""`medcite search`: BM25 search of one free-text query, or of every topic of a topics file, into a TREC run;
with --preset/--corpus, any retrieval preset end to end over a document store (:mod:`medcite.workflows.search`).

-k caps the hits written per topic; a preset's own ``retrieve.keep`` (narrow: 10, wide: 30) still applies, and for
presets without one the first-stage ``retrieve.k`` is raised to k so that k hits can come back.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..types import Article, Hit, StudyDesign
from ..workflows.search import search_index, search_preset
from .numbers import MAX_HITS, Count
from .options import design_options
from .render import design_text
from .trec_output import write_trec


@click.command("search")
@click.argument("query", required=False)
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="BM25 index folder (built by `medcite index bm25`).",
)
@click.option(
    "--topics",
    type=click.Path(path_type=Path),
    default=None,
    help="Topics file: BioASQ JSON(.gz), BioGen 2024/2025 topics, or TREC TSV 'qid<TAB>query'.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="TREC run file to write (default: print to stdout).",
)
@click.option("-k", "k", type=Count(1, MAX_HITS), default=100, show_default=True, help="Hits per query.")
@click.option("--run-tag", default=None, help="Run tag, the last column of the run file (default: medcite-<backend>).")
@click.option(
    "--query-from",
    default="question",
    show_default=True,
    help="Topic fields joined into the query text: comma-separated from question, topic, narrative.",
)
@click.option("--qid", default="1", show_default=True, help="Query id of a single QUERY in the run file.")
@click.option(
    "--preset",
    default=None,
    help="Retrieval preset (bm25, hybrid, narrow, wide, best, ... or a .json file; default with --corpus: "
    "bm25); needs --corpus. "
    "-k caps the hits written per topic; the preset's retrieve.keep (narrow 10, wide 30) still applies.",
)
@click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    default=None,
    help="Document store folder; with --preset its indexes are built or reused under STORE/indexes/.",
)
@click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE",
    help="With --preset: override one setting, e.g. --set retrieve.k=200 (repeatable).",
)
@click.option(
    "--allow-retracted", is_flag=True,
    help="With --preset: keep retracted articles (dropped by default); they are marked RETRACTED.",
)
@design_options
def search(
    query: str | None,
    index_dir: Path | None,
    topics: Path | None,
    output: Path | None,
    k: int,
    run_tag: str | None,
    query_from: str,
    qid: str,
    preset: str | None = None,
    corpus: Path | None = None,
    overrides: tuple[str, ...] = (),
    allow_retracted: bool = False,
) -> None:
    """Search a BM25 index with QUERY, or with every topic of --topics, and write a TREC run.

    \b
    medcite search --index idx "statins and muscle pain"
    medcite search --index idx --topics topics.json --output run.trec -k 100
    medcite search --preset best --corpus store --topics topics.json --output run.trec -k 100
    """
    if allow_retracted:
        overrides = (*overrides, "retrieve.allow_retracted=true")
    printed = output is None and topics is None
    if preset is not None or corpus is not None or overrides:
        ranking = search_preset(preset=preset, corpus=corpus, overrides=overrides, query=query, topics=topics, k=k,
                                query_from=query_from, qid=qid, index_dir=index_dir, articles=printed)
    else:
        ranking = search_index(index_dir, query=query, topics=topics, k=k, query_from=query_from, qid=qid,
                               articles=printed)
    if printed:
        _print_hits(ranking.run[qid], ranking.articles, ranking.designs)
        return
    write_trec(ranking.run, output, run_tag or ranking.tag)


def _print_hits(hits: list[Hit], articles: dict[str, Article], designs: dict[str, StudyDesign]) -> None:
    if not hits:
        click.echo("no matching documents", err=True)
    for h in hits:
        click.echo(hit_line(h, articles.get(h.pmid), designs.get(h.pmid)))


def hit_line(hit: Hit, article: Article | None, design: StudyDesign | None = None) -> str:
    """One printed search hit: rank, PMID, score, the study design (when labelled) and title, the title marked
    RETRACTED for a retracted article."""
    title = "" if article is None else ("[RETRACTED] " if article.retracted else "") + article.title
    kind = f"[{design_text(design)}] " if design is not None else ""
    return f"{hit.rank:>4}  {hit.pmid:>10}  {hit.score:8.3f}  {kind}{title[:100]}".rstrip()
