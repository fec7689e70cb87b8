"""workflows/stance.py: CSV pairs read with their row named on error, judged by a stance stage built by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.errors import InputError
from medcite.types import Stance
from medcite.workflows.stance import NoStanceError, classify_pairs, read_pairs


def test_pairs_are_judged_by_the_named_backend(tmp_path: Path) -> None:
    csv = tmp_path / "pairs.csv"
    csv.write_text("id,claim,evidence\n"
                   "a,Statins lower LDL cholesterol.,Statins lowered LDL cholesterol in adults.\n"
                   "b,Statins lower LDL cholesterol.,Zebrafish fins regenerate in days.\n")
    pairs = read_pairs(csv)
    assert [p[0] for p in pairs] == ["a", "b"]
    verdicts = classify_pairs(load_settings("offline"), "overlap", pairs)
    assert [v.label for v in verdicts] == [Stance.SUPPORTS, Stance.NEUTRAL]
    with pytest.raises(NoStanceError, match="judges nothing"):
        classify_pairs(load_settings("offline"), "none", pairs)


def test_a_bad_row_is_named(tmp_path: Path) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("claim,evidence\nx,\n")
    with pytest.raises(InputError, match="row 2 has an empty evidence"):
        read_pairs(csv)
