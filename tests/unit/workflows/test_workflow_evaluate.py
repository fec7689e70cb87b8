"""workflows/evaluate.py: the judges of 'medcite eval biogen-b' built through one context."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.rundir import read_answers
from medcite.workflows.evaluate import NoJudgeError, evaluate_biogen_b


def test_citations_judged_by_a_named_stance_backend_without_completeness(biogen_run: Path) -> None:
    result = evaluate_biogen_b(load_settings("offline"), biogen_run, judge="overlap", completeness=False)
    cited = sum(len(s.pmids) for a in read_answers(biogen_run) for s in a.sentences)
    assert result.topics == 2 and result.citations.counts.citations == cited > 0
    assert result.report["judge"] == {**result.report["judge"], "backend": "overlap"}  # type: ignore[dict-item]
    assert set(result.report) == {"run", "judge", "citations"} and result.nuggets is None
    assert result.completeness is None


def test_completeness_without_an_llm_says_it_was_not_measured(biogen_run: Path) -> None:
    result = evaluate_biogen_b(load_settings("offline", ["llm.backend=none"]), biogen_run, judge="overlap")
    assert isinstance(result.completeness, str)
    assert result.report["completeness"] == {"status": result.completeness}


def test_nuggets_against_reference_answers(biogen_run: Path, tmp_path: Path) -> None:
    import json

    reference = tmp_path / "ref.jsonl"
    reference.write_text(json.dumps({"topic_id": "1", "reference": "Statins lowered LDL cholesterol in adults."})
                         + "\n")
    result = evaluate_biogen_b(load_settings("offline"), biogen_run, judge="overlap", reference=reference,
                               encoder={"backend": "hash-bow"}, encoder_name="hash", completeness=False)
    assert result.nuggets is not None and set(result.nuggets.per_topic) == {"1"}
    assert result.nuggets.unreferenced == ["2"]
    assert result.report["nuggets"]["encoder"] == "hash"  # type: ignore[index]


def test_judge_none_is_refused(biogen_run: Path) -> None:
    with pytest.raises(NoJudgeError, match="judges nothing"):
        evaluate_biogen_b(load_settings("offline"), biogen_run, judge="none", completeness=False)
