"""One job of the build-race tests (test_build_race.py), run as a process of its own:
``python race_job.py ARGS...`` runs ``medcite ARGS...`` with these test hooks, taken from the environment:

- ``RACE_GATE=PATH`` and ``RACE_LOOP=DESC``: the progress loop named DESC (``dense build``, ``bm25 index``) stops at
  its first count until the file PATH exists, so the test starts the other job while this build surely holds
  the lock, and lets it go on when it chooses;
- ``RACE_COUNT=PATH``: the size of every batch of abstracts the ONNX MiniLM encodes is appended to PATH (one
  line each), so the test counts the abstracts both jobs encoded together.

The waiting job's reports come every 0.5 s instead of every 15 s. Everything else is the real command.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medcite import progress
from medcite.index import build_lock
from medcite.index.dense.onnx_minilm import OnnxMiniLMEncoder
from medcite.types import Article


def gate_loop(desc: str, gate: Path) -> None:
    update = progress.Progress.update

    def gated(self: Any, n: float = 1) -> None:
        update(self, n)
        if self.desc == desc:
            deadline = time.monotonic() + 120
            while not gate.exists() and time.monotonic() < deadline:
                time.sleep(0.05)

    progress.Progress.update = gated  # type: ignore[method-assign]


def count_encoded(path: Path) -> None:
    encode = OnnxMiniLMEncoder.encode_documents

    def counted(self: OnnxMiniLMEncoder, articles: Sequence[Article]) -> Any:
        with open(path, "a", encoding="ascii") as fh:  # O_APPEND: whole lines from both jobs
            fh.write(f"{len(articles)}\n")
        return encode(self, articles)

    OnnxMiniLMEncoder.encode_documents = counted  # type: ignore[method-assign]


if __name__ == "__main__":
    build_lock.REPORT_EVERY_S = 0.5
    if os.environ.get("RACE_GATE"):
        gate_loop(os.environ["RACE_LOOP"], Path(os.environ["RACE_GATE"]))
    if os.environ.get("RACE_COUNT"):
        count_encoded(Path(os.environ["RACE_COUNT"]))
    from medcite.cli.main import cli

    cli(args=sys.argv[1:], prog_name="medcite")
