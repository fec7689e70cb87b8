"""The Phase A benchmark's questions for the official measures: gold and system sides read as the evaluator does."""

from __future__ import annotations

import pytest

from bench_modules import load_bench
from medcite.evaluate.bioasq import evaluate_phase_a
from medcite.types import Hit, Snippet, Topic

bench = load_bench("bench_bioasq_a")
URL = "http://www.ncbi.nlm.nih.gov/pubmed/"
RAW = {"id": "q", "type": "yesno", "body": "Is X Y?", "documents": [URL + "7", URL + "8"],
       "snippets": [{"document": URL + "7", "text": "abc", "beginSection": "title", "offsetInBeginSection": 0,
                     "endSection": "title", "offsetInEndSection": 3}]}


def test_gold_questions_keep_pmids_and_snippet_offsets() -> None:
    g = bench.gold_question(RAW)
    assert g.documents == ("7", "8") and g.snippets == (Snippet("7", "abc", "title", 0, "title", 3),)


def test_a_system_question_scored_by_the_official_measures() -> None:
    topic = Topic("q", "Is X Y?", type="yesno")
    hits = [Hit("9", 3.0, 1), Hit("7", 2.0, 2)] + [Hit(str(100 + i), 1.0, 3 + i) for i in range(12)]
    system = bench.system_question(topic, hits, [Snippet("7", "ab", "title", 0, "title", 2)])
    assert len(system.documents) == 10 and system.documents[:2] == ("9", "7")
    m = evaluate_phase_a([bench.gold_question(RAW)], [system]).measures
    assert m["documents"]["MAP"] == pytest.approx((1 / 2) / 2)  # one of 2 gold found, at rank 2
    # inclusive offsets as the evaluator reads them: system 0..2 (3 chars), gold 0..3 (4 chars), overlap 3
    assert m["snippets"]["P"] == pytest.approx(1.0) and m["snippets"]["R"] == pytest.approx(3 / 4)
