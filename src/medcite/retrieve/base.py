"""Protocols of the retrieve stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..types import Hit, Query, Topic


@runtime_checkable
class QueryGenerator(Protocol):
    """Turns a topic into queries (original, reformulations, decompositions, keyword rewrites).

    Rule-based generators live in this package; LLM ones (medcite.llm) implement the same protocol.
    """

    name: str

    def generate(self, topic: Topic) -> list[Query]: ...


@runtime_checkable
class Retriever(Protocol):
    """First-stage search over one index: a query text in, ranked hits out."""

    name: str

    def search(self, query: str, k: int) -> list[Hit]: ...

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...
