"""PMIDs that an LLM names in its prose are removed and reported, never cited (issue 16, item 4)."""

from __future__ import annotations

from medcite.generate.citations import strip_pmid_mentions
from medcite.generate.postprocess import postprocess
from medcite.types import Evidence

EVIDENCE = [Evidence(1, "11111111", "Statins lower LDL cholesterol."), Evidence(2, "22222222", "Aspirin.")]


def test_mentions_are_cut_and_explained() -> None:
    text, found = strip_pmid_mentions("Statins lower LDL (PMID: 11111111) and mortality (PMID 99999999).",
                                      {"11111111"})
    assert text == "Statins lower LDL and mortality."
    assert [m for m, _ in found] == ["(PMID: 11111111)", "(PMID 99999999)"]
    assert "instead of an evidence index" in found[0][1]
    assert "99999999 named in the text is not in the evidence" in found[1][1]


def test_urls_lists_and_bare_numbers() -> None:
    text, found = strip_pmid_mentions(
        "See https://pubmed.ncbi.nlm.nih.gov/12345678/ and PMIDs 1, 2 and 3; also (23456789).", set())
    assert "pubmed" not in text and "23456789" not in text and "PMID" not in text
    assert len(found) == 3


def test_ordinary_numbers_stay() -> None:
    for sentence in ("LDL fell by 30% in 1,204 adults (95% CI 1.2-3.4).", "In 2019, 123456 patients enrolled."):
        assert strip_pmid_mentions(sentence, set()) == (sentence, [])


def test_postprocess_never_cites_a_pmid_from_the_prose() -> None:
    sentences, dropped = postprocess(
        "Statins lower LDL [1] as PMID 33333333 shows. PMID: 22222222. Aspirin helps (44444444) [2].", EVIDENCE)
    assert [(s.text, s.pmids) for s in sentences] == [
        ("Statins lower LDL as shows.", ("11111111",)), ("Aspirin helps.", ("22222222",))]
    reasons = [(d.what, d.text, d.reason) for d in dropped]
    assert any(t == "PMID 33333333" and "not in the evidence" in r for _, t, r in reasons)
    assert any(t == "(44444444)" for _, t, _ in reasons)
    # "PMID: 22222222." alone: nothing left once the mention is cut
    assert any(w == "sentence" and "nothing left" in r for w, _, r in reasons)
    assert all("33333333" not in s.text and "44444444" not in s.text for s in sentences)
