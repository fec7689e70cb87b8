"""workflows/validate.py: the BioGen validators by KIND, and citation support judged by the overlap stance stage."""

from __future__ import annotations

import json
from pathlib import Path

from medcite.rundir import read_answers
from medcite.workflows.validate import citation_support, kinds, support_report, validate_submission


def test_the_kinds_are_the_biogen_tasks() -> None:
    assert kinds() == {"biogen-b": "biogen25", "biogen24": "biogen24", "biogen-a": "biogen-a"}


def test_a_valid_run_validates_and_a_broken_file_does_not(biogen_run: Path, store: Path, tmp_path: Path) -> None:
    submission = biogen_run / "submission.jsonl"
    assert validate_submission("biogen-b", submission, store, None, biogen_run).ok
    rows = [json.loads(line) for line in submission.read_text().splitlines()]
    rows[0]["responses"][0]["citations"] = ["99999"]  # not in the store, not in the evidence
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = validate_submission("biogen-b", broken, store, None, biogen_run)
    assert not report.ok and any("99999" in e for e in report.errors)


def test_citation_support_is_judged_by_the_overlap_stage(biogen_run: Path) -> None:
    summary = citation_support(biogen_run)
    cited = sum(len(s.pmids) for a in read_answers(biogen_run) for s in a.sentences)
    assert summary.citations == cited > 0 and summary.missing == 0
    record = support_report(summary)
    assert record["judge"] == "overlap" and len(record["failures"]) == len(summary.failures)
