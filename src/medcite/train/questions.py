"""A BioASQ question as training reads it: shared by the readers (:mod:`.data`) and the near-duplicate
finder (:mod:`.dedup`), which sits below them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """A BioASQ question with its gold PMIDs (``batch`` is e.g. ``"9B3"`` when the file says so)."""

    id: str
    body: str
    gold: tuple[str, ...]
    batch: str | None = None
