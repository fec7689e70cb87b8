"""The other stance sets (Check-COVID, Citation-Integrity, COVID-Fact) read from the shared folder: labels,
evidence sentences, and splits by claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.errors import InputError
from medcite.train.stance_sets import read_sets


@pytest.mark.slow  # reads the shared stance data
def test_each_set_is_split_by_claim_with_evidence_and_labels(shared_data: Path) -> None:
    sets = read_sets(shared_data / "stance")
    for name, split in sets.items():
        sides = {"train": split.train, "valid": split.valid, "test": split.test}
        assert all(sides.values()), name
        claims = {k: {p.claim for p in v} for k, v in sides.items()}
        assert not claims["train"] & claims["test"] and not claims["valid"] & claims["test"], name
        assert all(p.evidence.strip() and p.label in (0, 1, 2) for v in sides.values() for p in v), name
    cc = sets["check_covid"]
    assert {p.label for p in cc.test} == {0, 1, 2}  # supports, refutes and not-enough-info claims
    ci = sets["citation_integrity"]
    assert not any("<|" in p.claim for p in ci.train)  # citation markers are taken out of the citing sentence
    cf = sets["covidfact"]
    counters = [p for p in cf.train if p.label == 1]
    assert counters and all(p.weight == 0.5 for p in counters)  # machine-written counter-claims count half
    assert all(p.weight == 1.0 for p in cf.test)


def test_a_missing_set_folder_names_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing") as info:
        read_sets(tmp_path, ("check_covid",))
    assert "check_covid/" in (info.value.hint or "")
    with pytest.raises(InputError, match="unknown stance sets"):
        read_sets(tmp_path, ("scifact",))
