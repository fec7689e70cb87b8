"""BioASQ Task b files: every variant the reader accepts, every bad input it refuses (naming the question),
golden writer output, and the validators' rules."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from medcite.errors import InputError
from medcite.paths import shared_data_dir
from medcite.tasks.bioasq_format import (
    pmid_of,
    read_phase_a_run,
    read_phase_b_run,
    read_questions,
    validate_phase_a,
    validate_phase_b,
    write_phase_a,
    write_phase_b,
)
from medcite.types import QAAnswer, Question, Snippet

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"


def _file(tmp_path: Path, questions: Any, name: str = "q.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"questions": questions} if isinstance(questions, list) else questions))
    return path


def _snip(doc: Any = URL + "11", **kw: Any) -> dict[str, Any]:
    return {"document": doc, "text": "abc", "beginSection": "abstract", "offsetInBeginSection": 0,
            "endSection": "abstract", "offsetInEndSection": 3, **kw}


# ---- reading: variants -------------------------------------------------------------------------------------


def test_phase_a_input_has_only_id_type_body(tmp_path: Path) -> None:
    qs = read_questions(_file(tmp_path, [{"id": "q1", "type": "Yesno", "body": " Is it? "}]))
    assert qs == [Question("q1", "yesno", "Is it?")]


def test_exact_answer_variants(tmp_path: Path) -> None:
    rows = [
        {"id": "y1", "type": "yesno", "body": "b", "exact_answer": "Yes"},
        {"id": "y2", "type": "yesno", "body": "b", "exact_answer": "no"},
        {"id": "y3", "type": "yesno", "body": "b", "exact_answer": ["yes"]},
        {"id": "f1", "type": "factoid", "body": "b", "exact_answer": [["XIa", "factor XIa "], ["FXI"]]},
        {"id": "f2", "type": "factoid", "body": "b", "exact_answer": ["XIa", "factor XIa"]},  # flat: synonyms
        {"id": "f3", "type": "factoid", "body": "b", "exact_answer": "XIa"},
        {"id": "l1", "type": "list", "body": "b", "exact_answer": ["a", "b"]},  # flat: one entity each
        {"id": "l2", "type": "list", "body": "b", "exact_answer": [["a", "A1"], "b", [""], []]},
        {"id": "l3", "type": "list", "body": "b"},
        {"id": "s1", "type": "summary", "body": "b", "exact_answer": "ignored"},
        {"id": "f4", "type": "factoid", "body": "b", "exact_answer": [[5]]},
    ]
    exact = {q.id: q.exact_answer for q in read_questions(_file(tmp_path, rows))}
    assert exact == {
        "y1": "yes", "y2": "no", "y3": "yes",
        "f1": (("XIa", "factor XIa"), ("FXI",)), "f2": (("XIa", "factor XIa"),), "f3": (("XIa",),),
        "l1": (("a",), ("b",)), "l2": (("a", "A1"), ("b",)), "l3": None, "s1": None, "f4": (("5",),),
    }


def test_ideal_documents_and_snippet_variants(tmp_path: Path) -> None:
    rows = [{
        "id": "q1", "type": "summary", "body": "b", "ideal_answer": "One paragraph.",
        "documents": [URL + "0123", "https://pubmed.ncbi.nlm.nih.gov/456/", 789, "789", URL + "11"],
        "snippets": [
            _snip(),
            _snip("22", beginSection="sections.0", endSection="sections.0", offsetInBeginSection="5",
                  offsetInEndSection="9"),
            _snip(URL + "33", beginSection="Title", endSection="title", offsetInBeginSection=-1),
        ],
        "concepts": ["x"], "_body": "old", "_type": "list",
    }, {"id": "q2", "type": "summary", "body": "b", "ideal_answer": ["First.", "", "Second."]},
        {"id": "q3", "type": "summary", "body": "b", "ideal_answer": None}]
    q1, q2, q3 = read_questions(_file(tmp_path, rows))
    assert q1.documents == ("123", "456", "789", "11")  # repeats read once
    assert q1.snippets == (Snippet("11", "abc", "abstract", 0, "abstract", 3),
                           Snippet("22", "abc", "abstract", 5, "abstract", 9),
                           Snippet("33", "abc", "title", -1, "title", 3))
    assert q1.ideal_answers == ("One paragraph.",) and q1.type == "summary"
    assert q2.ideal_answers == ("First.", "Second.") and q3.ideal_answers == ()


def test_gzip_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "q.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"questions": [{"id": "q1", "type": "list", "body": "b"}]}, fh)
    assert [q.id for q in read_questions(path)] == ["q1"]


def test_pmid_of() -> None:
    assert [pmid_of(v) for v in (URL + "007", "42", 42, " 42 ", "http://x.org/42", "PMC42", 0, True, None)] == [
        "7", "42", "42", "42", None, None, None, None, None]


# ---- reading: errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rows, position, words", [
    ([{"id": "q1", "type": "list", "body": "b"}, {"id": "q2", "type": "list"}], "questions[1] (id q2)", "'body'"),
    ([{"id": "q1", "type": "opinion", "body": "b"}], "questions[0] (id q1)", "unknown type 'opinion'"),
    ([{"id": "q1", "body": "b"}], "questions[0] (id q1)", "no 'type'"),
    ([{"id": "q1", "type": "list", "body": "b", "snippets": [{"text": "x"}]}],
     "questions[0] (id q1) snippets[0]", "no 'document'"),
    ([{"id": "q1", "type": "list", "body": "b", "snippets": [_snip(offsetInEndSection="end")]}],
     "questions[0] (id q1) snippets[0]", "offsetInEndSection"),
    ([{"id": "q1", "type": "list", "body": "b", "snippets": [_snip(offsetInBeginSection=9)]}],
     "questions[0] (id q1) snippets[0]", "before offsetInBeginSection"),
    ([{"id": "q1", "type": "list", "body": "b", "snippets": [_snip(beginSection=None)]}],
     "questions[0] (id q1) snippets[0]", "beginSection"),
    ([{"id": "q1", "type": "list", "body": "b", "documents": ["PMC123"]}], "questions[0] (id q1)", "PMC123"),
    ([{"id": "q1", "type": "list", "body": "b"}, {"id": "q1", "type": "list", "body": "b"}],
     "questions[1] (id q1)", "also questions[0]"),
    ([{"type": "list", "body": "b"}], "questions[0]", "no 'id'"),
    (["q1"], "questions[0]", "JSON object"),
    ([{"id": "q1", "type": "yesno", "body": "b", "exact_answer": "maybe"}], "(id q1)", "neither yes nor no"),
    ([{"id": "q1", "type": "list", "body": "b", "exact_answer": {"a": 1}}], "(id q1)", "list of synonym lists"),
    ([{"id": "q1", "type": "list", "body": "b", "exact_answer": [[["a"]]]}], "(id q1)", "two deep"),
    ([{"id": "q1", "type": "list", "body": "b", "ideal_answer": 3}], "(id q1)", "ideal_answer"),
    ([], None, "questions list is empty"),
    ({"data": []}, None, 'no "questions" list'),
])
def test_bad_input_names_file_and_question(tmp_path: Path, rows: Any, position: str | None, words: str) -> None:
    path = _file(tmp_path, rows)
    with pytest.raises(InputError) as err:
        read_questions(path)
    text = str(err.value)
    assert str(path) in text and words in text and err.value.hint
    if position:
        assert err.value.position is not None and position in err.value.position


def test_malformed_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"questions": [\n{"id": "q1",}]}')
    with pytest.raises(InputError, match="not valid JSON") as err:
        read_questions(path)
    assert err.value.position == "line 2, column 13"
    with pytest.raises(InputError, match="no such file"):
        read_questions(tmp_path / "none.json")


# ---- system files ------------------------------------------------------------------------------------------


def test_read_runs_leniently(tmp_path: Path) -> None:
    path = _file(tmp_path, [
        {"id": "q1", "ideal_answer": "It is.", "exact_answer": [["a", "syn"], ["b"], "c"],
         "documents": [URL + "1", URL + "1", URL + "2"], "snippets": [_snip()]},
        {"id": "q2", "exact_answer": "yes", "ideal_answer": ["First.", "Second."]},
        {"id": "q3"},
    ])
    answers = read_phase_b_run(path)
    assert answers == [QAAnswer("q1", ("a", "b", "c"), "It is."), QAAnswer("q2", "yes", "First."),
                       QAAnswer("q3", None, "")]
    runs = read_phase_a_run(path)
    assert runs[0] == Question("q1", "", "", ("1", "2"), (Snippet("11", "abc", "abstract", 0, "abstract", 3),))
    assert runs[2].documents == () and runs[2].snippets == ()


# ---- writers -----------------------------------------------------------------------------------------------

PHASE_A_GOLDEN = """{
  "questions": [
    {
      "id": "q1",
      "documents": [
        "http://www.ncbi.nlm.nih.gov/pubmed/1",
        "http://www.ncbi.nlm.nih.gov/pubmed/2"
      ],
      "snippets": [
        {
          "document": "http://www.ncbi.nlm.nih.gov/pubmed/2",
          "text": "Aspirin helps.",
          "beginSection": "abstract",
          "offsetInBeginSection": 5,
          "endSection": "abstract",
          "offsetInEndSection": 19
        }
      ]
    },
    {
      "id": "q2",
      "documents": [],
      "snippets": []
    }
  ]
}
"""


def test_write_phase_a_golden(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    snippet = Snippet("2", "Aspirin helps.", "abstract", 5, "abstract", 19, score=3.0)
    write_phase_a(out, [Question("q1", "yesno", "b", ("1", "2"), (snippet,)), Question("q2", "list", "b")])
    assert out.read_text() == PHASE_A_GOLDEN
    assert validate_phase_a(out).ok
    assert read_phase_a_run(out)[0].snippets == (Snippet("2", "Aspirin helps.", "abstract", 5, "abstract", 19),)


def test_write_phase_a_keeps_the_first_ten(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    snippets = tuple(Snippet(str(i), "x", "title", 0, "title", 1) for i in range(1, 13))
    write_phase_a(out, [Question("q1", "list", "b", tuple(str(i) for i in range(1, 13)), snippets)])
    q = json.loads(out.read_text())["questions"][0]
    assert len(q["documents"]) == 10 and q["documents"][-1] == URL + "10" and len(q["snippets"]) == 10


@pytest.mark.parametrize("result, words", [
    (Question("q1", "list", "b", ("1", "1")), "listed twice"),
    (Question("q1", "list", "b", ("PMC9",)), "PMC9"),
    (Question("q1", "list", "b", (), (Snippet("1", "x", "methods", 0, "methods", 1),)), "'methods'"),
    (Question("q1", "list", "b", (), (Snippet("1", "x", "title", 0, "abstract", 1),)), "within one section"),
    (Question("q1", "list", "b", (), (Snippet("1", "x", "title", 5, "title", 1),)), "before"),
])
def test_write_phase_a_refuses_and_leaves_no_file(tmp_path: Path, result: Question, words: str) -> None:
    out = tmp_path / "a.json"
    with pytest.raises(InputError, match=words):
        write_phase_a(out, [result])
    assert list(tmp_path.iterdir()) == []


QUESTIONS = [Question("y", "yesno", "b"), Question("f", "factoid", "b"), Question("l", "list", "b"),
             Question("s", "summary", "b")]
ANSWERS = [QAAnswer("y", "Yes", "Yes, it is."), QAAnswer("f", ("XIa", "FXI"), "XIa."),
           QAAnswer("l", ("a", "b"), "a and b."), QAAnswer("s", None, "A summary.")]


def test_write_phase_b_golden(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    write_phase_b(out, ANSWERS, questions=QUESTIONS)
    assert json.loads(out.read_text()) == {"questions": [
        {"id": "y", "ideal_answer": "Yes, it is.", "exact_answer": "yes"},
        {"id": "f", "ideal_answer": "XIa.", "exact_answer": [["XIa"], ["FXI"]]},
        {"id": "l", "ideal_answer": "a and b.", "exact_answer": [["a"], ["b"]]},
        {"id": "s", "ideal_answer": "A summary."},
    ]}
    report = validate_phase_b(out, inputs=QUESTIONS)
    assert report.ok and report.warnings == [] and report.topics == 4
    # read back, scored against itself: every exact answer right
    assert [a.exact for a in read_phase_b_run(out)] == ["yes", ("XIa", "FXI"), ("a", "b"), None]


def test_write_phase_a_plus(tmp_path: Path) -> None:
    out = tmp_path / "aplus.json"
    retrieved = [Question("y", "yesno", "b", ("7",), (Snippet("7", "Yes.", "title", 0, "title", 4),))]
    write_phase_b(out, ANSWERS[:1], questions=QUESTIONS[:1], retrieved=retrieved)
    assert json.loads(out.read_text())["questions"][0] == {
        "id": "y", "ideal_answer": "Yes, it is.", "exact_answer": "yes", "documents": [URL + "7"],
        "snippets": [{"document": URL + "7", "text": "Yes.", "beginSection": "title", "offsetInBeginSection": 0,
                      "endSection": "title", "offsetInEndSection": 4}]}
    assert validate_phase_b(out, inputs=QUESTIONS[:1]).ok


@pytest.mark.parametrize("answers, words", [
    ([QAAnswer("y", "Probably yes", ""), *ANSWERS[1:]], "exactly"),
    ([ANSWERS[0], QAAnswer("f", tuple("abcdef"), ""), *ANSWERS[2:]], "6 factoid candidates"),
    ([ANSWERS[0], QAAnswer("f", ("",), ""), *ANSWERS[2:]], "non-empty string"),
    (ANSWERS[:3], "without an answer: s"),
    ([*ANSWERS, QAAnswer("zz", None, "")], "not a question of the input"),
    ([*ANSWERS, ANSWERS[0]], "answered twice"),
])
def test_write_phase_b_refuses_and_leaves_no_file(tmp_path: Path, answers: list[QAAnswer], words: str) -> None:
    out = tmp_path / "b.json"
    out.write_text("old")  # an existing file stays as it was
    with pytest.raises(InputError, match=words):
        write_phase_b(out, answers, questions=QUESTIONS)
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["b.json"]


def test_write_phase_b_without_questions_uses_the_shape(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    write_phase_b(out, [QAAnswer("y", "NO", "No."), QAAnswer("l", ("a",), "a.")])
    assert [q.get("exact_answer") for q in json.loads(out.read_text())["questions"]] == ["no", [["a"]]]


# ---- validators --------------------------------------------------------------------------------------------


def test_validate_phase_a_lists_every_violation(tmp_path: Path) -> None:
    docs = [URL + str(i) for i in range(1, 12)]
    path = _file(tmp_path, [
        {"id": "q1", "documents": docs, "snippets": [_snip()] * 11},
        {"id": "q2", "documents": ["https://pubmed.ncbi.nlm.nih.gov/5", URL + "6", URL + "6"],
         "snippets": [_snip(beginSection="methods"), _snip(offsetInBeginSection=-2),
                      _snip(offsetInBeginSection=5, offsetInEndSection=2), _snip(endSection="title"),
                      _snip(document="11"), _snip(offsetInEndSection=10)]},
        {"id": "q2", "documents": []},
        {"id": "q9"},
    ])
    rep = validate_phase_a(path, inputs=[Question("q1", "list", "b"), Question("q2", "list", "b"),
                                         Question("q3", "list", "b")])
    assert not rep.ok and rep.topics == 3
    expected = [
        "questions[0] (id q1): 11 documents (at most 10)",
        "questions[0] (id q1): 11 snippets (at most 10)",
        "questions[1] (id q2) documents[0]: 'https://pubmed.ncbi.nlm.nih.gov/5' is not http://www.ncbi.nlm.nih.gov/pubmed/<PMID>",
        "questions[1] (id q2): a document is listed twice",
        "questions[1] (id q2) snippets[0]: beginSection 'methods' is not 'title' or 'abstract'",
        "questions[1] (id q2) snippets[1]: offsetInBeginSection -2 is not a non-negative integer",
        "questions[1] (id q2) snippets[2]: offsetInEndSection 2 is before offsetInBeginSection 5",
        "questions[1] (id q2) snippets[3]: begins in the abstract and ends in the title "
        "(a snippet lies within one section)",
        "questions[1] (id q2) snippets[4]: document '11' is not http://www.ncbi.nlm.nih.gov/pubmed/<PMID>",
        "questions[2] (id q2): answered twice (also questions[1])",
        "questions[3] (id q9): not a question of the input",
        "1 input questions without an answer: q3",
    ]
    assert rep.errors == expected
    assert rep.warnings == [
        "questions[1] (id q2) snippets[5]: the offsets span 10 characters but the text has 3 "
        "(offsetInEndSection is exclusive in BioASQ's files)",
        "questions[3] (id q9): no 'documents' (scored as an empty list)",
        "questions[3] (id q9): no 'snippets' (scored as an empty list)",
    ]


def test_validate_phase_b_rules(tmp_path: Path) -> None:
    long = " ".join(["word"] * 201)
    path = _file(tmp_path, [
        {"id": "y", "ideal_answer": long, "exact_answer": "Yes"},
        {"id": "f", "ideal_answer": "x", "exact_answer": [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]},
        {"id": "l", "ideal_answer": ["x"], "exact_answer": ["a", ["b", "syn"]]},
        {"id": "s", "ideal_answer": "x", "exact_answer": [["a"]]},
        {"id": "f2", "exact_answer": None},
    ])
    inputs = [Question("y", "yesno", "b"), Question("f", "factoid", "b"), Question("l", "list", "b"),
              Question("s", "summary", "b"), Question("f2", "factoid", "b")]
    rep = validate_phase_b(path, inputs=inputs)
    assert rep.errors == [
        "questions[0] (id y): exact_answer 'Yes' must be exactly \"yes\" or \"no\" (the evaluator lowercases it "
        "and looks for 'yes', then 'no', anywhere in it)",
        "questions[1] (id f): 6 factoid candidates (at most 5)",
        "questions[2] (id l): 'ideal_answer' must be one string (a paragraph), got list",
        "questions[2] (id l) exact_answer[0]: 'a' must be an inner list, e.g. [\"a\"]",
    ]
    assert rep.warnings == [
        "questions[0] (id y): ideal_answer has 201 words (BioASQ asks for at most about 200)",
        "questions[2] (id l) exact_answer[1]: only the first string is read (synonyms in submissions are ignored "
        "since BioASQ5)",
        "questions[3] (id s): a summary question takes no exact_answer (it is ignored)",
        "questions[4] (id f2): no ideal_answer (ROUGE scores it 0)",
        "questions[4] (id f2): no exact_answer for this factoid question (scored 0)",
    ]


def test_validate_phase_b_types_from_the_file_or_the_shape(tmp_path: Path) -> None:
    path = _file(tmp_path, [{"id": "a", "type": "factoid", "ideal_answer": "x", "exact_answer": [["1"]] * 6},
                            {"id": "b", "ideal_answer": "x", "exact_answer": "maybe"}])
    assert validate_phase_b(path).errors == [
        "questions[0] (id a): 6 factoid candidates (at most 5)",
        "questions[1] (id b): exact_answer 'maybe' must be exactly \"yes\" or \"no\" (the evaluator lowercases it "
        "and looks for 'yes', then 'no', anywhere in it)"]


def test_validate_unreadable_and_empty_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert validate_phase_b(bad).errors[0].startswith("cannot read the file as JSON")
    assert validate_phase_a(_file(tmp_path, [])).errors == ["the questions list is empty"]
    assert validate_phase_a(_file(tmp_path, [{"documents": []}])).errors == [
        "questions[0]: each question must be an object with a string 'id'"]


# ---- the real dev file -------------------------------------------------------------------------------------

DEV = shared_data_dir() / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"


@pytest.mark.slow
@pytest.mark.skipif(not DEV.exists(), reason="shared BioASQ dev file not present")
def test_every_dev_question_parses() -> None:
    questions = read_questions(DEV)
    assert len(questions) == 1502
    assert Counter(q.type for q in questions) == {"factoid": 481, "yesno": 402, "summary": 353, "list": 266}
    ids = (shared_data_dir() / "bioasq" / "dev_ids.txt").read_text().split()
    assert sorted(q.id for q in questions) == sorted(ids)
    assert all(q.documents and q.snippets and q.ideal_answers for q in questions)
    assert all(q.exact_answer in ("yes", "no") for q in questions if q.type == "yesno")
    assert all(isinstance(q.exact_answer, tuple) and q.exact_answer for q in questions
               if q.type in ("factoid", "list"))
    assert all(q.exact_answer is None for q in questions if q.type == "summary")
    sections = Counter(s.begin_section for q in questions for s in q.snippets)
    assert set(sections) == {"title", "abstract"} and sum(sections.values()) == 13856
    assert all(p.isdigit() for q in questions for p in q.documents)
