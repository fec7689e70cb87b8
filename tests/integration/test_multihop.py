"""CLaC 2024 MedHopQA's multi-hop flow (flow=multi-hop) end to end on a tiny store, through its preset: the
simple/multi-hop decision, the key phrase's sub-question, further sub-questions from the evidence, pooling,
short and long answers, System 1's post-hoc citations; every hop recorded and traced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings, with_overrides
from medcite.corpus.store import DocumentStore
from medcite.errors import ConfigError
from medcite.pipeline import Pipeline
from medcite.presets.offline import offline_lines, offline_settings
from medcite.types import Article, Topic
from stores import store_of

DOCS = [
    Article("11", "BRCA1 and breast cancer", "BRCA1 mutations cause hereditary breast cancer in women."),
    Article("12", "BRCA1 protein", "The BRCA1 protein repairs double-strand DNA breaks by homologous recombination."),
    Article("13", "PARP inhibitors", "PARP inhibitors such as olaparib kill cells that cannot repair DNA breaks."),
    Article("14", "Vitamin D", "Vitamin D supplementation prevented fractures in older women."),
    *[Article(str(100 + i), f"Zebrafish {i}", f"Zebrafish fins regenerate in {i} days.") for i in range(10)],
]
QUESTION = "Which drug class targets the DNA repair defect of the gene mutated in hereditary breast cancer?"
TOPIC = Topic("t1", QUESTION, narrative="A patient asks about targeted treatment.", topic="hereditary breast cancer")
PRESET = "clac24-medhopqa-bm25"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("medhop") / "store", DOCS)


def _settings(replies: list[str], *extra: str, judge: str = "Supporting Citations: [11, 12, 13]") -> Any:
    """The preset with scripted LLMs: ``replies`` for the default LLM (hops, short and long answer) in turn,
    Mistral always answering ``judge`` to System 1's listwise support prompt (only the PMIDs it was shown count);
    the citation step's ColBERT shortlist by its offline stand-in."""
    base = load_settings(PRESET)
    shortlist = offline_settings(base, "local").generate.posthoc_shortlist  # type: ignore[attr-defined]
    base = base.model_copy(update={"generate": base.generate.model_copy(update={"posthoc_shortlist": shortlist})})
    return with_overrides(base, ["llm.backend=replies", f"llm.replies={json.dumps(replies)}",
                                  "llms.mistral.backend=replies", f"llms.mistral.replies={json.dumps([judge])}",
                                  "retrieve.k=3", "retrieve.keep=3", "hops.docs=4", "evidence.docs=4",
                                  "evidence.max_items=4", "generate.posthoc_candidates=2", *extra])


LONG = "BRCA1 protein repairs double-strand DNA breaks. PARP inhibitors kill cells that cannot repair DNA breaks."
HOPS = ["MULTI-HOP", "KEY PHRASE: the gene mutated in hereditary breast cancer\n"
        "SUB-QUESTION: Which gene is mutated in hereditary breast cancer?",
        "SUB-QUESTION: What does the BRCA1 protein repair?\nSUB-QUESTION: Which gene is mutated in hereditary "
        "breast cancer?",
        "SUB-QUESTION: Which drugs kill cells that cannot repair DNA breaks?", "PARP inhibitors", LONG]


