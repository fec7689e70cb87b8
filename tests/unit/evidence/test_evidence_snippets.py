from __future__ import annotations

import numpy as np

from medcite.evidence.base import format_block
from medcite.evidence.sentences import article_sentences, split_spans
from medcite.evidence.snippets import SnippetSelector
from medcite.evidence.tfidf_mmr import mmr
from medcite.types import Article, Hit, Query, Section


def make_article() -> Article:
    bg = "Patients got 500 mg b.i.d. for 2 wk. Smith et al. saw no change."
    res = "IL-6 rose (95% CI 1.2-3.4, Fig. 2)."
    abstract = f"{bg} {res}"
    sections = (Section("BACKGROUND", "BACKGROUND", 0, len(bg)),
                Section("RESULTS", "RESULTS", len(bg) + 1, len(abstract)))
    return Article("7", "IL-6 in <i>vivo</i> trial", abstract, sections)


def test_sentence_offsets_index_the_abstract_exactly() -> None:
    a = make_article()
    spans = article_sentences(a)
    assert spans[0].section == "title" and a.title[spans[0].start : spans[0].end] == spans[0].text
    abstract_spans = [s for s in spans if s.section == "abstract"]
    assert [s.text for s in abstract_spans] == [
        "Patients got 500 mg b.i.d. for 2 wk.", "Smith et al. saw no change.", "IL-6 rose (95% CI 1.2-3.4, Fig. 2).",
    ]
    for s in abstract_spans:
        assert a.abstract[s.start : s.end] == s.text
    assert abstract_spans[-1].label == "RESULTS"


def test_split_spans_pysbd_agrees_on_hard_passage() -> None:
    text = "Dose was 5 mg b.i.d. in all arms. Smith et al. disagreed."
    assert [text[s:e] for s, e in split_spans(text, "pysbd")] == [text[s:e] for s, e in split_spans(text)]


def test_mmr_prefers_diverse_items() -> None:
    sim = np.array([[1, 0.99, 0], [0.99, 1, 0], [0, 0, 1]], dtype=float)
    assert mmr([1.0, 0.95, 0.7], sim, k=2, lam=0.75) == [0, 2]  # 0.525 > 0.7125 - 0.2475
    assert mmr([1.0, 0.95, 0.7], sim, k=2, lam=1.0) == [0, 1]
    assert mmr([1.0, 0.95, 0.6], sim, k=3, groups=["a", "a", "b"], per_group=1) == [0, 2]


def test_snippet_selector_returns_exact_spans_from_given_articles_only() -> None:
    a = make_article()
    b = Article("8", "Unrelated cardiology note", "Heart rate was measured in dogs under anaesthesia for hours.")
    sel = SnippetSelector(max_items=3, per_doc=2)
    ev = sel.select([Query("q0", "IL-6 rise trial")], [Hit("7", 2.0, 1), Hit("8", 1.0, 2), Hit("404", 0.5, 3)],
                    {"7": a, "8": b})
    assert [e.index for e in ev] == list(range(1, len(ev) + 1))
    assert {e.pmid for e in ev} <= {"7", "8"}
    assert sum(e.pmid == "7" for e in ev) <= 2
    assert ev[0].pmid == "7"
    for e in ev:
        src = {"7": a, "8": b}[e.pmid]
        text = src.title if e.section == "title" else src.abstract
        assert text[e.start : e.end] == e.text
    assert format_block(ev).splitlines()[0].startswith("[1] (7) ")


def test_role_prior_prefers_findings_over_aims_and_titles() -> None:
    from medcite.evidence.sentences import SentenceSpan
    from medcite.evidence.snippets import role_weight

    finding = SentenceSpan("1", "abstract", 0, 10, "Blood pressure fell by 10 mm Hg.", "RESULTS", "RESULTS")
    aim = SentenceSpan("1", "abstract", 0, 10, "We aimed to explore blood pressure.", None, None)
    title = SentenceSpan("1", "title", 0, 10, "Blood pressure and relaxation", None, None)
    plain = SentenceSpan("1", "abstract", 0, 10, "Blood pressure fell.", None, None)
    assert role_weight(finding) > role_weight(plain) > role_weight(title) >= role_weight(aim)
