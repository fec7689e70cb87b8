"""The 2024 answer string: the writer and the validator share one grammar (FORMATS.md §1, official validator).

Hand-computed cases pin the grammar; a hypothesis property checks that whatever the writer produces from a valid
answer, the validator accepts and reads back the PMIDs that were written.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medcite.errors import InputError
from medcite.tasks.biogen_b_format import (
    CITATION_RE,
    biogen24_answer_text,
    biogen24_result,
    count_words,
    find_citations,
    parse_biogen24_answer,
    write_biogen24,
)
from medcite.tasks.biogen_b_validate import validate_biogen24
from medcite.types import Answer, AnswerSentence


def _write(path: Path, *answers: Answer) -> Path:
    write_biogen24(path, list(answers), team_id="t", run_name="r", contact_email="a@b.org")
    return path


def _file(path: Path, answer: str, references: list[str]) -> Path:
    path.write_text(json.dumps({"team_id": "t", "run_name": "r", "contact_email": "e",
                                "results": [{"topic_id": "1", "answer": answer, "references": references}]}))
    return path


def _words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_a_250_word_answer_with_citations_validates_as_250_words(tmp_path: Path) -> None:
    # 5 sentences x 50 words, 3 PMIDs each: 15 PMIDs inside brackets that are not words
    pmids = [str(10_000_000 + i) for i in range(15)]
    sentences = [AnswerSentence(_words(50, 50 * k) + ".", tuple(pmids[3 * k:3 * k + 3])) for k in range(5)]
    answer = Answer("1", sentences)
    assert parse_biogen24_answer(biogen24_answer_text(answer)).words == 250
    assert validate_biogen24(_write(tmp_path / "ok.json", answer)).errors == []
    # the same answer with the brackets after a space, as webis write them: 255 whitespace tokens, 250 words
    spaced = " ".join(f"{s.text[:-1]} [{','.join(s.pmids)}]." for s in sentences)
    assert len(spaced.split()) == 255 and count_words(spaced) == 250
    assert validate_biogen24(_file(tmp_path / "spaced.json", spaced, pmids)).errors == []
    longer = Answer("1", [*sentences[:4], AnswerSentence(_words(51, 200) + ".", tuple(pmids[12:]))])
    errors = validate_biogen24(_write(tmp_path / "long.json", longer)).errors
    assert errors == ["result 1 (topic 1): 251 words outside citation brackets (at most 250)"]


def test_official_2024_caps_can_be_asked_for(tmp_path: Path) -> None:
    answer = Answer("1", [AnswerSentence(f"Sentence {i} is short.", ("123",)) for i in range(11)])
    f = _write(tmp_path / "r.json", answer)
    assert validate_biogen24(f).errors == []
    errors = validate_biogen24(f, max_words=40, max_sentences=10).errors
    assert errors == ["result 1 (topic 1): 44 words outside citation brackets (at most 40)",
                      "result 1 (topic 1): 11 sentences (at most 10)"]


@pytest.mark.parametrize(("text", "pmids"), [
    ("[12]", ("12",)),
    ("[12345678,23456789]", ("12345678", "23456789")),
    ("[1, 2]", ("1", "2")),
    ("[1 2]", ("1", "2")),
    ("[1,\n2 ]", ("1", "2")),
    ("[12,]", ("12",)),
    ("[3H]", None),
    ("[1-3]", None),
    ("[Ca2+]", None),
    ("[]", None),
    ("[ 12]", None),
    ("[1 ,2]", None),
    ("[1;2]", None),
    ("[12a]", None),
    ("[PMID 12]", None),
])
def test_what_is_a_citation_bracket(text: str, pmids: tuple[str, ...] | None) -> None:
    """The official 2024 validator's language: digits, separated by a comma and/or whitespace."""
    found = find_citations(f"Levels rose {text}.")
    assert found == ([] if pmids is None else [(12, 12 + len(text), pmids)])


def _official_language(content: str) -> bool:
    """The official pattern's language, written out: digits, commas and whitespace; a digit first and before
    every comma."""
    return (content[:1].isdecimal() and all(ch.isdecimal() or ch == "," or ch.isspace() for ch in content)
            and all(content[i - 1].isdecimal() for i, ch in enumerate(content) if ch == ","))


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="12\u0663, \n\tx[]-", max_size=12))
def test_the_citation_pattern_is_the_official_language(content: str) -> None:
    assert (CITATION_RE.fullmatch(f"[{content}]") is not None) == _official_language(content)


