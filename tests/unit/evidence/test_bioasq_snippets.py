"""BioASQ Phase A snippets: exact section offsets (titles, structured abstracts), ranking by each scorer, caps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.evidence.bioasq_snippets import (
    BioASQSnippets,
    EncoderScorer,
    RerankerScorer,
    TfidfScorer,
    offsets_exact,
    snippet_text,
)
from medcite.pipeline.context import Context
from medcite.types import Article, Hit, Section, Snippet

QUESTION = "Do statins lower LDL cholesterol?"

BACKGROUND = "Cardiovascular disease remains a leading cause of death worldwide."
RESULTS = "Statins lowered LDL cholesterol by 30 percent in adults. Myalgia was rare in the trial."
CONCLUSION = "Statins lower LDL cholesterol and were well tolerated by most patients."
STRUCTURED = f"{BACKGROUND} {RESULTS} {CONCLUSION}"
SECTIONS = (
    Section("BACKGROUND", "BACKGROUND", 0, len(BACKGROUND)),
    Section("RESULTS", "RESULTS", len(BACKGROUND) + 1, len(BACKGROUND) + 1 + len(RESULTS)),
    Section("CONCLUSIONS", "CONCLUSIONS", len(STRUCTURED) - len(CONCLUSION), len(STRUCTURED)),
)
ARTICLES = {
    "111": Article("111", "Statin therapy and LDL cholesterol in adults", STRUCTURED, SECTIONS),
    "222": Article("222", "  Exercise and blood pressure  ",
                   "Aerobic exercise lowered systolic blood pressure. Statins were not studied in this cohort."),
    "333": Article("333", "Vitamin D and fractures in older women", "Vitamin D did not prevent hip fractures."),
}
HITS = [Hit("111", 3.0, 1), Hit("222", 2.0, 2), Hit("333", 1.0, 3)]


def _all_exact(snippets: Sequence[Snippet]) -> None:
    for s in snippets:
        assert s.begin_section == s.end_section and s.begin_section in ("title", "abstract")
        assert offsets_exact(s, ARTICLES[s.pmid]), s
        assert s.end_offset > s.begin_offset


def test_offsets_index_the_stored_title_and_structured_abstract_exactly() -> None:
    sel = BioASQSnippets(TfidfScorer(), snippets=10, per_document=10, min_words=1)
    got = sel.select(QUESTION, HITS, ARTICLES)
    _all_exact(got)
    by_text = {s.text: s for s in got}
    # the second part of the structured abstract: its offset counts the first part and the joining space
    first_results = by_text["Statins lowered LDL cholesterol by 30 percent in adults."]
    assert (first_results.begin_section, first_results.begin_offset) == ("abstract", len(BACKGROUND) + 1)
    assert first_results.end_offset == len(BACKGROUND) + 1 + len("Statins lowered LDL cholesterol by 30 percent "
                                                                   "in adults.")
    last = by_text[CONCLUSION]
    assert (last.begin_offset, last.end_offset) == (len(STRUCTURED) - len(CONCLUSION), len(STRUCTURED))
    # a title with surrounding spaces: the span skips them and still indexes Article.title
    title = by_text["Exercise and blood pressure"]
    assert (title.begin_section, title.begin_offset, title.end_offset) == ("title", 2, 29)
    assert snippet_text(ARTICLES["222"], "title", 2, 29) == "Exercise and blood pressure"


def test_structured_parts_never_merge_into_one_sentence() -> None:
    # the background part ends without a period: the part boundary still ends the sentence
    abstract = "Aim of the work" + " " + "Statins lowered LDL cholesterol in adults."
    art = Article("9", "", abstract, (Section("OBJECTIVE", None, 0, 15), Section("RESULTS", None, 16, len(abstract))))
    got = BioASQSnippets(TfidfScorer(), min_words=1).select(QUESTION, [Hit("9", 1.0)], {"9": art})
    assert {s.text for s in got} == {"Aim of the work", "Statins lowered LDL cholesterol in adults."}
    assert all(offsets_exact(s, art) for s in got)


def test_tfidf_ranks_by_overlap_with_the_question_and_caps_per_document() -> None:
    sel = BioASQSnippets(TfidfScorer(), snippets=10, per_document=2)
    got = sel.select(QUESTION, HITS, ARTICLES)
    _all_exact(got)
    assert [s.pmid for s in got].count("111") == 2
    # the conclusion repeats the question's words ("statins lower LDL cholesterol"): best; then the result sentence
    assert got[0].text == CONCLUSION and got[0].pmid == "111"
    assert got[1].text == "Statins lowered LDL cholesterol by 30 percent in adults."
    assert [s.score for s in got] == sorted((s.score for s in got), reverse=True)


def test_embedding_scorer_ranks_by_cosine_of_encoder_vectors() -> None:
    settings = load_settings("offline", ["bioasq.encoder.backend=hash-bow", "bioasq.encoder.dim=256"])
    with Context(settings) as ctx:
        sel = BioASQSnippets.from_settings(settings.bioasq, ctx)
        assert isinstance(sel.scorer, EncoderScorer)
        got = sel.select("statins lower ldl cholesterol", HITS, ARTICLES)
    _all_exact(got)
    # hashed bag of words: the conclusion holds all four question words (cosine highest)
    assert got[0].text == CONCLUSION
    assert got[-1].score <= got[0].score


class _Fixed:
    """A pointwise reranker scoring a sentence by a fixed table (so the test can state the order)."""

    name = "fixed"

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.seen: list[str] = []

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        self.seen += [a.text for a in articles]
        return [self.table.get(a.text, 0.0) for a in articles]


class _Listwise:
    """A non-pointwise reranker: reverses the order it is given and keeps the best 2."""

    name = "listwise"

    def rerank(self, query: str, hits: Sequence[Hit], articles: Any, k: int) -> list[Hit]:
        order = list(hits)[::-1][:2]
        return [Hit(h.pmid, float(10 - i), i + 1) for i, h in enumerate(order)]


def test_reranker_scorer_uses_any_reranker() -> None:
    fixed = _Fixed({"Vitamin D did not prevent hip fractures.": 5.0, "Myalgia was rare in the trial.": 4.0})
    got = BioASQSnippets(RerankerScorer(fixed), snippets=3).select(QUESTION, HITS, ARTICLES)
    assert [s.text for s in got[:2]] == ["Vitamin D did not prevent hip fractures.", "Myalgia was rare in the trial."]
    # sentences, not documents, were scored
    assert STRUCTURED not in fixed.seen and "Myalgia was rare in the trial." in fixed.seen
    _all_exact(got)
    scores = RerankerScorer(_Listwise()).score(QUESTION, ["a b c d", "e f g h", "i j k l"])
    assert scores[2] > scores[1] and scores[0] == float("-inf")


def test_reranker_scorer_from_settings_builds_the_configured_reranker() -> None:
    settings = load_settings("offline", ["bioasq.scorer=reranker", 'bioasq.reranker={"backend": "embedding", '
                                         '"model": {"backend": "hash-bow", "dim": 256}}'])
    with Context(settings) as ctx:
        sel = BioASQSnippets.from_settings(settings.bioasq, ctx)
        got = sel.select("statins lower ldl cholesterol", HITS, ARTICLES)
    assert isinstance(sel.scorer, RerankerScorer)
    assert got[0].text == CONCLUSION
    _all_exact(got)


def test_reranker_scorer_without_a_reranker_says_how_to_fix_it() -> None:
    settings = load_settings("offline", ["bioasq.scorer=reranker"])
    with Context(settings) as ctx, pytest.raises(ConfigError, match="bioasq.reranker"):
        BioASQSnippets.from_settings(settings.bioasq, ctx)


def test_never_more_than_ten_and_only_top_documents() -> None:
    many = {str(i): Article(str(i), f"Statins and LDL cholesterol study number {i}",
                            " ".join(f"Statins lowered LDL cholesterol in cohort {i}-{j}." for j in range(5)))
            for i in range(1, 16)}
    hits = [Hit(p, 100.0 - int(p), int(p)) for p in many]
    sel = BioASQSnippets(TfidfScorer(), documents=12, snippets=10, per_document=3)
    got = sel.select(QUESTION, hits, many)
    assert len(got) == 10
    assert all(int(s.pmid) <= 12 for s in got)
    assert all(offsets_exact(s, many[s.pmid]) for s in got)
    assert BioASQSnippets(TfidfScorer(), documents=2, snippets=10, per_document=10).select(QUESTION, hits, many)
    assert {s.pmid for s in BioASQSnippets(TfidfScorer(), documents=2, per_document=10).select(
        QUESTION, hits, many)} == {"1", "2"}
    with pytest.raises(ConfigError, match="at most 10"):
        BioASQSnippets(TfidfScorer(), snippets=11)
    with pytest.raises(ConfigError, match="less than or equal to 10"):  # settings refuse it too
        load_settings("offline", ["bioasq.snippets=11"])


def test_titles_can_be_left_out_and_unknown_hits_are_skipped() -> None:
    sel = BioASQSnippets(TfidfScorer(), include_titles=False, per_document=10)
    got = sel.select(QUESTION, [Hit("404", 9.0), *HITS], ARTICLES)
    assert got and all(s.begin_section == "abstract" for s in got)
    assert BioASQSnippets(TfidfScorer()).select(QUESTION, [Hit("404", 1.0)], ARTICLES) == []
