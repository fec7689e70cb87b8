"""Issue 16 #13: parsing the citations of a long LLM reply takes linear time (it took minutes on 11 MB)."""

from __future__ import annotations

import time

from medcite.generate.citations import split_cited_sentences


def test_long_reply_parses_in_linear_time() -> None:
    n = 20_000  # ~740 KB; the quadratic owner search needed ~16 s here, the linear one ~1 s
    text = " ".join(f"Statin use lowers LDL in adults [{i % 9 + 1}]." for i in range(n))
    start = time.perf_counter()
    drafts = split_cited_sentences(text)
    assert time.perf_counter() - start < 6.0
    assert len(drafts) == n and drafts[0].indices == [1] and drafts[-1].indices == [(n - 1) % 9 + 1]


def test_long_run_of_adjacent_groups_is_linear() -> None:
    start = time.perf_counter()
    drafts = split_cited_sentences("LDL fell " + "[1]" * 100_000 + ". It rose [2].")
    assert time.perf_counter() - start < 6.0
    assert [d.text for d in drafts] == ["LDL fell.", "It rose."]
    assert len(drafts[0].indices) == 100_000 and drafts[1].indices == [2]


def test_groups_go_to_the_right_sentences() -> None:
    drafts = split_cited_sentences("[9] LDL fell [1]. [2] HDL rose. Nothing here. [3] Last one [4].")
    assert [(d.text, d.indices) for d in drafts] == [
        ("LDL fell.", [9, 1, 2]), ("HDL rose.", []), ("Nothing here.", [3]), ("Last one.", [4])]


def test_a_citation_before_a_full_stop_ends_the_sentence_whatever_word_precedes_it() -> None:
    """Issue 23: the splitter took "II." and "etc." for abbreviations and ran two cited sentences together."""
    from medcite.generate.citations import split_cited_sentences

    text = ("Condensin loads at breaks created by topoisomerase II [3]. Condensin-dependent localisation follows [1]. "
            "Goblet cells are found in the eyes etc [8, 9]. Goblet cells secrete mucus [2].")
    got = [(d.text, d.indices) for d in split_cited_sentences(text)]
    assert got == [("Condensin loads at breaks created by topoisomerase II.", [3]),
                   ("Condensin-dependent localisation follows.", [1]),
                   ("Goblet cells are found in the eyes etc.", [8, 9]), ("Goblet cells secrete mucus.", [2])]
    # without a citation the splitter decides as before: "e.g." inside a sentence does not end it
    assert len(split_cited_sentences("Drugs, e.g. statins, lower LDL [1].")) == 1


def test_a_bare_verdict_takes_the_citations_of_the_finding_after_it() -> None:
    """Issue 23: "Yes." first, uncited, made a faithful yes/no answer fail "every sentence cites" (cited mode)
    and "every sentence is supported" (post-hoc mode), and the extractive fallback replaced it."""
    from medcite.generate.citations import carry_verdicts, split_cited_sentences

    drafts = carry_verdicts(split_cited_sentences("Yes. Statins lower LDL cholesterol [2, 3]. Pain is rare [1]."))
    assert [(d.text, d.indices) for d in drafts] == [("Yes.", [2, 3]), ("Statins lower LDL cholesterol.", [2, 3]),
                                                    ("Pain is rare.", [1])]
    drafts = carry_verdicts(split_cited_sentences("No, it does not. Vitamin D did not prevent fractures [4]."))
    assert drafts[0].indices == [4]
    # a sentence with content is never given citations it did not write
    drafts = carry_verdicts(split_cited_sentences("Statins are widely used. Statins lower LDL [2]."))
    assert drafts[0].indices == []
