"""Issue 44: the answering pipeline labels every article it shows; medcite's presets weigh evidence by study
design (the tie-break, the caveat line), the paper presets never do; --design / --humans filter retrieval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings, preset_names
from medcite.corpus.store import DocumentStore, FileStats
from medcite.pipeline import Pipeline
from medcite.presets import provenance
from medcite.types import CASE_REPORT, RCT, Article, MeshHeading

TEXT = "Drug X lowered blood pressure in adults with hypertension."


def article(pmid: str, types: tuple[str, ...], tags: tuple[str, ...], text: str = TEXT, year: int = 2010) -> Article:
    return Article(pmid, "Drug X and blood pressure", text, year=year, publication_types=("Journal Article", *types),
                   mesh=tuple(MeshHeading(t) for t in tags))


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """Two articles of the same text (an exact tie in BM25): a case report (the lower PMID, first by default) and an
    RCT; a mouse study and an unrelated article."""
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert([article("101", ("Case Reports",), ("Humans",)),
                   article("102", ("Randomized Controlled Trial",), ("Humans",)),
                   article("103", (), ("Animals",), "Drug X lowered blood pressure in mice with hypertension."),
                   article("104", (), (), "Aspirin lowers fever in children.")], FileStats("x"))
    return tmp_path / "store"


def first_evidence(store: Path, *overrides: str) -> tuple[list[str], list[str]]:
    settings = load_settings("bm25", ["evidence.backend=abstracts", "evidence.docs=1", *overrides])
    with Pipeline(settings, store) as pipe:
        result = pipe.answer("Does drug X lower blood pressure in hypertension?")
    return [e.pmid for e in result.evidence], list(result.rankings)


def test_equally_relevant_evidence_reads_the_higher_level_first_only_where_the_preset_asks(store: Path) -> None:
    on, stages = first_evidence(store)
    assert on == ["102"] and "levels" in stages  # the RCT beats the case report it ties with
    off, stages = first_evidence(store, "design.prefer_levels=false")
    assert off == ["101"] and "levels" not in stages  # the retrieval's own order (ties by PMID)


def test_answers_and_articles_in_the_run_directory_carry_the_design(store: Path, tmp_path: Path) -> None:
    with Pipeline(load_settings("bm25", ["evidence.backend=abstracts"]), store) as pipe:
        result = pipe.run([pipe_topic()], tmp_path / "run")[0]
    assert result.designs["102"].design.name == RCT and result.timings["design_s"] >= 0
    articles = [json.loads(x) for x in (tmp_path / "run" / "articles.jsonl").read_text().splitlines()]
    assert articles and all("design" in a for a in articles)
    by_pmid = {a["pmid"]: a["design"] for a in articles}
    assert by_pmid["101"]["design"] == {"label": CASE_REPORT, "source": "indexed", "confidence": 1.0,
                                        "cue": "Case Reports"}
    assert by_pmid["103"]["text"] == "other" or "animal study" in by_pmid["103"]["text"]
    answer = json.loads((tmp_path / "run" / "answers.jsonl").read_text())
    assert set(answer["designs"]) == set(answer["sentences"][0]["pmids"]) | {p for s in answer["sentences"]
                                                                             for p in s["pmids"]}


def pipe_topic():  # noqa: ANN201 - a Topic
    from medcite.types import Topic

    return Topic("t1", "Does drug X lower blood pressure in hypertension?")


def test_an_answer_resting_only_on_animal_studies_says_so(tmp_path: Path) -> None:
    with DocumentStore.create(tmp_path / "s") as s, s.transaction() as tx:
        tx.upsert([article("201", (), ("Animals",), "Drug Y reversed liver fibrosis in mice."),
                   article("202", (), (), "Aspirin lowers fever in children.")], FileStats("x"))
    question = "Does drug Y reverse liver fibrosis?"
    with Pipeline(load_settings("bm25", ["evidence.backend=abstracts"]), tmp_path / "s") as pipe:
        answer = pipe.answer(question).answer
    assert answer.sentences[-1].kind == "caveat"
    assert answer.sentences[-1].text.startswith("Caution: sentence 1 rests only on animal studies")
    with Pipeline(load_settings("bm25", ["evidence.backend=abstracts", "design.caveat=false"]), tmp_path / "s") as pipe:
        assert all(s.kind != "caveat" for s in pipe.answer(question).answer.sentences)


def test_the_design_filter_keeps_only_those_articles(store: Path) -> None:
    settings = load_settings("bm25", ["design.only=rct"])
    with Pipeline(settings, store) as pipe:
        result = pipe.answer("Does drug X lower blood pressure?")
    assert {h.pmid for h in result.rankings["retrieval"]} == {"102"}
    with Pipeline(load_settings("bm25", ["design.humans=true"]), store) as pipe:
        found = {h.pmid for h in pipe.answer("Does drug X lower blood pressure?").rankings["retrieval"]}
    assert found == {"101", "102", "104"}  # the mouse study is out; the unindexed one is predicted ("children")


PAPER = [n for n in preset_names() if provenance.paper(n) is not None]
OWN_ANSWERING = ["offline", "bm25", "hybrid", "narrow", "wide", "best", "medcite-agentic", "medcite-agentic-novalidate",
                 "trained-ce"]


@pytest.mark.parametrize("name", PAPER)
def test_paper_presets_never_weigh_or_filter_by_design(name: str) -> None:
    design = load_settings(name).design
    assert not design.prefer_levels and not design.caveat and not design.filters


@pytest.mark.parametrize("name", OWN_ANSWERING)
def test_medcites_presets_weigh_evidence_and_say_it_is_medcites_choice(name: str) -> None:
    design = load_settings(name).design
    assert design.prefer_levels and design.caveat
    sources = provenance.sources(name)
    for path in ("design.prefer_levels", "design.caveat"):
        assert not sources[path].from_paper and "medcite's own option" in sources[path].choice
