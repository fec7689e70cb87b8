"""TREC BioGen 2025 Task A: the input reader, the submission writer (golden lines) and the validator.

Every official rule and every medcite rule of docs/TASK_A.md has a case that breaks it; a hypothesis property
checks that whatever the writer writes from valid results passes the validator and reads back unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medcite.errors import ConfigError, InputError
from medcite.tasks.biogen_a_format import (
    OFFICIAL_QA_IDS_2025,
    GroundedSentence,
    GroundingItem,
    GroundingSentence,
    read_task_a,
    read_task_a_run,
    task_a_line,
    validate_task_a,
    write_task_a,
)
from medcite.tasks.biogen_b_validate import write_errlog

INPUT = [
    {"meta_data": {"qa_id": "116", "question": "Are there ways to prevent sleep apnea?"},
     "answer": [{"text": "  Weight loss helps.\t", "existing_supported_citations": [31234567, "29876543"]},
                {"text": "CPAP treats it.", "existing_supported_citations": None}]},
    {"metadata": {"qa_id": 117, "question": "Q2?", "extra": 1},
     "answer": [{"text": "Only one sentence.", "existing_supported_citations": ["111"]}]},
]


def write(path: Path, data: Any, jsonl: bool = False) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in data) + "\n" if jsonl else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def items(tmp_path: Path) -> list[GroundingItem]:
    return read_task_a(write(tmp_path / "in.json", INPUT))


def corpus(pmids: set[str]):
    return lambda ps: {p for p in ps if p in pmids}


# ---- reader -------------------------------------------------------------------------------------------------


def test_reader_keeps_text_exactly_and_pmids_as_strings(items: list[GroundingItem]) -> None:
    assert [it.qa_id for it in items] == ["116", "117"]
    assert items[0].question == "Are there ways to prevent sleep apnea?"
    assert items[0].sentences == (GroundingSentence("  Weight loss helps.\t", ("31234567", "29876543")),
                                  GroundingSentence("CPAP treats it.", ()))
    assert items[1].metadata == {"qa_id": 117, "question": "Q2?", "extra": 1}


def test_reader_reads_jsonl_like_a_list(tmp_path: Path, items: list[GroundingItem]) -> None:
    assert read_task_a(write(tmp_path / "in.jsonl", INPUT, jsonl=True)) == items


def test_reader_splits_jsonl_on_newlines_only(tmp_path: Path) -> None:
    data = [{"metadata": {"qa_id": "1", "question": "q"}, "answer": [{"text": "a\u2028b\u0085c"}]},
            {"metadata": {"qa_id": "2", "question": "q"}, "answer": [{"text": "d"}]}]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in data), encoding="utf-8")
    assert [s.text for it in read_task_a(path) for s in it.sentences] == ["a\u2028b\u0085c", "d"]


def _item(**answer: Any) -> dict[str, Any]:
    return {"metadata": {"qa_id": "9", "question": "q"}, "answer": [{"text": "ok"}, answer]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", r"in\.json: the file is empty"),
        ("[]", r"no items"),
        ('[{"metadata": {"qa_id": "1", "question": "q"},\n "answer": [}]', r"\(line 2, column 13\): not valid JSON"),
        ('{"metadata": {"qa_id": "1", "question": "q"}, "answer": [{"text": "a"}]}\n{"meta', r"\(line 2\): not valid"),
        ([{"answer": [{"text": "a"}]}], r"\(item \[0\]\): no 'metadata' object"),
        ([{"metadata": {"question": "q"}, "answer": [{"text": "a"}]}], r"\(item \[0\]\): the metadata has no 'qa_id'"),
        ([{"metadata": {"qa_id": "", "question": "q"}, "answer": []}], r"\(item \[0\]\): the metadata has no 'qa_id'"),
        ([{"metadata": {"qa_id": "5"}, "answer": [{"text": "a"}]}], r"\(item \[0\] \(qa_id 5\)\): .*no 'question'"),
        ([{"metadata": {"qa_id": "5", "question": "q"}}], r"\(item \[0\] \(qa_id 5\)\): 'answer' must be a non-empty"),
        ([{"metadata": {"qa_id": "5", "question": "q"}, "answer": []}], r"'answer' must be a non-empty"),
        ([_item(existing_supported_citations=[1])], r"\(item \[0\] \(qa_id 9\), answer\[1\]\): .*no 'text'"),
        ([_item(text=" \n ")], r"answer\[1\]\): the sentence's text is empty"),
        ([_item(text="t", existing_supported_citations=[0])], r"answer\[1\]\): .* holds 0, which is not a PMID"),
        ([_item(text="t", existing_supported_citations=["12a"])], r"holds '12a', which is not a PMID"),
        ([_item(text="t", existing_supported_citations=[True])], r"holds True, which is not a PMID"),
        ([_item(text="t", existing_supported_citations=[1.5])], r"holds 1.5, which is not a PMID"),
        ([_item(text="t", existing_supported_citations="123")], r"must be a list of PMIDs or null, got str"),
        ([_item(text="a"), _item(text="b")], r"\(item \[1\] \(qa_id 9\)\): qa_id 9 appears twice \(first at item"),
    ],
)
def test_reader_errors_name_file_item_and_sentence(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_task_a(path)


def test_reader_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_task_a(tmp_path / "absent.json")


# ---- writer -------------------------------------------------------------------------------------------------


def results(items: list[GroundingItem]) -> dict[str, list[GroundedSentence]]:
    first, second = items[0].sentences
    return {"116": [GroundedSentence.of(first, ["33333333", "1"], ["44444444"]), GroundedSentence.of(second)],
            "117": [GroundedSentence.of(items[1].sentences[0], contradicted=["2"])]}


def test_writer_golden_str_and_int(tmp_path: Path, items: list[GroundingItem]) -> None:
    write_task_a(tmp_path / "s.jsonl", items, results(items), team_id="t", run_id="t-run1")
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text(encoding="utf-8").split("\n") if x]
    assert lines[0] == {
        "metadata": {"team_id": "t", "run_id": "t-run1", "qa_id": "116",
                     "question": "Are there ways to prevent sleep apnea?"},
        "answer": [{"text": "  Weight loss helps.\t", "existing_supported_citations": ["31234567", "29876543"],
                    "supported_citations": ["33333333", "1"], "contradicted_citations": ["44444444"]},
                   {"text": "CPAP treats it.", "existing_supported_citations": [], "supported_citations": [],
                    "contradicted_citations": []}],
    }
    assert lines[1]["metadata"]["qa_id"] == "117" and len(lines) == 2
    as_int = task_a_line(items[0], results(items)["116"], team_id="t", run_id="r", pmid_type="int")
    assert as_int["answer"][0]["existing_supported_citations"] == [31234567, 29876543]
    assert as_int["answer"][0]["supported_citations"] == [33333333, 1]
    assert as_int["answer"][0]["contradicted_citations"] == [44444444]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: GroundedSentence(s.text, s.existing, ("1", "2", "3", "4")),
         r"s.jsonl: qa_id 116, answer\[0\]: supported.* 4 PMIDs"),
        (lambda s: GroundedSentence(s.text, s.existing, (), ("1", "2", "3", "4")), r"contradicted.* 4 PMIDs"),
        (lambda s: GroundedSentence(s.text, s.existing, ("31234567",)), r"repeats existing.*31234567"),
        (lambda s: GroundedSentence(s.text, s.existing, (), ("29876543",)), r"contradicted_citations repeats"),
        (lambda s: GroundedSentence(s.text, s.existing, ("5", "5")), r"lists a PMID twice"),
        (lambda s: GroundedSentence(s.text, s.existing, ("5",), ("5",)), r"both supporting and contradicting: 5"),
        (lambda s: GroundedSentence(s.text, s.existing, ("05",)), r"'05', which is not a PMID"),
        (lambda s: GroundedSentence(s.text.strip(), s.existing), r"text 'Weight loss helps.' is not the input's"),
        (lambda s: GroundedSentence(s.text, ()), r"existing PMIDs \[\] are not the input's"),
    ],
)
def test_writer_refuses_broken_results_and_writes_nothing(tmp_path: Path, items: list[GroundingItem], change: Any,
                                                          message: str) -> None:
    out = tmp_path / "s.jsonl"
    out.write_text("old\n")
    res = results(items)
    res["116"][0] = change(res["116"][0])
    with pytest.raises(InputError, match=message):
        write_task_a(out, items, res, team_id="t", run_id="r")
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json", "s.jsonl"]  # no temporary file left


def test_writer_needs_one_result_per_item_and_sentence(tmp_path: Path, items: list[GroundingItem]) -> None:
    res = results(items)
    with pytest.raises(InputError, match=r"without a result \['117'\], not in the input \['999'\]"):
        write_task_a(tmp_path / "s.jsonl", items, {"116": res["116"], "999": []}, team_id="t", run_id="r")
    with pytest.raises(InputError, match=r"qa_id 116: 1 results for 2 sentences"):
        write_task_a(tmp_path / "s.jsonl", items, {**res, "116": res["116"][:1]}, team_id="t", run_id="r")
    with pytest.raises(ConfigError, match="unknown PMID type"):
        write_task_a(tmp_path / "s.jsonl", items, res, team_id="t", run_id="r", pmid_type="float")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="run_id must be a non-empty string"):
        write_task_a(tmp_path / "s.jsonl", items, res, team_id="t", run_id=" ")
    assert not (tmp_path / "s.jsonl").exists()


# ---- validator ----------------------------------------------------------------------------------------------


KNOWN = {"33333333", "1", "44444444", "2"}


def test_written_files_pass_every_check(tmp_path: Path, items: list[GroundingItem]) -> None:
    for pmid_type in ("str", "int"):
        out = tmp_path / f"s-{pmid_type}.jsonl"
        write_task_a(out, items, results(items), team_id="t", run_id="r", pmid_type=pmid_type)  # type: ignore[arg-type]
        rep = validate_task_a(out, inputs=items, in_corpus=corpus(KNOWN),
                              evidence={"116": {"33333333", "1", "44444444"}, "117": {"2"}})
        assert rep.errors == [] and rep.topics == 2
        assert write_errlog(rep) is None


def test_json_list_accepted(tmp_path: Path, items: list[GroundingItem]) -> None:
    lines = [task_a_line(it, results(items)[it.qa_id], team_id="t", run_id="r") for it in items]
    assert validate_task_a(write(tmp_path / "s.json", lines), inputs=items).errors == []


def _line(qa_id: str = "116", **sentence: Any) -> dict[str, Any]:
    s = {"text": "A.", "existing_supported_citations": ["10"], "supported_citations": ["11"],
         "contradicted_citations": ["12"], **sentence}
    return {"metadata": {"team_id": "t", "run_id": "r", "qa_id": qa_id, "question": "q"},
            "answer": [{k: v for k, v in s.items() if v != "DROP"}]}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        # the official validator's rules
        ([{"meta_data": _line()["metadata"], "answer": []}], "missing 'metadata' object (the starter kit writes"),
        ([{"metadata": {"qa_id": 116}, "answer": []}], "'metadata.qa_id' must be a non-empty string, got 116"),
        ([_line(text="DROP")], "answer[0]: missing field 'text'"),
        ([_line(supported_citations="DROP")], "missing field 'supported_citations'"),
        ([_line(contradicted_citations="DROP")], "missing field 'contradicted_citations'"),
        ([_line(supported_citations=["10"])], "supported_citations overlap existing_supported_citations: 10"),
        ([_line(supported_citations=[10])], "overlap existing_supported_citations: 10 (as int vs string"),
        # the guidelines' rules
        ([_line(supported_citations=["1", "2", "3", "4"])], "4 supported_citations (at most 3)"),
        ([_line(contradicted_citations=["1", "2", "3", "4"])], "4 contradicted_citations (at most 3)"),
        # medcite's
        ([_line(supported_citations=[11], contradicted_citations=["12"])], "PMIDs of mixed types: strings (first"),
        ([_line(existing_supported_citations="DROP")], "missing field 'existing_supported_citations'"),
        ([_line(text="  ")], "'text' must be a non-empty string"),
        ([_line(supported_citations=["x1"])], "'supported_citations' holds 'x1', which is not a PMID"),
        ([_line(supported_citations=["11", "11"])], "'supported_citations' lists a PMID twice"),
        ([_line(contradicted_citations=["10"])], "contradicted_citations overlap existing_supported_citations: 10"),
        ([_line(contradicted_citations=["11"])], "PMIDs both supporting and contradicting: 11"),
        ([_line(), _line()], "line 2 (qa_id 116): qa_id 116 appears twice (first at line 1 (qa_id 116))"),
        ([{**_line(), "answer": []}], "'answer' must be a non-empty list"),
        ([{**_line(), "metadata": {"qa_id": "116", "team_id": "t", "run_id": "r"}}], "'metadata.question' must be"),
        ([{**_line(), "metadata": {"qa_id": "116", "team_id": ["t"], "run_id": "r", "question": "q"}}],
         "'metadata.team_id' must be a non-empty string"),
        ([_line(), {**_line("117"), "metadata": {**_line("117")["metadata"], "run_id": "r2"}}],
         "more than one (team_id, run_id)"),
    ],
)
def test_each_violation_is_reported(tmp_path: Path, lines: list[Any], message: str) -> None:
    rep = validate_task_a(write(tmp_path / "s.jsonl", lines, jsonl=True))
    assert any(message in e for e in rep.errors), rep.errors
    assert not rep.ok
    errlog = write_errlog(rep)
    assert errlog == tmp_path / "s.jsonl.errlog" and message in errlog.read_text()


def test_corpus_evidence_and_inputs(tmp_path: Path, items: list[GroundingItem]) -> None:
    lines = [task_a_line(it, results(items)[it.qa_id], team_id="t", run_id="r") for it in items]
    lines[0]["answer"][1]["text"] = "CPAP treats it. "
    lines[0]["answer"][0]["existing_supported_citations"] = ["31234567"]
    lines[0]["metadata"]["question"] = "other?"
    lines.append({**lines[1], "metadata": {**lines[1]["metadata"], "qa_id": "999"}})
    rep = validate_task_a(write(tmp_path / "s.jsonl", lines[:1] + lines[2:], jsonl=True), inputs=items,
                          in_corpus=corpus({"1", "2"}), evidence={"116": {"1", "44444444"}})
    text = "\n".join(rep.errors)
    for expected in [
        "line 1 (qa_id 116): metadata.question is not the input's 'Are there ways to prevent sleep apnea?'",
        "line 1 (qa_id 116), answer[1]: text is not the input's sentence 'CPAP treats it.'",
        "line 1 (qa_id 116), answer[0]: existing_supported_citations are not the input's ['31234567', '29876543']",
        "line 1 (qa_id 116), answer[0]: PMIDs not in the corpus: 33333333, 44444444",
        "line 1 (qa_id 116), answer[0]: PMIDs not in the evidence read for qa_id 116: 33333333",
        "line 2 (qa_id 999), answer[0]: PMIDs not in the evidence read for qa_id 999: 2",
        "qa_ids not in the input: 999",
        "qa_ids without an answer: 117",
    ]:
        assert expected in text
    assert len(rep.errors) == 8


def test_sentence_count_against_input(tmp_path: Path, items: list[GroundingItem]) -> None:
    line = task_a_line(items[0], results(items)["116"], team_id="t", run_id="r")
    line["answer"].pop()
    rep = validate_task_a(write(tmp_path / "s.jsonl", [line], jsonl=True), inputs=items[:1])
    assert rep.errors == ["line 1 (qa_id 116): 1 sentences, the input has 2"]


def test_official_qa_id_set(tmp_path: Path) -> None:
    assert OFFICIAL_QA_IDS_2025 == {str(i) for i in range(116, 156)}
    rep = validate_task_a(write(tmp_path / "s.jsonl", [_line("116"), _line("7")], jsonl=True),
                          expected_qa_ids=OFFICIAL_QA_IDS_2025)
    assert rep.errors[0] == "qa_ids not expected: 7"
    assert rep.errors[1].startswith("qa_ids without an answer: 117, 118,") and rep.errors[1].endswith(", 155")


@pytest.mark.parametrize(("content", "message"), [("", "the file is empty"), ("[]", "no items"),
                                                   ("[1,", "line 1, column 4: not valid JSON")])
def test_unreadable_files(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "s.json").write_text(content)
    assert message in validate_task_a(tmp_path / "s.json").errors[0]


def test_run_reader_is_as_lenient_as_the_scorer(tmp_path: Path) -> None:
    kit = [{"meta_data": {"qa_id": "116", "question": "q"},
            "answer": [{"text": "A.", "existing_supported_citations": None, "supported_citations": [5, 6, 7, 8],
                        "contradicting_citations": [9]}]}]
    run = read_task_a_run(write(tmp_path / "kit.json", kit))
    assert run == {"116": (GroundedSentence("A.", (), ("5", "6", "7", "8"), ("9",)),)}
    kit[0]["answer"][0].pop("supported_citations")
    with pytest.raises(InputError, match=r"answer\[0\]\): 'supported_citations' must be a list of PMIDs, got"):
        read_task_a_run(write(tmp_path / "kit.json", kit))


# ---- property: write -> validate -> read back ---------------------------------------------------------------

pmids = st.integers(min_value=1, max_value=10**9).map(str)


@st.composite
def grounded(draw: st.DrawFn) -> tuple[list[GroundingItem], dict[str, list[GroundedSentence]]]:
    items, res = [], {}
    for q in range(draw(st.integers(1, 3))):
        sentences, out = [], []
        for _ in range(draw(st.integers(1, 3))):
            text = draw(st.text(min_size=1, max_size=20).filter(str.strip))
            existing = tuple(draw(st.lists(pmids, max_size=3, unique=True)))
            new = draw(st.lists(pmids.filter(lambda p, e=existing: p not in e), max_size=6, unique=True))
            cut = draw(st.integers(0, min(3, len(new))))
            sentences.append(GroundingSentence(text, existing))
            out.append(GroundedSentence(text, existing, tuple(new[:cut]), tuple(new[cut:cut + 3])))
        items.append(GroundingItem(str(116 + q), f"question {q}?", tuple(sentences)))
        res[str(116 + q)] = out
    return items, res


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=grounded(), pmid_type=st.sampled_from(["str", "int"]))
def test_whatever_the_writer_writes_validates_and_reads_back(tmp_path: Path, case: Any, pmid_type: Any) -> None:
    items, res = case
    out = tmp_path / "s.jsonl"
    write_task_a(out, items, res, team_id="t", run_id="r", pmid_type=pmid_type)
    known = {p for s in res.values() for g in s for p in g.supported + g.contradicted}
    evidence = {q: {p for g in s for p in g.supported + g.contradicted} for q, s in res.items()}
    assert validate_task_a(out, inputs=items, in_corpus=corpus(known), evidence=evidence).errors == []
    assert read_task_a_run(out) == {q: tuple(s) for q, s in res.items()}
