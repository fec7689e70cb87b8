"""Rule-based query generators and QuerySet, on inline topics and on the real BioGen 2025 topics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.retrieve.base import QueryGenerator, QuerySet
from medcite.retrieve.queries import (
    KeywordQueries,
    OriginalQuery,
    TopicNarrative,
    keywords,
    phrases,
)
from medcite.types import Query, Topic

T181 = Topic(
    "181",
    "what is axonal injury on my mri brain report; is it a concern?",
    narrative="During an ED visit after a car accident, the patient was told an axonal injury was detected.",
    topic="axonal injury on brain mri",
)


def test_keywords_drop_stop_and_question_words_keep_biomedical_tokens() -> None:
    assert keywords(T181.question) == ["axonal", "injury", "mri", "brain", "report"]
    text = "Is the CA19-9 level of a 38-year-old with COVID-19 high?"
    assert keywords(text) == ["ca19-9", "level", "covid-19", "high"]
    assert keywords("what will happen to the child\u2019s quality of life") == ["child", "quality", "life"]


def test_keywords_budget_prefers_biomedical_terms_in_original_order() -> None:
    text = "could the report about my nephritis and IL-6 values explain things around me"
    assert keywords(text, max_terms=2) == ["nephritis", "il-6"]


def test_phrases_split_at_stop_words_and_punctuation() -> None:
    assert phrases(T181.question) == ["axonal injury", "mri brain report"]
    text = "proton pump inhibitor, stomach acid and polyps"
    assert phrases(text) == ["proton pump inhibitor", "stomach acid", "polyps"]


def test_original_query() -> None:
    assert OriginalQuery().generate(T181) == [Query("q0", T181.question, "original")]
    assert OriginalQuery().generate(Topic("1", "   ")) == []


def test_keyword_queries_decompose_into_phrases() -> None:
    out = KeywordQueries().generate(T181)
    assert [q.text for q in out] == ["axonal injury mri brain report", "axonal injury", "mri brain report"]
    assert {q.stage for q in out} == {"keywords"}
    # a single phrase would only repeat the keyword query; generic words never stand alone
    uti = Topic("2", "what tests verify a uti?")
    assert [q.text for q in KeywordQueries().generate(uti)] == ["tests verify uti"]
    assert KeywordQueries(max_queries=2).generate(T181)[-1].text == "axonal injury"
    with pytest.raises(ValueError):
        KeywordQueries(max_queries=6)


def test_topic_narrative() -> None:
    (q,) = TopicNarrative(narrative_terms=3).generate(T181)
    assert q.stage == "topic_narrative"
    # ED is an acronym in the narrative, so it outranks plain short words
    assert q.text == "axonal injury brain mri ed accident detected"
    assert TopicNarrative().generate(Topic("x", "Is aspirin useful?")) == []


def test_queryset_dedupes_and_numbers_queries() -> None:
    class Repeat:
        name = "repeat"

        def generate(self, topic: Topic) -> list[Query]:
            shouted = "  WHAT is axonal injury on my MRI brain report;  is it a concern? "
            return [Query("a", shouted), Query("b", "")]

    qs = QuerySet([OriginalQuery(), Repeat(), KeywordQueries()])
    assert isinstance(qs, QueryGenerator)
    out = qs.generate(T181)
    assert [q.id for q in out] == ["q0", "q1", "q2", "q3"]
    assert [q.stage for q in out] == ["original", "keywords", "keywords", "keywords"]
    assert out[0].text == T181.question


@pytest.mark.slow
def test_keyword_generators_on_real_biogen_topics(shared_data: Path) -> None:
    raw = json.loads((shared_data / "biogen" / "biogen2025_taskB_topics.json").read_text(encoding="utf-8"))
    topics = {str(t["id"]): Topic(str(t["id"]), t["question"], t["narrative"], t["topic"]) for t in raw}
    assert len(topics) == 30
    qs = QuerySet([OriginalQuery(), KeywordQueries(), TopicNarrative()])
    for topic in topics.values():
        out = qs.generate(topic)
        assert out[0].text == topic.question
        kw = [q for q in out if q.stage == "keywords"]
        assert 1 <= len(kw) <= 5
        assert len({q.text.lower() for q in out}) == len(out)
    by = {tid: [q.text for q in qs.generate(t)] for tid, t in topics.items()}
    assert by["195"][1] == "value ca19-9 blood test result exceeds normal range cancer"
    assert "proton pump inhibitor" in by["207"]
    assert "jacobsen syndrome" in by["194"]
    assert by["209"][1:] == ["pepcid stomach inflammation", "pepcid", "stomach inflammation",
                             "gastritis treatment famotidine confirm condition"]
    # ages from narratives never become terms
    assert not any("year" in text for texts in by.values() for text in texts[1:])
