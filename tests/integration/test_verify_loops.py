"""Dalhousie 2025's verification loops end to end on a tiny store: citation validation (check, drop,
regenerate with reasons), the evidence-sufficiency loop, the answer-first flow; every decision recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError, LLMError
from medcite.pipeline import Pipeline
from medcite.types import Article, Stance, Topic
from stores import store_of

DOCS = [
    Article("11", "Statins and LDL", "Statins lowered LDL cholesterol in adults."),
    Article("12", "Statins in trials", "Statins lowered LDL cholesterol in older adults."),
    Article("13", "No effect of statins", "Statins never lowered LDL cholesterol in this trial."),
    Article("14", "Vitamin D", "Vitamin D supplementation prevented fractures in women."),
    *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(10)],
]
TOPIC = Topic("t1", "Do statins lower LDL cholesterol?")
# the loops are checked on the sentence snippets every LLM preset uses (the offline preset's answer sentences
# keep only sentences naming the question's key concepts, so a sufficiency query's off-topic hit never shows)
BASE = ["stance.backend=words", "retrieve.branches=[\"bm25\"]", "generate.backend=llm", "llm.backend=replies",
        "evidence.backend=snippets", "evidence.docs=3"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("loops") / "store", DOCS)


def _settings(*extra: str, replies: list[str]) -> Any:
    return load_settings("offline", [*BASE, f"llm.replies={json.dumps(replies)}", *extra])


def _indices(store: Path) -> dict[str, int]:
    """PMID -> its index in the evidence block of TOPIC (the pipeline is deterministic)."""
    with Pipeline(_settings(replies=["Statins lowered LDL cholesterol [1]."]), store) as pipe:
        result = pipe.answer(TOPIC)
    return {e.pmid: e.index for e in result.evidence}


def test_drop_removes_contradicted_citations_and_records_why(store: Path, tmp_path: Path) -> None:
    idx = _indices(store)
    reply = f"Statins lowered LDL cholesterol [{idx['11']}][{idx['13']}]."
    with Pipeline(_settings("verify.citations=drop", replies=[reply]), store) as pipe:
        pipe.run([TOPIC], tmp_path / "run")
    answer = json.loads((tmp_path / "run" / "answers.jsonl").read_text())
    (sentence,) = answer["sentences"]
    assert sentence["pmids"] == ["11"] and sentence["stances"] == {"11": "supports"}
    dropped = [d for d in answer["dropped"] if d["what"] == "citation"]
    assert len(dropped) == 1 and dropped[0]["text"].startswith("13") and "contradicts" in dropped[0]["reason"]
    record = json.loads((tmp_path / "run" / "verification.jsonl").read_text())
    checks = {c["pmid"]: c for c in record["citations"]["checks"]}
    assert checks["13"]["stance"] == "contradicts" and not checks["13"]["kept"] and checks["11"]["kept"]
    # the span that decided is a real span of the abstract
    section, start, end = checks["13"]["span"]
    assert section in ("title", "abstract") and end > start

    with Pipeline(_settings("verify.citations=check", "verify.gate=off", replies=[reply]), store) as pipe:
        checked = pipe.answer(TOPIC)
    assert checked.answer.sentences[0].pmids == ("11", "13")  # check records, removes nothing
    assert dict(checked.answer.sentences[0].stances)["13"] is Stance.CONTRADICTS
    # with the default overlap gate, 'check' still records, and the gate removes 13 ("never lowered")
    with Pipeline(_settings("verify.citations=check", replies=[reply]), store) as pipe:
        gated = pipe.answer(TOPIC)
    assert gated.answer.sentences[0].pmids == ("11",)
    gate = gated.verification["gate"]
    assert gate["judge"] == "overlap" and gate["rejected"] == 1 and gate["quoted"] == 1  # 11 is quoted verbatim
    (check,) = gate["checks"]
    assert check["pmid"] == "13" and "negation differs" in check["reason"]


def test_regenerate_feeds_the_reasons_back(store: Path) -> None:
    from medcite_fakes import ReplyLLM

    idx = _indices(store)
    bad = f"Statins lowered LDL cholesterol [{idx['13']}]."
    good = f"Statins lowered LDL cholesterol [{idx['12']}]."
    ReplyLLM.instances.clear()
    with Pipeline(_settings("verify.citations=regenerate", "verify.max_rounds=3", replies=[bad, good]),
                  store) as pipe:
        result = pipe.answer(TOPIC)
    assert result.answer.sentences[0].pmids == ("12",)
    rounds = result.verification["citations"]["rounds"]
    assert len(rounds) == 1 and any("13" in r for r in rounds[0]["rejected"])
    llm = ReplyLLM.instances[-1]
    assert len(llm.prompts) == 2
    assert "13" in llm.prompts[1][-1]["content"]  # the second generation saw the reason


def test_regenerate_is_bounded(store: Path) -> None:
    from medcite_fakes import ReplyLLM

    idx = _indices(store)
    bad = f"Statins lowered LDL cholesterol [{idx['13']}]."
    ReplyLLM.instances.clear()
    with Pipeline(_settings("verify.citations=regenerate", "verify.max_rounds=3", replies=[bad]), store) as pipe:
        result = pipe.answer(TOPIC)
    assert len(ReplyLLM.instances[-1].prompts) == 3  # max_rounds generations, then what is unsupported goes
    assert result.answer.sentences == [] or all("13" not in s.pmids for s in result.answer.sentences)


def test_sufficiency_loop_searches_again_then_stops(store: Path) -> None:
    replies = ["QUERY: vitamin D fractures", "SUFFICIENT", "Vitamin D supplementation prevented fractures [1]."]
    with Pipeline(_settings("verify.sufficiency_rounds=5", replies=replies), store) as pipe:
        result = pipe.answer(TOPIC)
    rounds = result.verification["sufficiency"]
    assert rounds == [{"round": 1, "sufficient": False, "query": "vitamin D fractures"},
                      {"round": 2, "sufficient": True, "query": ""}]
    assert any(q.stage == "sufficiency" and q.text == "vitamin D fractures" for q in result.queries)
    assert "14" in {e.pmid for e in result.evidence}  # the new query's hit reached the evidence


def test_answer_first_grounds_each_sentence(store: Path, tmp_path: Path) -> None:
    answer = "Statins lowered LDL cholesterol. Zebrafish grow new teeth every week."
    for unsupported, kept in (("drop", 1), ("flag", 2)):
        with Pipeline(_settings("flow=generate-then-ground", f"ground.unsupported={unsupported}",
                                replies=[answer]), store) as pipe:
            result = pipe.answer(TOPIC)
        sentences = result.answer.sentences
        assert len(sentences) == kept
        assert sentences[0].text == "Statins lowered LDL cholesterol." and set(sentences[0].pmids) <= {"11", "12"}
        assert sentences[0].pmids and "13" not in sentences[0].pmids  # never a contradicting abstract
        assert any("Zebrafish grow new teeth" in d.text for d in result.answer.dropped)
        grounding = result.verification["grounding"]
        assert grounding[1]["supported"] == [] and grounding[0]["supported"]


def test_answer_first_without_an_llm_says_so(store: Path) -> None:
    # dal25-expd answers (and writes its supportive rewrites) with llms.deepseek (Dal@TREC25 §III-B1)
    settings = load_settings("dal25-expd", ["llm.backend=none", "llms.deepseek.backend=none", "stance.backend=words",
                                            "indexes.dense.encoder.backend=hash-bow", "rerank.backend=none"])
    with pytest.raises(ConfigError) as err:
        with Pipeline(settings, store) as pipe:
            pipe.answer(TOPIC)
    text = str(err.value) + (err.value.hint or "")
    assert "language model" in text and "backend=local" in text


def test_answer_first_with_its_llm_server_down_stops_before_any_work(store: Path, tmp_path: Path) -> None:
    # dal25-expd answers with llms.deepseek (a vLLM server at 127.0.0.1:8000 that is not running here)
    settings = load_settings("dal25-expd", ["llm.backend=none", "stance.backend=words",
                                            "indexes.dense.encoder.backend=hash-bow", "rerank.backend=none",
                                            "generate.backend=extractive"])
    with pytest.raises((ConfigError, LLMError)) as err:
        Pipeline(settings, store)  # construction, not the first topic, says so
    assert "deepseek" in (str(err.value) + (err.value.hint or "")).lower()


def test_the_sufficiency_loop_with_its_llm_server_down_stops_before_any_work(store: Path) -> None:
    settings = load_settings("dal25-afmmd", ["llm.backend=none", "stance.backend=words", "generate.backend=extractive",
                                             "indexes.dense.encoder.backend=hash-bow", "rerank.backend=none"])
    with pytest.raises((ConfigError, LLMError)) as err:
        Pipeline(settings, store)
    assert "sufficiency" in str(err.value) or "deepseek" in (str(err.value) + (err.value.hint or "")).lower()
