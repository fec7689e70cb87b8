"""What the corpus readers yield besides articles: deletions and notices about bad records."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..types import Article


class UnreadableFileError(InputError):
    """Nothing in the file can be read (empty, another format, XML that is not PubMed): it is failed, not done."""


@dataclass(frozen=True, slots=True)
class Deletion:
    """PMIDs to delete, e.g. a ``<DeleteCitation>`` block (``line`` is where it starts in the file)."""

    pmids: tuple[str, ...]
    line: int | None = None


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A problem with one record: the reason and where it starts in the file.

    ``kept`` is False when the record cannot be stored at all (it is skipped), and True when only a
    part of it was dropped (e.g. an unknown JSONL field) and the cleaned record follows as an Article.
    ``kind`` names the reason without the record's particulars (``"invalid JSON"``), for counting; empty
    when ``reason`` has none.
    """

    reason: str
    line: int | None = None
    pmid: str | None = None
    kept: bool = False
    kind: str = ""

    @property
    def group(self) -> str:
        """What records skipped for the same reason share (``kind``, else ``reason``)."""
        return self.kind or self.reason

    @property
    def position(self) -> str:
        where = f"line {self.line}" if self.line is not None else "unknown line"
        return f"{where}, PMID {self.pmid}" if self.pmid else where


Item = Article | Deletion | BadRecord
