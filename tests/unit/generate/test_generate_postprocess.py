from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from medcite.generate.citations import parse_group, split_cited_sentences
from medcite.generate.postprocess import postprocess, word_count
from medcite.types import Evidence

EVIDENCE = [Evidence(i, str(1000 + i), f"evidence {i}") for i in range(1, 6)]


def pmids(text: str) -> list[tuple[str, tuple[str, ...]]]:
    sentences, _ = postprocess(text, EVIDENCE)
    return [(s.text, s.pmids) for s in sentences]


def test_all_citation_shapes_map_to_pmids() -> None:
    assert pmids("A works [1]. B works [1,3]. C works [2-4]. D works [1][2].") == [
        ("A works.", ("1001",)),
        ("B works.", ("1001", "1003")),
        ("C works.", ("1002", "1003", "1004")),
        ("D works.", ("1001", "1002")),
    ]


def test_citation_after_final_punctuation_belongs_to_previous_sentence() -> None:
    assert pmids("Statins lower LDL. [2] They are safe [3].") == [
        ("Statins lower LDL.", ("1002",)),
        ("They are safe.", ("1003",)),
    ]


def test_unknown_index_dropped_with_reason_and_uncited_sentence_removed() -> None:
    sentences, dropped = postprocess("Real claim [9]. Other claim [1].", EVIDENCE)
    assert [s.text for s in sentences] == ["Other claim."]
    reasons = [(d.what, d.reason) for d in dropped]
    assert ("citation", "index 9 is not in the evidence block") in reasons
    assert ("sentence", "no valid citation") in reasons


def test_more_than_three_pmids_are_capped_in_order() -> None:
    sentences, dropped = postprocess("Claim [5,4,3,2,1].", EVIDENCE)
    assert sentences[0].pmids == ("1005", "1004", "1003")
    assert sum(d.what == "citation" for d in dropped) == 2


def test_duplicate_pmids_dedupe() -> None:
    ev = [Evidence(1, "42", "a"), Evidence(2, "42", "b"), Evidence(3, "7", "c")]
    sentences, dropped = postprocess("Claim [1,2,3].", ev)
    assert sentences[0].pmids == ("42", "7")
    assert dropped == []


def test_non_citation_brackets_stay_text() -> None:
    assert pmids("Uptake of [3H]thymidine rose [1].") == [("Uptake of [3H]thymidine rose.", ("1001",))]


def test_pmid_citations_are_not_trusted() -> None:
    sentences, dropped = postprocess("Claim [PMID: 1001].", EVIDENCE)
    assert sentences == []
    assert dropped[0].what == "citation"


def test_parse_group_ranges() -> None:
    assert parse_group("2-4") == ([2, 3, 4], None)
    assert parse_group("1, 3 ;5") == ([1, 3, 5], None)
    assert parse_group("4-2")[1] is not None
    assert parse_group("1-1000")[1] is not None
    assert parse_group("3H") == ([], None)


def test_word_cap_drops_trailing_sentences() -> None:
    long = "Word " + " ".join(["word"] * 119)
    sentences, dropped = postprocess(f"{long} one [1]. {long} two [2]. {long} three [3].", EVIDENCE)
    assert sum(word_count(s.text) for s in sentences) <= 250
    assert len(sentences) == 2
    assert dropped[-1].reason == "answer would exceed 250 words"


def test_single_overlong_sentence_is_truncated_not_emptied() -> None:
    sentences, dropped = postprocess(" ".join(["w"] * 400) + " [1].", EVIDENCE)
    assert len(sentences) == 1 and word_count(sentences[0].text) <= 250
    assert "truncated" in dropped[0].reason


def test_split_keeps_leading_citation_on_first_sentence() -> None:
    drafts = split_cited_sentences("[2] First claim. Second claim [3].")
    assert drafts[0].indices == [2] and drafts[1].indices == [3]


citation = st.builds(
    lambda nums, sep: "[" + sep.join(str(n) for n in nums) + "]",
    st.lists(st.integers(min_value=-3, max_value=12), min_size=1, max_size=6),
    st.sampled_from([",", ", ", ";", "-", "]["]),
)
fragment = st.one_of(st.text(max_size=40), citation, st.sampled_from([". ", "! ", "? ", "[", "]", "PMID: 1001", "\n"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(fragment, max_size=60), st.integers(min_value=1, max_value=5), st.integers(min_value=5, max_value=250))
def test_no_input_breaks_the_invariants(parts: list[str], cap: int, max_words: int) -> None:
    text = "".join(parts)
    sentences, _ = postprocess(text, EVIDENCE, max_citations=cap, max_words=max_words)
    allowed = {e.pmid for e in EVIDENCE}
    total = 0
    for s in sentences:
        assert s.pmids, "uncited sentence emitted"
        assert len(s.pmids) <= cap
        assert len(set(s.pmids)) == len(s.pmids)
        assert set(s.pmids) <= allowed
        total += word_count(s.text)
    assert total <= max_words


def test_word_cap_drops_every_sentence_after_the_first_overflow() -> None:
    """CLaC 2025 trims trailing sentences: a shorter sentence after the overflowing one is not slipped in."""
    text = ("Alpha " + " ".join(["statins"] * 199) + " [1]. Beta " + " ".join(["lower"] * 59) + " [2]. "
            "Gamma is a short sentence [3].")
    sentences, dropped = postprocess(text, EVIDENCE)
    assert [s.text.split()[0] for s in sentences] == ["Alpha"]
    reasons = [d.reason for d in dropped if d.what == "sentence"]
    assert reasons == ["answer would exceed 250 words", "after the 250-word cap"]
