"""The reranker protocol. Every reranker scores (query, article) pairs and returns the top ``k``.

Articles are passed in (looked up once from the document store by the pipeline), so rerankers never
open stores themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..types import Article, Hit


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        """Rescore ``hits`` for ``query``; return the best ``k`` with new scores, ranks from 1.

        Hits whose PMID is missing from ``articles`` are dropped (they cannot be read, so they are never cited).
        """
        ...
