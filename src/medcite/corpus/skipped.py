"""The bad records of one ingest run: one summary line per reason, and every one listed in ``skipped.jsonl``.

A PubMed baseline file holds hundreds of citations without title or abstract; with ``--on-error skip`` a
warning for each buried everything else. Now each record is logged at DEBUG only, the run ends with one
warning per reason (count and the first few records), and every record is appended to ``skipped.jsonl`` in
the store folder: one JSON object per line, ``{"file", "line", "pmid", "reason", "action", "ingested_at"}``
(``action``: ``"skipped"``, or ``"field ignored"`` when the record was stored without a field).

A file's records are appended only once the file's transaction has committed, so the list holds exactly
the records of committed files, however an ingest ends. Until then they wait in a spooled temporary file
(memory up to 1 MiB, then disk): memory stays bounded whatever the file holds.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .records import BadRecord

log = logging.getLogger(__name__)

SKIPPED_NAME = "skipped.jsonl"
EXAMPLES = 3
_SPOOL_BYTES = 1 << 20


@dataclass
class _Group:
    count: int = 0
    kept: bool = False
    examples: list[str] = field(default_factory=list)

    def add(self, other: _Group) -> None:
        self.count += other.count
        self.examples.extend(other.examples[: EXAMPLES - len(self.examples)])


class SkipLog:
    """The bad records of an ingest run: :meth:`commit` after each file's commit, :meth:`summary` at the end."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / SKIPPED_NAME
        self._at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._groups: dict[str, _Group] = {}
        self._pending: dict[str, _Group] = {}
        self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES, mode="w+", encoding="utf-8")
        self.listed = 0

    def add(self, source: str, item: BadRecord) -> None:
        """Note one bad record of ``source`` (its file); kept until :meth:`commit` or :meth:`discard`."""
        action = "field ignored" if item.kept else "skipped"
        log.debug("%s (%s): %s; %s", source, item.position, item.reason, action)
        group = self._pending.setdefault(item.group, _Group(kept=item.kept))
        group.count += 1
        if len(group.examples) < EXAMPLES:
            detail = f": {item.reason}" if item.kind and item.reason != item.kind else ""
            group.examples.append(f"{Path(source).name} {item.position}{detail}")
        row = {"file": source, "line": item.line, "pmid": item.pmid, "reason": item.reason, "action": action,
               "ingested_at": self._at}
        self._spool.write(json.dumps(row, ensure_ascii=False) + "\n")

    def commit(self) -> None:
        """The file's transaction committed: append its records to ``skipped.jsonl`` (fsynced) and count them."""
        if not self._pending:
            return
        self._spool.seek(0)
        with open(self.path, "a+", encoding="utf-8") as out:
            if out.tell() and not _ends_with_newline(self.path):  # a line torn by an earlier crash stays apart
                out.write("\n")
            while chunk := self._spool.read(1 << 16):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        for name, group in self._pending.items():
            self._groups.setdefault(name, _Group(kept=group.kept)).add(group)
            self.listed += group.count
        self.discard()

    def discard(self) -> None:
        """The file's transaction rolled back: forget its records."""
        self._pending.clear()
        self._spool.seek(0)
        self._spool.truncate()

    def summary(self) -> list[str]:
        """One line per reason (count, the first few records), then where the full list is; [] when none."""
        lines = []
        for reason, g in sorted(self._groups.items(), key=lambda kv: -kv[1].count):
            what = "stored without a field" if g.kept else "skipped"
            more = ", ..." if g.count > len(g.examples) else ""
            lines.append(f"{g.count} record{'s' if g.count != 1 else ''} {what}: {reason} "
                         f"(e.g. {'; '.join(g.examples)}{more})")
        if lines:
            lines.append(f"every one of these {self.listed} records is listed in {self.path}")
        return lines

    def close(self) -> None:
        self._spool.close()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
