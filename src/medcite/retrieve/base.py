"""Protocols and base configs of the retrieve stage: query generators and first-stage retrievers.

A preset lists query generators (``retrieve.queries``, registry stage ``querygen``) and branches
(``retrieve.branches``, registry stage ``retriever``); each branch searches one named index
(``settings.indexes``) with every query of the topic's query set.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field

from ..settings_base import MAX_HITS, BackendConfig
from ..types import Hit, Query, Topic

log = logging.getLogger(__name__)


class QueryGenConfig(BackendConfig):
    """Base of every query generator's settings."""


class RetrieverConfig(BackendConfig):
    """Base of every first-stage retriever's settings (one branch of ``retrieve.branches``)."""

    label: str | None = Field(
        None, description="Name of this branch in hit provenance (``<label>/<qid>``); None: the backend name. "
        "Give two branches of one backend different labels."
    )
    index: str = Field(..., description="Name of the index (an entry of `indexes`) this branch searches.")
    k: int | None = Field(None, ge=1, le=MAX_HITS,
                          description="Documents this branch retrieves per sub-query (None: retrieve.k).")
    weight: float = Field(1.0, ge=0, description="Weight of this branch's runs in 'rrf' and 'wsum' fusion.")
    queries: list[str] | None = Field(
        None, description="Stages of the query set this branch searches (a Query's `stages`: 'original', "
        "'keywords', 'keyword_rewrite', 'reformulation', 'decomposition', ...; a text two stages gave belongs to "
        "both); None: every query. When its stages produced nothing, the branch searches the question and the "
        "run directory notes it. Dalhousie 2025 sends the LLM keyword rewrite to BM25 + Rocchio and the LLM "
        "sub-queries to the dense index."
    )

    @property
    def name(self) -> str:
        """The branch's name in hit provenance."""
        return self.label or self.backend


@runtime_checkable
class QueryGenerator(Protocol):
    """Turns a topic into queries (original, reformulations, decompositions, keyword rewrites).

    A generator may also keep ``notes``: what went wrong with its last topic (a reply left out after its format
    reminder), which the query set passes on to the run directory."""

    name: str

    def generate(self, topic: Topic) -> list[Query]: ...


@runtime_checkable
class Retriever(Protocol):
    """First-stage search over one index: a query text in, ranked hits out."""

    name: str

    def search(self, query: str, k: int) -> list[Hit]: ...

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


def query_key(text: str) -> str:
    """A query text as the query set compares it: case and spacing ignored."""
    return " ".join(text.lower().split())


class QuerySet:
    """Runs generators in order, ids ``q0, q1, ...`` (``q0`` is the first generator's first query, normally the
    original question). A text that an earlier generator already gave (case and spacing ignored) is searched once:
    it keeps its first id and stage and adds the later stage to :attr:`Query.also`, so a branch that selects
    either stage searches it (a capable model often gives a short question back unchanged as its keyword query)."""

    name = "queryset"

    def __init__(self, generators: Sequence[QueryGenerator]) -> None:
        if not generators:
            raise ValueError("a QuerySet needs at least one generator")
        self.generators = list(generators)
        self.failed: list[str] = []  # the generators that failed for the last topic
        self.notes: list[str] = []  # what went wrong with the last topic's queries (for the run directory)

    def generate(self, topic: Topic) -> list[Query]:
        """The topic's queries. A generator whose LLM fails for good (after its backend's retries) adds none and
        says so in a warning and a note; when no generator gave a query, the question itself is searched."""
        from ..errors import LLMError

        where: dict[str, int] = {}
        out: list[Query] = []
        self.failed, self.notes = [], []
        for gen in self.generators:
            name = str(getattr(gen, "name", type(gen).__name__))
            try:
                made = gen.generate(topic)
            except LLMError as exc:
                self.failed.append(name)
                self.notes.append(f"query generator {name!r} failed ({exc.message}); its queries are left out")
                log.warning("topic %s: query generator %r failed (%s); its queries are left out", topic.id, name,
                            exc.message)
                continue
            self.notes.extend(str(n) for n in getattr(gen, "notes", ()) or ())
            for query in made:
                key = query_key(query.text)
                if not key:
                    continue
                if key in where:  # the same text from a later stage: searched once, credited to both
                    first = out[where[key]]
                    extra = tuple(s for s in query.stages if s not in first.stages)
                    if extra:
                        out[where[key]] = Query(first.id, first.text, first.stage, (*first.also, *extra))
                    continue
                where[key] = len(out)
                out.append(Query(f"q{len(out)}", query.text.strip(), query.stage, query.also))
        if not out and topic.question.strip():
            self.notes.append("no query generator gave a query: the question is searched")
            out.append(Query("q0", topic.question.strip(), "original"))
        return out
