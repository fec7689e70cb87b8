"""The evidence-selector protocol and the evidence block shown to generators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..types import Article, Evidence, Hit, Query


@runtime_checkable
class EvidenceSelector(Protocol):
    name: str

    def select(
        self, queries: Sequence[Query], hits: Sequence[Hit], articles: Mapping[str, Article]
    ) -> list[Evidence]:
        """Numbered evidence (indices from 1) drawn only from ``articles`` of the ranked ``hits``."""
        ...


def format_block(evidence: Sequence[Evidence]) -> str:
    """The evidence block ``[i] (PMID) text``, one item per line (CLaC 2025, Dalhousie 2025)."""
    return "\n".join(f"[{e.index}] ({e.pmid}) {' '.join(e.text.split())}" for e in evidence)
