"""The evidence-selector protocol, its base config, and the evidence block shown to generators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field

from ..settings_base import BackendConfig
from ..types import Article, Evidence, Hit, Query


class EvidenceConfig(BackendConfig):
    """Base of every evidence selector's settings."""

    docs: int = Field(10, ge=1, description="Top documents that evidence is taken from.")
    max_items: int = Field(10, ge=1, description="Evidence items shown to the generator.")
    lam: float = Field(0.75, ge=0, le=1, description="MMR lambda: relevance against redundancy (CLaC 2025: 0.75).")


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
