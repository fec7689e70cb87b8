from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.tasks.biogen_b_format import biogen24_answer_text, biogen25_line, write_biogen24, write_biogen25
from medcite.tasks.biogen_b_validate import validate_biogen24, validate_biogen25, write_errlog
from medcite.types import Answer, AnswerSentence, Article

ANSWER = Answer("181", [AnswerSentence("Axonal injury is damage to nerve fibres.", ("22802756", "34765068")),
                        AnswerSentence("It can heal partly!", ("111",))])


def corpus(pmids: set[str]):
    return lambda ps: {p for p in ps if p in pmids}


def test_biogen25_line_golden() -> None:
    assert biogen25_line(ANSWER, "t", "t-run1") == {
        "metadata": {"team_id": "t", "run_id": "t-run1", "topic_id": "181"},
        "responses": [
            {"text": "Axonal injury is damage to nerve fibres.", "citations": ["22802756", "34765068"]},
            {"text": "It can heal partly!", "citations": ["111"]},
        ],
    }


def test_biogen24_citations_go_before_final_punctuation() -> None:
    assert biogen24_answer_text(ANSWER) == (
        "Axonal injury is damage to nerve fibres[22802756,34765068]. It can heal partly[111]!"
    )


def test_valid_files_pass(tmp_path: Path) -> None:
    f25, f24 = tmp_path / "run.jsonl", tmp_path / "run.json"
    write_biogen25(f25, [ANSWER], "t", "r")
    write_biogen24(f24, [ANSWER], team_id="t", run_name="r", contact_email="a@b.org")
    known = corpus({"22802756", "34765068", "111"})
    assert validate_biogen25(f25, in_corpus=known, expected_topics=["181"]).errors == []
    assert validate_biogen24(f24, in_corpus=known, expected_topics=["181"]).errors == []


def test_biogen25_violations_are_each_reported(tmp_path: Path) -> None:
    lines = [
        {"metadata": {"team_id": "t", "run_id": "r", "topic_id": "1"},
         "responses": [{"text": " ".join(["w"] * 251), "citations": ["1", "2", "3", "4"]}]},
        {"metadata": {"team_id": "t", "run_id": "r", "topic_id": "2"}, "responses": []},
        {"metadata": {"team_id": "t", "run_id": "r", "topic_id": "2"},
         "responses": [{"text": "x", "citations": [12345, "999"]}]},
    ]
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    rep = validate_biogen25(f, in_corpus=corpus({"1", "2", "3", "4"}), expected_topics=["1", "2", "3"],
                            evidence={"1": {"1", "2"}})
    text = "\n".join(rep.errors)
    assert "251 words" in text
    assert "4 citations" in text
    assert "empty answer" in text
    assert "topic appears twice" in text
    assert "12345 is not a PMID string" in text
    assert "not in the corpus: 999" in text
    assert "not in the evidence shown to the generator: 3, 4" in text
    assert "not valid JSON" in text
    assert "topics without an answer: 3" in text


def test_biogen24_reference_rules(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"team_id": "t", "run_name": "r", "contact_email": "e",
                             "results": [{"topic_id": "1", "answer": "A is B [1,2,3,4]. C [5].",
                                          "references": ["1", "2", "3", "9", "9"]}]}))
    errors = "\n".join(validate_biogen24(f).errors)
    assert "only the first 3 count" in errors
    assert "PMID 5 is cited but not in references" in errors
    assert "reference 9 is never cited" in errors
    assert "listed twice" in errors


def test_cli_validate_exit_codes_and_errlog(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with DocumentStore.create(store_dir) as store, store.transaction() as tx:
        tx.upsert([Article("22802756", "t"), Article("34765068", "t")], FileStats("x"))
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_biogen25(good, [Answer("181", [ANSWER.sentences[0]])], "t", "r")
    write_biogen25(bad, [ANSWER], "t", "r")  # cites 111, not in the corpus
    runner = CliRunner()
    ok = runner.invoke(cli, ["validate", "biogen-b", str(good), "--corpus", str(store_dir)])
    assert ok.exit_code == 0, ok.output
    res = runner.invoke(cli, ["validate", "biogen-b", str(bad), "--corpus", str(store_dir)])
    assert res.exit_code == 255
    assert "111" in Path(str(bad) + ".errlog").read_text()
    write_errlog(validate_biogen25(good))  # a passing run removes nothing it did not write
    assert not Path(str(good) + ".errlog").exists()
