"""The generator protocol: a question and numbered evidence in, a cited answer out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..types import Answer, Evidence, Query, Topic


@runtime_checkable
class Generator(Protocol):
    name: str

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        """An answer whose every sentence cites PMIDs of ``evidence`` only (caps enforced)."""
        ...
