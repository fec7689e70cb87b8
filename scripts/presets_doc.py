"""Write docs/PRESETS.md: every preset's published run and, per setting, its value, its source in the paper
(file, section, verbatim quote) or medcite's choice, and its offline swap (medcite.pipeline.provenance).

    python scripts/presets_doc.py          # rewrite docs/PRESETS.md
    python scripts/presets_doc.py --check  # exit 1 when docs/PRESETS.md is not what the presets say
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medcite.config import preset_names
from medcite.pipeline.provenance import markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "PRESETS.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = markdown(preset_names()) + "\n"
    if args.check:
        same = DOC.exists() and DOC.read_text(encoding="utf-8") == text
        if not same:
            print(f"{DOC} is out of date: run python scripts/presets_doc.py", file=sys.stderr)
        return 0 if same else 1
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
