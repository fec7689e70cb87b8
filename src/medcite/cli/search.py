"""`medcite search`: BM25 search of one free-text query, or of every topic of a topics file, into a TREC run.

The command is split into small steps (where the queries come from, what searches them, where the
ranking goes) so that other sources of a retriever (e.g. a preset over a corpus) can be added as
options without touching the rest.
"""

from __future__ import annotations

import logging
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import InputError
from .numbers import MAX_HITS, Count
from .trec_output import write_trec

if TYPE_CHECKING:
    from ..index.sparse.base import SparseIndex
    from ..types import Article, Hit, Topic

log = logging.getLogger(__name__)

QUERY_FIELDS = ("question", "topic", "narrative")
BATCH = 256


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
    if preset is not None or corpus is not None or overrides:
        from .search_preset import search_preset

        search_preset(preset=preset, corpus=corpus, overrides=overrides, query=query, topics=topics,
                      output=output, k=k, run_tag=run_tag, query_from=query_from, qid=qid, index_dir=index_dir)
        return
    if (query is None) == (topics is None):
        raise InputError(
            "give either a QUERY or --topics FILE (not both)", hint='e.g. medcite search --index idx "statin myopathy"'
        )
    index = _open_index(index_dir)
    tag = run_tag or f"medcite-{index.name}"
    if topics is not None:
        items = _topic_queries(topics, query_from)
        run = _search_all(index, items, k)
        write_trec(run, output, tag)
        return
    hits = index.search(str(query), k)
    if output is not None:
        write_trec({qid: hits}, output, tag)
    else:
        _print_hits(index, hits)


def _open_index(index_dir: Path | None) -> SparseIndex:
    from ..index.sparse.base import open_sparse

    if index_dir is None:
        raise InputError(
            "give --index DIR (a folder built by `medcite index bm25`)",
            hint="medcite index bm25 --store STORE --out DIR",
        )
    return open_sparse(index_dir)


def _topic_queries(path: Path, query_from: str) -> list[tuple[str, str]]:
    """(topic id, query text) for every topic, the text joined from the chosen fields."""
    from ..tasks.topics import read_topics

    fields = [f.strip() for f in query_from.split(",") if f.strip()]
    bad = [f for f in fields if f not in QUERY_FIELDS]
    if bad or not fields:
        raise InputError(f"--query-from {query_from!r}: choose from {', '.join(QUERY_FIELDS)}")
    out = []
    for topic in read_topics(path):
        text = " ".join(v for v in (_field(topic, f) for f in fields) if v)
        out.append((topic.id, text or topic.question))
    return out


def _field(topic: Topic, name: str) -> str | None:
    value: str | None = getattr(topic, name)
    return value


def _search_all(index: SparseIndex, items: list[tuple[str, str]], k: int) -> dict[str, list[Hit]]:
    from ..progress import progress

    run: dict[str, list[Hit]] = {}
    seconds: list[float] = []
    with progress(total=len(items), desc="search", unit="query") as bar:
        for i in range(0, len(items), BATCH):
            chunk = items[i : i + BATCH]
            start = time.perf_counter()
            results = index.search_many([text for _, text in chunk], k)
            seconds.append((time.perf_counter() - start) / len(chunk))
            for (topic_id, _), hits in zip(chunk, results, strict=True):
                run[topic_id] = hits
            bar.update(len(chunk))
    if seconds:
        log.info("searched %d queries, %.2f ms per query", len(items), 1000 * statistics.fmean(seconds))
    return run


def _print_hits(index: SparseIndex, hits: list[Hit]) -> None:
    from .search_preset import hit_line

    titles = _titles(index, [h.pmid for h in hits])
    if not hits:
        click.echo("no matching documents", err=True)
    for h in hits:
        click.echo(hit_line(h, titles.get(h.pmid)))


def _titles(index: SparseIndex, pmids: list[str]) -> dict[str, Article]:
    """Articles (for their titles) from the store the index was built from, when it is still where the
    manifest says."""
    from ..corpus.store import DocumentStore
    from ..errors import MedciteError

    corpus = index.manifest.get("corpus", {})
    path = corpus.get("path")
    if not pmids or not path or not Path(path).is_dir():
        return {}
    try:
        with DocumentStore.open(path) as store:
            if store.store_id != corpus.get("store_id"):
                return {}
            return store.get_many(pmids)
    except MedciteError as exc:
        log.debug("no titles: %s", exc)
        return {}