def test_a_long_digit_run_is_read_in_linear_time() -> None:
    start = time.perf_counter()
    assert find_citations("[" + "1" * 5000 + "x " + "[12, 13]") == [(5003, 5011, ("12", "13"))]
    assert time.perf_counter() - start < 0.5


def test_3h_thymidine_is_text_not_a_citation(tmp_path: Path) -> None:
    answer = "Uptake of [3H]thymidine rose in [Ca2+]-free medium at [1-3] hours [31886449]."
    parsed = parse_biogen24_answer(answer)
    assert parsed.cited == ["31886449"]
    assert parsed.words == 10  # the non-citation brackets are (parts of) words
    assert validate_biogen24(_file(tmp_path / "r.json", answer, ["31886449"])).errors == []


@pytest.mark.parametrize(("answer", "discarded"), [
    ("Statins work [2].", None),
    ("[1] Statins work.", "it stands at the start of a sentence"),
    ("Statins work. [1]", "it stands at the start of a sentence"),
    ("Statins work.[1]", "it stands after the sentence-final punctuation"),
    ("It rose by 2.5 [1] mg", "it stands after the sentence-final punctuation"),  # the decimal point is the last
    ("They help [1]", "its sentence has no sentence-final punctuation (. ! ?)"),
])
def test_brackets_the_official_parser_discards(answer: str, discarded: str | None) -> None:
    assert [b.discarded for b in parse_biogen24_answer(answer).brackets] == [discarded]


def test_discarded_brackets_are_errors(tmp_path: Path) -> None:
    answer = "[1] Statins work [2]. They help [3]"
    errors = validate_biogen24(_file(tmp_path / "r.json", answer, ["1", "2", "3"])).errors
    assert errors == [
        "result 1 (topic 1) sentence 1: citation [1] is discarded by the official parser: it stands at the start "
        "of a sentence",
        "result 1 (topic 1) sentence 2: citation [3] is discarded by the official parser: its sentence has no "
        "sentence-final punctuation (. ! ?)",
        "result 1 (topic 1): reference 1 is never cited",
        "result 1 (topic 1): reference 3 is never cited",
    ]


def test_only_the_first_three_of_a_bracket_count() -> None:
    parsed = parse_biogen24_answer("A is B [1,2,3,4]. C is D [5,5].")
    assert [s.pmids for s in parsed.sentences] == [("1", "2", "3"), ("5",)]


def test_writer_neutralises_digit_brackets_in_the_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    answer = Answer("7", [AnswerSentence("Mortality fell by 20% [12], as in earlier trials [3, 4].", ("111",)),
                          AnswerSentence("Uptake of [3H]thymidine rose.", ("222",))])
    result, rewrites = biogen24_result(answer)
    assert result["answer"] == ("Mortality fell by 20% (12), as in earlier trials (3, 4)[111]. "
                                "Uptake of [3H]thymidine rose[222].")
    assert [(r.topic_id, r.sentence, r.before, r.after) for r in rewrites] == [("7", 0, "[12]", "(12)"),
                                                                            ("7", 0, "[3, 4]", "(3, 4)")]
    with caplog.at_level(logging.INFO, logger="medcite.tasks.biogen_b_format"):
        written = write_biogen24(tmp_path / "r.json", [answer], team_id="t", run_name="r", contact_email="e")
    assert written == rewrites
    assert "2 digits-only brackets in answer text rewritten" in caplog.text
    assert validate_biogen24(tmp_path / "r.json").errors == []
    assert [b.counted for b in parse_biogen24_answer(str(result["answer"])).brackets] == [("111",), ("222",)]


