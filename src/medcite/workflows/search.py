"""``medcite search``: rank documents for one query or every topic of a topics file.

Two sources of a ranking: a BM25 index folder (:func:`search_index`), or any retrieval preset over a document
store (:func:`search_preset`: the preset's :class:`~medcite.pipeline.RetrievalPipeline` builds or reuses the
indexes it needs under ``STORE/indexes/``, generates each topic's query set, searches every branch, fuses or
pools, and reranks when the preset names a reranker). Both return a :class:`Ranking`; the CLI writes it as a
TREC run or prints it.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..set_option import set_line
from ..types import Article, Hit, StudyDesign, Topic

if TYPE_CHECKING:
    from ..index.sparse.base import SparseIndex

log = logging.getLogger(__name__)

QUERY_FIELDS = ("question", "topic", "narrative")
BATCH = 256


@dataclass
class Ranking:
    """Hits per query id, the default run tag, and (for one printed query) the articles of its hits."""

    run: dict[str, list[Hit]]
    tag: str
    articles: dict[str, Article] = field(default_factory=dict)
    designs: dict[str, StudyDesign] = field(default_factory=dict)


def search_preset(*, preset: str | None, corpus: Path | None, overrides: Sequence[str], query: str | None,
                  topics: Path | None, k: int, query_from: str, qid: str, index_dir: Path | None,
                  articles: bool = False) -> Ranking:
    """The ``--preset``/``--corpus`` form: at most ``k`` hits per topic (a preset's own ``retrieve.keep`` still
    applies; for presets without one the first-stage ``retrieve.k`` is raised to ``k`` so that ``k`` hits can come
    back). ``articles``: also fetch the articles of a single query's hits (for printing)."""
    from ..config import load_settings
    from ..pipeline import RetrievalPipeline
    from ..tasks.topics import read_topics

    if corpus is None:
        raise InputError(
            "--preset, --set, --design and --humans search a document store: give --corpus STORE",
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
            hint="choose query generators with " + set_line("retrieve.queries", ["original", "topic_narrative"]),
        )
    if (query is None) == (topics is None):
        raise InputError("give either a QUERY or --topics FILE (not both)")
    settings = load_settings(preset, list(overrides))
    if settings.retrieve.keep is None and settings.retrieve.k < k:
        settings = settings.model_copy(update={"retrieve": settings.retrieve.model_copy(update={"k": k})})
    items = read_topics(topics) if topics is not None else [Topic(qid, str(query))]
    pipe = RetrievalPipeline.from_settings(settings, corpus)
    try:
        run: dict[str, list[Hit]] = {r.topic.id: r.final[:k] for r in pipe.retrieve_many(items)}
        shown = pipe.store.get_many([h.pmid for h in run[qid]]) if articles and topics is None else {}
        designs = pipe.designs(shown)
    finally:
        pipe.close()
    return Ranking(run, f"medcite-{Path(preset).stem}", shown, designs)


def search_index(index_dir: Path | None, *, query: str | None, topics: Path | None, k: int, query_from: str,
                 qid: str, articles: bool = False) -> Ranking:
    """The ``--index DIR`` form: BM25 search of ``query`` (as query id ``qid``) or of every topic of ``topics``
    (the query text joined from the ``query_from`` fields). ``articles``: also read the hits' articles of a single
    query from the store the index was built from, when it is still where the manifest says."""
    if (query is None) == (topics is None):
        raise InputError(
            "give either a QUERY or --topics FILE (not both)", hint='e.g. medcite search --index idx "statin myopathy"'
        )
    index = _open_index(index_dir)
    tag = f"medcite-{index.name}"
    if topics is not None:
        return Ranking(_search_all(index, _topic_queries(topics, query_from), k), tag)
    hits = index.search(str(query), k)
    shown = _titles(index, [h.pmid for h in hits]) if articles else {}
    return Ranking({qid: hits}, tag, shown, _designs(shown))


def _designs(articles: dict[str, Article]) -> dict[str, StudyDesign]:
    """The study designs of printed hits, by the default labeller."""
    from ..config import Settings
    from ..design.base import label_map
    from ..pipeline.context import Context

    if not articles:
        return {}
    settings = Settings()
    with Context(settings) as ctx:
        return label_map(ctx.build("design", settings.design), articles)


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
