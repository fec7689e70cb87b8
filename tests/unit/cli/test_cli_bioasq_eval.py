"""`medcite eval bioasq` and `medcite validate bioasq`, in-process on tiny files (values by hand), and the real
dev file scored against itself (slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.paths import shared_data_dir

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"


def _snip(pmid: str, begin: int, end: int) -> dict[str, Any]:
    return {"document": URL + pmid, "text": "x" * (end - begin), "beginSection": "abstract",
            "offsetInBeginSection": begin, "endSection": "abstract", "offsetInEndSection": end}


GOLD = {"questions": [
    {"id": "q1", "type": "yesno", "body": "Is it?", "documents": [URL + "1", URL + "2"],
     "snippets": [_snip("1", 0, 9)], "exact_answer": "yes", "ideal_answer": ["the cat sat on the mat"]},
    {"id": "q2", "type": "factoid", "body": "What?", "documents": [URL + "3"], "snippets": [_snip("3", 0, 9)],
     "exact_answer": [["XIa", "factor XIa"]], "ideal_answer": ["XIa."]},
    {"id": "q3", "type": "list", "body": "Which?", "documents": [URL + "4"], "snippets": [_snip("4", 0, 9)],
     "exact_answer": [["a"], ["b"]], "ideal_answer": "a and b"},
]}
# q1: 1 at rank 1, 2 at rank 3 -> AP (1 + 2/3) / 2 = 5/6, P 2/3, R 1, F1 4/5; snippet [0, 9] vs [5, 14] (inclusive):
#     5 shared of 10 and 10 -> P = R = F1 = 1/2. q2: nothing relevant -> AP 0, snippets 0. q3 is not in the run.
PHASE_A = {"questions": [
    {"id": "q1", "documents": [URL + "1", URL + "9", URL + "2"], "snippets": [_snip("1", 5, 14)]},
    {"id": "q2", "documents": [URL + "8"], "snippets": []},
]}
# q1 yes (right), q2 candidates b, factor xia (RR 1/2), q3 a, c (P 1/2, R 1/2); ideal of q1 = "the cat on the mat"
PHASE_B = {"questions": [
    {"id": "q1", "ideal_answer": "the cat on the mat", "exact_answer": "yes"},
    {"id": "q2", "ideal_answer": "", "exact_answer": [["b"], ["factor xia"]]},
    {"id": "q3", "ideal_answer": "a and b", "exact_answer": [["a"], ["c"]]},
]}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, data in (("gold", GOLD), ("a", PHASE_A), ("b", PHASE_B)):
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(json.dumps(data))
    return out


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    return result.output


def test_eval_phase_a(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    text = _run("eval", "bioasq", "--phase", "A", "--gold", str(files["gold"]), "--system", str(files["a"]),
                "--json", str(out))
    assert "documents  MAP 0.4167  GMAP 0.0029" in text and "(2 questions)" in text
    assert "3 gold, 1 missing from the system file (left out: --missing skip): q3" in text
    report = json.loads(out.read_text())
    docs = report["measures"]["documents"]
    assert docs["MAP"] == pytest.approx(5 / 12)
    assert docs["GMAP"] == pytest.approx(((5 / 6 + 1e-5) * 1e-5) ** 0.5)
    assert (docs["P"], docs["R"], docs["F1"]) == pytest.approx((1 / 3, 1 / 2, 2 / 5))
    assert report["measures"]["snippets"] == pytest.approx({"P": 0.25, "R": 0.25, "F1": 0.25})
    assert report["missing"] == ["q3"] and report["counts"]["documents"] == 2
    zero = _run("eval", "bioasq", "--phase", "A", "--gold", str(files["gold"]), "--system", str(files["a"]),
                "--missing", "zero", "--json", str(out))
    assert "scored 0: --missing zero" in zero
    assert json.loads(out.read_text())["measures"]["documents"]["MAP"] == pytest.approx(5 / 18)


def test_eval_phase_b(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    text = _run("eval", "bioasq", "--phase", "B", "--gold", str(files["gold"]), "--system", str(files["b"]),
                "--json", str(out))
    assert "yesno      accuracy 1.0000" in text and "ideal" in text
    m = json.loads(out.read_text())["measures"]
    # one yes/no question, answered yes: F1(yes) 1, F1(no) 0/0 -> 0
    assert m["yesno"] == pytest.approx({"accuracy": 1.0, "f1_yes": 1.0, "f1_no": 0.0, "macro_f1": 0.5})
    assert m["factoid"] == pytest.approx({"strict_accuracy": 0.0, "lenient_accuracy": 1.0, "MRR": 0.5})
    assert m["list"] == pytest.approx({"P": 0.5, "R": 0.5, "F1": 0.5})
    # ROUGE-2 recall: q1 3/5, q2 0 (empty answer), q3 1 -> 8/15; SU4 recall: 5/7, 0, 1
    assert m["ideal"]["rouge2_recall"] == pytest.approx((0.6 + 0 + 1) / 3)
    assert m["ideal"]["rougesu4_recall"] == pytest.approx((5 / 7 + 0 + 1) / 3)
    no_rouge = _run("eval", "bioasq", "--phase", "B", "--gold", str(files["gold"]), "--system", str(files["b"]),
                    "--no-rouge")
    assert "ideal" not in no_rouge


def test_eval_reports_bad_input_cleanly(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad_gold.json"
    bad.write_text(json.dumps({"questions": [{"id": "q1", "type": "yesno"}]}))
    result = CliRunner().invoke(cli, ["eval", "bioasq", "--phase", "A", "--gold", str(bad), "--system",
                                      str(files["a"])])
    assert result.exit_code == 1
    assert "(questions[0] (id q1)): the question has no 'body'" in result.output and "hint:" in result.output


def test_validate_bioasq_ok_and_invalid(files: dict[str, Path], tmp_path: Path) -> None:
    ok = _run("validate", "bioasq", "--phase", "A", str(files["a"]), "--questions", str(files["gold"]),
              code=255)  # q3 is not answered
    assert "1 input questions without an answer: q3" in ok
    assert (tmp_path / "a.json.errlog").read_text().strip() == "1 input questions without an answer: q3"
    text = _run("validate", "bioasq", "--phase", "B", str(files["b"]), "--questions", str(files["gold"]))
    assert f"{files['b']}: OK (3 questions, 1 warnings)" in text
    assert "warning: questions[1] (id q2): empty ideal_answer" in text
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"questions": [{"id": "q1", "ideal_answer": "x", "exact_answer": "Yes."}]}))
    out = _run("validate", "bioasq", "--phase", "B", str(bad), code=255)
    assert "exactly \"yes\" or \"no\"" in out and "1 errors, written to" in out
    assert (tmp_path / "bad.json.errlog").exists()
    bad.write_text(json.dumps({"questions": [{"id": "q1", "ideal_answer": "x", "exact_answer": "yes"}]}))
    assert "OK (1 questions" in _run("validate", "bioasq", "--phase", "A+", str(bad))
    assert not (tmp_path / "bad.json.errlog").exists()  # a stale errlog is removed


def test_validate_keeps_the_task_kinds(files: dict[str, Path]) -> None:
    assert "{biogen-a|biogen-b|biogen24}" in _run("validate", "--help")
    assert "--phase [A|A+|B]" in _run("validate", "bioasq", "--help")
    assert "Missing option '--phase'" in _run("validate", "bioasq", str(files["a"]), code=2)


DEV = shared_data_dir() / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"


@pytest.mark.slow
@pytest.mark.skipif(not DEV.exists(), reason="shared BioASQ dev file not present")
def test_dev_gold_scored_against_itself(tmp_path: Path) -> None:
    """The gold file as a run: 1.0 wherever the 10-document/10-snippet cap allows it (recall cannot be 1 for a
    question with more than 10 gold documents or snippets; GMAP is exp(log(1 + 1e-5)))."""
    out = tmp_path / "a.json"
    _run("eval", "bioasq", "--phase", "A", "--gold", str(DEV), "--system", str(DEV), "--json", str(out))
    a = json.loads(out.read_text())
    assert a["counts"] == {"gold": 1502, "documents": 1502, "snippets": 1502, "missing": 0}
    assert a["measures"]["documents"]["MAP"] == 1.0 and a["measures"]["documents"]["P"] == 1.0
    assert a["measures"]["documents"]["GMAP"] == pytest.approx(1.00001)
    assert a["measures"]["snippets"]["P"] == 1.0
    short = [q for q, v in a["per_question"].items() if v["doc_recall"] < 1.0 or v["snippet_recall"] < 1.0]
    assert all(v["doc_recall"] == 1.0 and v["snippet_recall"] == 1.0 for q, v in a["per_question"].items()
               if q not in short)
    _run("eval", "bioasq", "--phase", "B", "--gold", str(DEV), "--system", str(DEV), "--no-rouge",
         "--json", str(out))
    b = json.loads(out.read_text())
    assert b["counts"] == {"gold": 1502, "yesno": 402, "factoid": 481, "list": 266, "ideal": 0, "missing": 0}
    assert all(v == 1.0 for group in ("yesno", "factoid", "list") for v in b["measures"][group].values())
    # ROUGE on a sample (the stemmer is the slow part): the first gold ideal answer matches itself
    from medcite.evaluate.bioasq import evaluate_phase_b
    from medcite.tasks.bioasq_format import read_phase_b_run, read_questions

    questions = read_questions(DEV)[:150]
    ideal = evaluate_phase_b(questions, read_phase_b_run(DEV)).measures["ideal"]
    assert ideal == pytest.approx({"rouge2_recall": 1.0, "rouge2_f1": 1.0, "rougesu4_recall": 1.0,
                                   "rougesu4_f1": 1.0})
