"""`medcite search --preset NAME --corpus STORE`: any retrieval preset end to end into a TREC run.

The preset's retrieval pipeline (:class:`medcite.retrieve.pipeline.RetrievalPipeline`) builds or reuses
the indexes it needs under ``STORE/indexes/``, generates each topic's query set, searches every branch,
fuses or pools, and reranks when the preset names a reranker. ``-k N`` caps the hits written per topic;
a preset's own ``retrieve.keep`` (narrow: 10, wide: 30) still applies, and for presets without one the
first-stage ``retrieve.k`` is raised to N so that N hits can come back.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from ..errors import InputError
from ..types import Article, Hit, Topic
from .trec_output import write_trec

log = logging.getLogger(__name__)


def search_preset(
    *,
    preset: str | None,
    corpus: Path | None,
    overrides: tuple[str, ...],
    query: str | None,
    topics: Path | None,
    output: Path | None,
    k: int,
    run_tag: str | None,
    query_from: str,
    qid: str,
    index_dir: Path | None,
) -> None:
    """The ``--preset``/``--corpus`` form of ``medcite search`` (see the module docstring)."""
    from ..config import load_settings
    from ..pipeline import RetrievalPipeline
    from ..tasks.topics import read_topics

    if corpus is None:
        raise InputError(
            "--preset and --set search a document store: give --corpus STORE",
            hint="medcite search --preset bm25 --corpus STORE --topics FILE --output RUN.trec -k 100",
        )
    preset = preset or "bm25"
    if index_dir is not None:
        raise InputError(
            "give either --index DIR or --preset NAME --corpus STORE, not both",
            hint="with --corpus the preset's indexes are built or reused under STORE/indexes/",
        )
    if query_from != "question":
        raise InputError(
            "--query-from does not apply with --preset: the query set comes from the preset",
            hint='choose query generators with --set retrieve.queries=\'["original","topic_narrative"]\'',
        )
    if (query is None) == (topics is None):
        raise InputError("give either a QUERY or --topics FILE (not both)")
    settings = load_settings(preset, list(overrides))
    if settings.retrieve.keep is None and settings.retrieve.k < k:
        settings.retrieve.k = k
    items = read_topics(topics) if topics is not None else [Topic(qid, str(query))]
    pipe = RetrievalPipeline.from_settings(settings, corpus)
    try:
        run: dict[str, list[Hit]] = {r.topic.id: r.final[:k] for r in pipe.retrieve_many(items)}
        shown = {} if output is not None or topics is not None else pipe.store.get_many([h.pmid for h in run[qid]])
    finally:
        pipe.close()
    tag = run_tag or f"medcite-{Path(preset).stem}"
    if output is None and topics is None:
        for h in run[qid]:
            click.echo(hit_line(h, shown.get(h.pmid)))
        if not run[qid]:
            click.echo("no matching documents", err=True)
        return
    write_trec(run, output, tag)


def hit_line(hit: Hit, article: Article | None) -> str:
    """One printed search hit: rank, PMID, score and title, the title marked RETRACTED for a retracted article."""
    title = "" if article is None else ("[RETRACTED] " if article.retracted else "") + article.title
    return f"{hit.rank:>4}  {hit.pmid:>10}  {hit.score:8.3f}  {title[:100]}".rstrip()
