"""Write docs/PRESETS.md: every preset's published run and, per setting (of a paper preset: every setting its run
reads, defaults included), its value, its source in the paper (file, section, verbatim quote) or medcite's choice,
and its offline swap (medcite.presets.coverage); and the per-paper preset tables of docs/TASK_A.md,
docs/TASK_B.md and docs/BIOASQ.md, between their ``<!-- presets:begin NAME -->`` and ``<!-- presets:end -->``
markers, from the presets' settings (medcite.presets.tables).

    python scripts/presets_doc.py          # rewrite docs/PRESETS.md and the tables
    python scripts/presets_doc.py --check  # exit 1 when a doc is not what the presets say
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medcite.config import preset_names
from medcite.presets.coverage import markdown
from medcite.presets.tables import regenerate

DOCS = Path(__file__).resolve().parent.parent / "docs"
DOC = DOCS / "PRESETS.md"
#: the docs whose preset tables are generated, each between markers
TABLE_DOCS = [DOCS / "TASK_A.md", DOCS / "TASK_B.md", DOCS / "BIOASQ.md"]


def expected() -> dict[Path, str]:
    """Each generated doc as the presets say it should read."""
    out = {DOC: markdown(preset_names()) + "\n"}
    for doc in TABLE_DOCS:
        out[doc] = regenerate(doc.read_text(encoding="utf-8"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = []
    for doc, text in expected().items():
        if args.check:
            if not (doc.exists() and doc.read_text(encoding="utf-8") == text):
                stale.append(doc)
        elif not doc.exists() or doc.read_text(encoding="utf-8") != text:
            doc.write_text(text, encoding="utf-8")
            print(f"wrote {doc}")
    for doc in stale:
        print(f"{doc} is out of date: run python scripts/presets_doc.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