@pytest.mark.parametrize(("text", "written"), [
    ("Statins lower LDL.", "Statins lower LDL[1]."),
    ("Statins lower LDL", "Statins lower LDL[1]."),
    ("Does it heal?!", "Does it heal[1]?!"),
    ('He said "stop."', 'He said "stop[1]."'),
    ("It is rare (see above).", "It is rare (see above)[1]."),
    ("The cut text…", "The cut text[1]…."),
    ("Dose was 5 mg...", "Dose was 5 mg[1]..."),
    ("Levels of 12345678.", "Levels of 12345678[1]."),
    ("Levels fell  .  ", "Levels fell[1]."),
    ("Uptake of [3H]", "Uptake of [3H][1]."),
    ("Two kinds;", "Two kinds[1]."),
    ("Two kinds: …", "Two kinds[1]…."),
    ("Is it?:", "Is it[1]?"),
    ('It is. "', 'It is[1]."'),
])
def test_the_citation_stays_inside_its_sentence(text: str, written: str) -> None:
    assert biogen24_answer_text(Answer("1", [AnswerSentence(text, ("1",))])) == written
    assert parse_biogen24_answer(written).cited == ["1"]


def test_writer_refuses_what_it_cannot_cite() -> None:
    with pytest.raises(InputError, match="no words before its final punctuation"):
        biogen24_answer_text(Answer("1", [AnswerSentence("?!", ("1",))]))
    with pytest.raises(InputError, match="not PMIDs"):
        biogen24_answer_text(Answer("1", [AnswerSentence("Fine.", ("PMC123",))]))


def test_writer_cites_a_repeated_pmid_once() -> None:
    assert biogen24_answer_text(Answer("1", [AnswerSentence("Fine.", ("5", "5", "6"))])) == "Fine[5,6]."


# ---- the round trip --------------------------------------------------------------------------------------

_TOKENS = ["LDL", "statins", "[3H]thymidine", "[12]", "[1-3]", "[Ca2+]", "[1,", "2]", "[7", "8]", "(p<0.05)",
           "vs.", "e.g.", "Fig.", "1.5", "mg/dL", "—", "-", '"quoted"', "(see", "above)", "…", "?", "!", ".", "don't",
           "5%", "3", "[", "]", "[]", "U.S.", "Dr.", "i.e.,", ";", ":", "[12,", "13]", "p=0.5.", "Ref.[4]"]
_ENDINGS = ["", ".", "!", "?", "?!", '."', ".)", "…", "...", ":", ";", ",", " .", "]", ".]", ")"]
_word = st.one_of(st.sampled_from(_TOKENS), st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True))
_first = st.from_regex(r"[A-Z][a-z]{0,9}", fullmatch=True)
_pmid = st.integers(min_value=1, max_value=99_999_999).map(str)


@st.composite
def _sentence(draw: st.DrawFn) -> AnswerSentence:
    words = [draw(_first), *draw(st.lists(_word, max_size=20))]
    text = " ".join(words) + draw(st.sampled_from(_ENDINGS))
    return AnswerSentence(text, tuple(draw(st.lists(_pmid, max_size=3, unique=True))))


@st.composite
def _answer(draw: st.DrawFn) -> Answer:
    sentences, words = [], 0
    for s in draw(st.lists(_sentence(), min_size=1, max_size=14)):
        n = len(s.text.split())
        if words + n > 250:
            break
        sentences.append(s)
        words += n
    if not any(s.pmids for s in sentences):  # a valid answer cites something
        sentences[0] = AnswerSentence(sentences[0].text, ("12345678",))
    return Answer(str(draw(st.integers(1, 500))), sentences)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_answer())
def test_whatever_the_writer_writes_the_validator_accepts(answer: Answer, tmp_path: Path) -> None:
    f = _write(tmp_path / "r.json", answer)
    assert validate_biogen24(f, expected_topics=[answer.topic_id]).errors == []
    written = json.loads(f.read_text())["results"][0]
    parsed = parse_biogen24_answer(written["answer"])
    # every bracket the validator reads is the one the writer put in a cited sentence, in order, none discarded:
    # the PMIDs read back per written sentence are the PMIDs written (the splitter may join two written sentences
    # into one, which changes nothing: the official parser assigns each bracket to its enclosing sentence)
    assert [(b.pmids, b.discarded) for b in parsed.brackets] == [(s.pmids, None) for s in answer.sentences
                                                                  if s.pmids]
    assert written["references"] == answer.pmids
    # words: the generator's whitespace count bounds the validator's (brackets and lone punctuation are no words)
    assert parsed.words <= sum(len(s.text.split()) for s in answer.sentences)
