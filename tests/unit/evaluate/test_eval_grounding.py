"""Task A measures on tiny inline runs with hand-computed values; the judgement readers; `medcite eval biogen-a`.

The CLI tests live here (not under tests/unit/cli) because this file owns the Task A measures they print.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.errors import ConfigError, InputError
from medcite.evaluate.grounding import (
    POSITIVE,
    Counts,
    Judgement,
    Label,
    evaluate_grounding,
    parse_label,
    read_judgements,
    scored_pmids,
    sentence_counts,
)
from medcite.tasks.biogen_a_format import GroundedSentence as S
from medcite.tasks.biogen_a_format import GroundingItem, GroundingSentence, write_task_a

SUP, PSUP, CON, PCON = Label.SUPPORTS, Label.PARTIALLY_SUPPORTS, Label.CONTRADICTS, Label.PARTIALLY_CONTRADICTS
NEU, NR = Label.NEUTRAL, Label.NOT_RELEVANT
STRICT_S, RELAXED_S = POSITIVE[("support", "strict")], POSITIVE[("support", "relaxed")]


# ---- one sentence -------------------------------------------------------------------------------------------


def test_labels_in_every_official_spelling() -> None:
    assert parse_label("Supports") is parse_label("supported") is parse_label("Support") is SUP
    assert parse_label("partial-supported") is parse_label("Partially Supports") is parse_label("partial_support") \
        is PSUP
    assert parse_label("Contradict") is parse_label("contradicted") is CON
    assert parse_label("partially contradicts") is PCON
    assert parse_label("Not relevant") is parse_label("not_relevant") is NR and parse_label("Neutral") is NEU
    assert parse_label("maybe") is None


def test_sentence_counts_partial_match_with_an_unjudged_pmid() -> None:
    labels = {"a": SUP, "b": NEU, "d": SUP, "e": PSUP}
    strict = sentence_counts(["a", "b", "c"], labels, STRICT_S)
    # a right, b judged wrong, c unjudged (left out); positives a, d
    assert strict == Counts(tp=1, fp=1, positives=2, unjudged=1)
    assert strict.scores() == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "soft_recall": 1.0}
    relaxed = sentence_counts(["a", "b", "c"], labels, RELAXED_S)
    # positives a, d, e: P = 1/2, R = 1/3, F1 = 2 * 1/2 * 1/3 / (1/2 + 1/3) = 0.4
    assert relaxed == Counts(1, 1, 3, 1)
    assert relaxed.scores() == pytest.approx({"precision": 0.5, "recall": 1 / 3, "f1": 0.4, "soft_recall": 1.0})


@pytest.mark.parametrize(
    ("predicted", "labels", "counts"),
    [
        ([], {"a": SUP, "b": SUP}, Counts(0, 0, 2, 0)),  # nothing predicted: all 0
        (["b"], {"a": SUP, "b": NEU}, Counts(0, 1, 1, 0)),  # all wrong
        (["x", "y"], {"a": SUP}, Counts(0, 0, 1, 2)),  # only unjudged PMIDs: precision 0 (no judged prediction)
        (["a"], {"a": SUP}, Counts(1, 0, 1, 0)),  # all right
    ],
)
def test_sentence_counts_edge_cases(predicted: list[str], labels: dict[str, Label], counts: Counts) -> None:
    assert sentence_counts(predicted, labels, STRICT_S) == counts
    expected = 1.0 if counts.tp else 0.0
    assert counts.scores() == {"precision": expected, "recall": expected, "f1": expected, "soft_recall": expected}


def test_scored_pmids_are_what_the_official_scorer_reads() -> None:
    s = S("x", ("10",), ("10", "11", "11", "12", "13"), ("20", "21", "22", "23"))
    assert scored_pmids(s, "support") == ["11", "12"]  # existing removed, first 3 ([11, 11, 12]), each once
    assert scored_pmids(s, "contradict") == ["20", "21", "22"]


# ---- a run --------------------------------------------------------------------------------------------------

RUN = {
    "1": (S("Statins lower LDL.", ("10",), ("10", "11", "12", "13", "14"), ("20",)),
          S("They   reduce events.", (), (), ("21", "22"))),
    "2": (S("Aspirin helps.", (), ("31",), ()),),
    "3": (S("Unjudged.", (), ("41",), ()),),
}
JUDGEMENTS = [
    Judgement("1", 0, "11", SUP), Judgement("1", 0, "12", PSUP), Judgement("1", 0, "14", SUP),
    Judgement("1", 0, "20", CON), Judgement("1", 0, "10", SUP),
    Judgement("1", 1, "21", NEU), Judgement("1", 1, "23", CON),
    Judgement("2", 0, "31", NR), Judgement("2", 0, "32", PCON),
    Judgement("4", 0, "1", SUP),  # a question not in the run
    Judgement("2", 5, "1", SUP),  # a sentence not in the run
]
# Per sentence (P, R, F1, soft):
# 1/0 support strict: scored 11 12 13; positives 11 14 10; tp 11, fp 12, 13 unjudged: 1/2, 1/3, 0.4, 1
#     support relaxed: positives 11 12 14 10; tp 11 12: 1, 1/2, 2/3, 1;  contradict (both): 20 right: 1, 1, 1, 1
# 1/1 support: nothing predicted, nothing positive: 0s; contradict: 21 wrong, 22 unjudged, positive 23: 0s
# 2/0 support: 31 wrong: 0s; contradict: nothing predicted (relaxed positive 32): 0s


def test_question_average_hand_computed() -> None:
    rep = evaluate_grounding(RUN, JUDGEMENTS)
    agg = rep.aggregate
    # question 1 = mean of its 2 sentences, question 2 = 0s; then the mean of the 2 questions
    assert agg["support"]["strict"] == pytest.approx({"precision": 0.125, "recall": 1 / 12, "f1": 0.1,
                                                      "soft_recall": 0.25})
    assert agg["support"]["relaxed"] == pytest.approx({"precision": 0.25, "recall": 0.125, "f1": 1 / 6,
                                                       "soft_recall": 0.25})
    for mode in ("strict", "relaxed"):
        assert agg["contradict"][mode] == pytest.approx(dict.fromkeys(("precision", "recall", "f1", "soft_recall"),
                                                                      0.25))
    assert rep.per_question["1"]["support"]["strict"] == pytest.approx({"precision": 0.25, "recall": 1 / 6,
                                                                        "f1": 0.2, "soft_recall": 0.5})
    assert (rep.questions, rep.sentences) == (2, 3)
    assert rep.unjudged_questions == ["3"] and rep.missing_from_run == ["4"] and rep.unmatched_judgements == 1


def test_sentence_average_and_micro_hand_computed() -> None:
    rep = evaluate_grounding(RUN, JUDGEMENTS, average="sentence")
    assert rep.aggregate["support"]["strict"] == pytest.approx({"precision": 1 / 6, "recall": 1 / 9,
                                                                "f1": 0.4 / 3, "soft_recall": 1 / 3})
    assert rep.aggregate["support"]["relaxed"] == pytest.approx({"precision": 1 / 3, "recall": 1 / 6,
                                                                 "f1": 2 / 9, "soft_recall": 1 / 3})
    # micro, support strict: tp 11; fp 12 and 31; positives 11 14 10; unjudged 13
    assert rep.micro["support"]["strict"] == pytest.approx({"tp": 1, "fp": 2, "positives": 3, "unjudged": 1,
                                                            "precision": 1 / 3, "recall": 1 / 3, "f1": 1 / 3})
    # micro, contradict relaxed: tp 20; fp 21; positives 20 23 32; unjudged 22: P 1/2, R 1/3, F1 0.4
    assert rep.micro["contradict"]["relaxed"] == pytest.approx({"tp": 1, "fp": 1, "positives": 3, "unjudged": 1,
                                                                "precision": 0.5, "recall": 1 / 3, "f1": 0.4})


def test_empty_predictions_and_no_judged_question() -> None:
    empty = {"1": tuple(S(s.text, s.existing) for s in RUN["1"])}
    rep = evaluate_grounding(empty, JUDGEMENTS)
    assert all(v == 0.0 for k in rep.aggregate.values() for m in k.values() for v in m.values())
    none = evaluate_grounding({"3": RUN["3"]}, JUDGEMENTS)
    assert none.questions == 0 and none.unjudged_questions == ["3"]
    with pytest.raises(ConfigError, match="unknown average"):
        evaluate_grounding(RUN, JUDGEMENTS, average="topic")  # type: ignore[arg-type]


def test_a_later_label_wins_as_in_the_scorer() -> None:
    rep = evaluate_grounding({"2": RUN["2"]}, [Judgement("2", 0, "31", NR), Judgement("2", 0, "31", SUP)])
    assert rep.aggregate["support"]["strict"]["precision"] == 1.0


# ---- judgement files ----------------------------------------------------------------------------------------


def test_tsv_and_jsonl(tmp_path: Path) -> None:
    tsv = tmp_path / "q.tsv"
    tsv.write_text("qa_id\tsentence_index\tpmid\tlabel\n1\t0\t11\tSupports\n\n1\t1\t23\tpartially supports\n")
    expected = [Judgement("1", 0, "11", SUP), Judgement("1", 1, "23", PSUP)]
    assert read_judgements(tsv) == expected
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"qa_id": "1", "sentence_index": 0, "pmid": 11, "label": "supports"}\n'
                     '{"qa_id": 1, "sentence_index": "1", "pmid": "23", "label": "Partially supported"}\n')
    assert read_judgements(jsonl) == expected


OFFICIAL_CSV = '''qid,answer_sentence,citation,judgement
1,They reduce events.,"Title: A trial
PMID: 23
Abstract: ...",Contradicts
1,Statins lower LDL .,PMID: 11,Supported
1,Not a sentence of the run.,PMID: 99,Supports
1,Statins lower LDL.,no identifier here,Supports
2,Aspirin helps.,PMID:31,partial-supported
'''


def test_official_csv_matches_sentences_by_text(tmp_path: Path) -> None:
    path = tmp_path / "judgements.csv"
    path.write_text(OFFICIAL_CSV)
    got = read_judgements(path)
    assert got == [Judgement("1", "They reduce events.", "23", CON), Judgement("1", "Statins lower LDL .", "11", SUP),
                   Judgement("1", "Not a sentence of the run.", "99", SUP),
                   Judgement("2", "Aspirin helps.", "31", PSUP)]  # the row without a PMID is skipped
    rep = evaluate_grounding(RUN, got)
    assert rep.unmatched_judgements == 1
    # 1/0 support strict: 11 right, 12 and 13 unjudged, positive 11: P 1, R 1; 2/0 relaxed: 31 right
    assert rep.per_question["1"]["support"]["strict"]["precision"] == 0.5  # (1 + 0) / 2 sentences
    assert rep.micro["support"]["strict"]["tp"] == 1 and rep.micro["support"]["relaxed"]["tp"] == 2
    assert rep.micro["contradict"]["strict"] == pytest.approx({"tp": 0, "fp": 0, "positives": 1, "unjudged": 3,
                                                               "precision": 0, "recall": 0, "f1": 0})


def test_official_automatic_labels_reproduce_the_kit(tmp_path: Path) -> None:
    labels = [{"metadata": {"qa_id": "5", "question": "q"}, "answer": [
        {"text": "A.", "existing_supported_citations": None, "supported_citations": [1, 2],
         "contradicted_citations": [3], "supported_citations_labels": {"1": "Supports", "2": "Neutral"},
         "contradicted_citations_labels": {"3": "Supports"}},
        {"text": "B.", "existing_supported_citations": [], "supported_citations": [], "contradicted_citations": [4],
         "supported_citations_labels": {}, "contradicted_citations_labels": {"4": "Contradicts"}}]}]
    path = tmp_path / "run_labels.json"
    path.write_text(json.dumps(labels))
    from medcite.tasks.biogen_a_format import read_task_a_run

    rep = evaluate_grounding(read_task_a_run(path), read_judgements(path), average="sentence")
    # the kit: sentence A support tp 1, fp 2, fn 3 -> 1/2; contradict 3 is "Supports": P 0; B: contradict 1
    assert rep.aggregate["support"]["strict"] == pytest.approx({"precision": 0.25, "recall": 0.25, "f1": 0.25,
                                                                "soft_recall": 0.5})
    assert rep.aggregate["contradict"]["strict"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5,
                                                                   "soft_recall": 0.5})


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("q.tsv", "", r"q.tsv: the judgement file is empty"),
        ("q.tsv", "1\t0\t11\tmaybe\n", r"q.tsv \(line 1\): unknown judgement label 'maybe'"),
        ("q.tsv", "1\t0\t11\n", r"\(line 1\): expected 4 tab-separated columns"),
        ("q.tsv", "1\t-1\t11\tsupports\n", r"\(line 1\): sentence_index '-1' must be an integer from 0"),
        ("q.tsv", "1\t0\tPMID11\tsupports\n", r"\(line 1\): 'PMID11' is not a PMID"),
        ("q.jsonl", '{"qa_id": "1"}\n', r"\(line 1\): each line needs qa_id, sentence_index, pmid and label"),
        ("q.jsonl", '{"qa_id": "1", "sentence_index": 0, "pmid": 1, "label": "supports"}\n{x\n',
         r"\(line 2\): not valid JSON"),
        ("q.csv", "qid,answer_sentence,judgement\n1,a,supports\n",
         r"\(line 1\): the CSV lacks the columns \['citation'\]"),
        ("q.csv", "qid,answer_sentence,citation,judgement\n1,a,PMID: 5,meh\n", r"\(line 2\): unknown judgement label"),
        ("q.json", '[{"answer": []}]', r"\(item \[0\]\): each item needs metadata.qa_id"),
    ],
)
def test_judgement_file_errors(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_judgements(path)


# ---- medcite eval biogen-a ----------------------------------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    items = [GroundingItem("1", "q1?", (GroundingSentence("Statins lower LDL.", ("10",)),
                                        GroundingSentence("They   reduce events."))),
             GroundingItem("2", "q2?", (GroundingSentence("Aspirin helps."),))]
    results = {"1": [S("Statins lower LDL.", ("10",), ("11", "12", "13"), ("20",)),
                     S("They   reduce events.", (), (), ("21", "22"))],
               "2": [S("Aspirin helps.", (), ("31",), ())]}
    out = tmp_path / "run"
    write_task_a(out / "submission.jsonl", items, results, team_id="t", run_id="r", pmid_type="int")
    lines = [f"{j.qa_id}\t{j.sentence}\t{j.pmid}\t{j.label.value}" for j in JUDGEMENTS]
    (tmp_path / "q.tsv").write_text("\n".join(lines) + "\n")
    return out


def test_cli_scores_a_run_directory(run_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "biogen-a", "--run", str(run_dir), "--qrels",
                                      str(run_dir.parent / "q.tsv")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {" ".join(line.split()[:2]): line.split()[2:] for line in result.output.splitlines()
            if line.startswith(("support", "contradict"))}
    # the run is RUN without question 3 and without PMID 14: the same values as test_question_average_hand_computed
    assert rows["support strict"] == ["0.1250", "0.0833", "0.1000", "0.2500"]
    assert rows["support relaxed"] == ["0.2500", "0.1250", "0.1667", "0.2500"]
    assert rows["contradict strict"] == rows["contradict relaxed"] == ["0.2500"] * 4
    assert "questions 2, sentences 3 (macro average by question)" in result.output
    assert "judged but not in the run (not scored): 4" in result.output
    data = json.loads((run_dir / "metrics_task_a.json").read_text())
    assert data["aggregate"]["support"]["strict"]["f1"] == pytest.approx(0.1)
    assert data["run"] == str(run_dir / "submission.jsonl") and data["missing_from_run"] == ["4"]


def test_cli_file_json_out_and_sentence_average(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    args = ["eval", "biogen-a", "--run", str(run_dir / "submission.jsonl"), "--qrels", str(tmp_path / "q.tsv"),
            "--average", "sentence", "--json", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["aggregate"]["support"]["strict"]["precision"] == pytest.approx(1 / 6)
    assert not (run_dir / "metrics_task_a.json").exists()


def test_cli_bad_judgements_are_a_clean_error(run_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.tsv").write_text("1\t0\t11\tmaybe\n")
    result = CliRunner().invoke(cli, ["eval", "biogen-a", "--run", str(run_dir), "--qrels", str(tmp_path / "bad.tsv")])
    assert result.exit_code == 1
    assert "unknown judgement label 'maybe'" in result.output and "hint: labels: supports" in result.output