def test_multi_hop_question_hops_pools_and_records_every_hop(store: Path, tmp_path: Path) -> None:
    from medcite_fakes import ReplyLLM

    ReplyLLM.instances.clear()
    with Pipeline(_settings(HOPS), store) as pipe:
        pipe.run([TOPIC], tmp_path / "run")
    hops_llm = ReplyLLM.instances[0]
    prompts = [m[-1]["content"] for m in hops_llm.prompts]
    assert "SIMPLE or MULTI-HOP" in prompts[0] and "key phrase" in prompts[1]
    # hop 2 is written from what hop 1 found (the BRCA1 abstract) and names what was already searched
    assert "Sub-questions already searched" in prompts[2] and "(11) BRCA1 and breast cancer" in prompts[2]
    assert "- Which gene is mutated in hereditary breast cancer?" in prompts[2]
    assert "short answer only" in prompts[4] and "Do not write citations" in prompts[5]

    record = json.loads((tmp_path / "run" / "verification.jsonl").read_text())["multihop"]
    assert record["kind"] == "multi-hop" and record["key_phrase"] == "the gene mutated in hereditary breast cancer"
    asked = [[s["text"] for s in h["sub_questions"]] for h in record["hops"]]
    assert asked == [[QUESTION], ["Which gene is mutated in hereditary breast cancer?"],
                     ["What does the BRCA1 protein repair?"],  # the repeated sub-question is not searched again
                     ["Which drugs kill cells that cannot repair DNA breaks?"]]
    assert record["stopped"] == "max_hops (3) reached" and record["short_answer"] == "PARP inhibitors"
    by_text = {s["text"]: s["hits"] for h in record["hops"] for s in h["sub_questions"]}
    assert by_text["What does the BRCA1 protein repair?"][0] == "12"
    assert by_text["Which drugs kill cells that cannot repair DNA breaks?"][0] == "13"
    assert set(record["pooled"]) == {"11", "12", "13"}  # every hop's hits pooled (the rest match no word)

    queries = json.loads((tmp_path / "run" / "queries.jsonl").read_text())["queries"]
    assert [q["stage"] for q in queries] == ["original", "sub_question", "sub_question", "sub_question"]
    assert [q["id"] for q in queries] == ["q0", "q1", "q2", "q3"]
    evidence = json.loads((tmp_path / "run" / "evidence.jsonl").read_text())["evidence"]
    assert [e["pmid"] for e in evidence] == record["pooled"]
    branches = {e["pmid"]: e["branches"] for e in evidence}  # which searches found each: q3 is hop 3's question
    assert "bm25/q3" in branches["13"] and "bm25/q3" not in branches["11"]

    answer = json.loads((tmp_path / "run" / "answers.jsonl").read_text())
    assert " ".join(s["text"] for s in answer["sentences"]) == LONG  # the long answer is submitted
    cited = {p for s in answer["sentences"] for p in s["pmids"]}
    assert cited and cited <= {e["pmid"] for e in evidence}
    trace = [json.loads(x) for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    stages = [(r["stage"], r.get("hop")) for r in trace]
    assert stages[:6] == [("hop_classification", None), ("sub_question", 1), ("sub_question", 2),
                          ("sub_question", 3), ("short_answer", None), ("generation", None)]
    assert {s for s, _ in stages[6:]} == {"citation-support"}  # Mistral's listwise picks, one per sentence


def test_simple_question_skips_decomposition(store: Path) -> None:
    from medcite_fakes import ReplyLLM

    ReplyLLM.instances.clear()
    with Pipeline(_settings(["SIMPLE", "yes", LONG]), store) as pipe:
        result = pipe.answer(Topic("t2", "What does the BRCA1 protein repair?"))
    record = result.verification["multihop"]
    assert record["kind"] == "simple" and [h["hop"] for h in record["hops"]] == [0]
    assert [q.stage for q in result.queries] == ["original"]
    assert len(ReplyLLM.instances[0].prompts) == 3  # classify, short answer, long answer: no sub-question call
    assert result.evidence[0].pmid == "12"


def test_done_stops_and_classify_never_or_always_skip_the_judgement(store: Path) -> None:
    from medcite_fakes import ReplyLLM

    replies = ["KEY PHRASE: BRCA1\nSUB-QUESTION: What does the BRCA1 protein repair?", "DONE", "yes", LONG]
    ReplyLLM.instances.clear()
    with Pipeline(_settings(replies, "hops.classify=always", "hops.search_question=false"), store) as pipe:
        result = pipe.answer(TOPIC)
    record = result.verification["multihop"]
    assert [h["hop"] for h in record["hops"]] == [1] and record["stopped"].startswith("hop 2: no new sub-question")
    assert [q.stage for q in result.queries] == ["sub_question"]  # the question itself was not searched
    assert "SIMPLE or MULTI-HOP" not in ReplyLLM.instances[0].prompts[0][-1]["content"]
    with Pipeline(_settings(["yes", LONG], "hops.classify=never"), store) as pipe:
        assert pipe.answer(TOPIC).verification["multihop"]["kind"] == "simple"


def test_unreadable_first_hop_searches_the_question_only(store: Path) -> None:
    with Pipeline(_settings(["MULTI-HOP", "I cannot help with that", "yes", LONG]), store) as pipe:
        result = pipe.answer(TOPIC)
    record = result.verification["multihop"]
    assert record["stopped"] == "no sub-question could be read" and [h["hop"] for h in record["hops"]] == [0]


def test_lines_copied_from_the_instructions_are_not_sub_questions(store: Path) -> None:
    """SmolLM2-135M repeats the prompt: its echo is neither a key phrase nor a sub-question."""
    echo_key = ("KEY PHRASE: the entity or concept that must be understood or identified first\n"
                "SUB-QUESTION: What does the BRCA1 protein repair?")
    echo_next = "SUB-QUESTION: Do not repeat a sub-question already searched.\nSUB-QUESTION: What is olaparib?"
    with Pipeline(_settings(["MULTI-HOP", echo_key, echo_next, "DONE", "yes", LONG]), store) as pipe:
        record = pipe.answer(TOPIC).verification["multihop"]
    assert record["key_phrase"] == ""
    assert [[s["text"] for s in h["sub_questions"]] for h in record["hops"][1:]] == [
        ["What does the BRCA1 protein repair?"], ["What is olaparib?"]]
    echo_both = "KEY PHRASE: BRCA1\nSUB-QUESTION: the entity or concept that must be understood or identified first"
    with Pipeline(_settings(["MULTI-HOP", echo_both, "DONE", "yes", LONG]), store) as pipe:
        record = pipe.answer(TOPIC).verification["multihop"]
    assert record["key_phrase"] == "BRCA1" and record["hops"][1]["sub_questions"][0]["text"] == "BRCA1"


def test_without_an_llm_the_flow_stops_before_any_work(store: Path) -> None:
    settings = offline_settings(load_settings(PRESET), "none")
    assert settings.llm.backend == "none" and settings.flow == "multi-hop"
    with pytest.raises(ConfigError) as err:
        Pipeline(settings, store)
    message, hint = err.value.message, err.value.hint or ""
    assert "multi-hop" in message and "no no-LLM stand-in" in message
    assert "--set llm.backend=local --set llm.model=null" in hint and hint.count("run offline") == 1


def test_offline_swaps_name_every_llm_of_the_preset() -> None:
    swaps = " ".join(offline_lines(load_settings(PRESET), "local"))
    assert "--set llm.backend=local --set llm.model=null" in swaps
    assert "--set llms.mistral.backend=local --set llms.mistral.model=null" in swaps
    assert "rerank" not in swaps  # the MedHopQA systems do not rerank


@pytest.mark.slow
def test_packaged_smollm2_runs_the_preset_on_a_biogen_topic(shared_data: Path, tmp_path: Path) -> None:
    """The whole chain with the preset's own offline swaps (the packaged SmolLM2-135M for Qwen3-8B and Mistral) on a
    real BioGen 2025 topic over real PubMed abstracts; budgets cut so it takes about a minute; the submission must
    validate whatever the small model writes."""
    from medcite.corpus.ingest import ingest
    from medcite.rundir import read_answers
    from medcite.tasks.biogen_b_format import write_biogen25
    from medcite.tasks.biogen_b_validate import evidence_by_topic, validate_biogen25
    from medcite.tasks.topics import read_topics

    store = tmp_path / "store"
    with DocumentStore.create(store) as s:
        ingest([shared_data / "pubmed_xml" / "pubmed21n1298_first300_plus_deletecitation.xml.gz"], s)
    topics = [t for t in read_topics(shared_data / "biogen" / "biogen2025_taskB_topics.json") if t.id == "181"]
    base = load_settings(PRESET)
    budget = ["hops.docs=3", "evidence.docs=3", "evidence.max_items=3", "hops.max_hops=2", "hops.max_tokens=32",
              "generate.max_tokens=48", "generate.max_attempts=1", "generate.posthoc_candidates=1",
              f"llm.cache_dir={tmp_path / 'cache'}", f"llms.mistral.cache_dir={tmp_path / 'cache'}"]
    settings = with_overrides(offline_settings(base, "local"), budget)
    assert settings.llm.backend == settings.llms["mistral"].backend == "local" and settings.flow == "multi-hop"
    with Pipeline(settings, store) as pipe:
        pipe.run(topics, tmp_path / "run")
    sub = tmp_path / "run" / "submission.jsonl"
    write_biogen25(sub, read_answers(tmp_path / "run"), "medcite", "medhop")
    with DocumentStore.open(store) as s:
        report = validate_biogen25(sub, in_corpus=s.existing, expected_topics=["181"],
                                   evidence=evidence_by_topic(tmp_path / "run"))
    assert report.ok, report.errors
    stages = {json.loads(x)["stage"] for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()}
    assert {"hop_classification", "sub_question", "short_answer", "generation"} <= stages
    record = json.loads((tmp_path / "run" / "verification.jsonl").read_text())["multihop"]
    assert record["hops"][0]["sub_questions"][0]["text"] == topics[0].question and len(record["pooled"]) <= 3
