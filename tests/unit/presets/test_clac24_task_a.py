"""Issue 25: CLaC 2024 Task A (paper 003, Systems 1 and 2) run as the paper states it, end to end through TaskA.run on a
tiny store: the LLM picks the supporting PMIDs listwise from the sentence's candidates (Appendix A); contradictions
come from the question and its LLM decomposition (Appendix B), the decomposition's queries are searched; System 2's
NLI filter drops candidates before the LLM is shown them, and the LLM still decides among those it keeps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from medcite.config import load_settings
from medcite.llm.base import BaseLLM
from medcite.llm.completion import Completion, Message
from medcite.pipeline import Pipeline
from medcite.tasks.base import RunContext
from medcite.tasks.biogen_a_format import GroundingItem, GroundingSentence
from medcite.tasks.biogen_a_task import TaskA
from medcite.types import Article
from stores import store_of

pytest.importorskip("sentence_transformers")

DOCS = [Article(p, t, a) for p, t, a in [
    ("100", "Statins and LDL", "Statins lowered LDL cholesterol by 30% in adults."),
    ("101", "Vitamin D and fractures", "Vitamin D supplementation did not prevent fractures in older adults."),
    ("102", "A second vitamin D trial", "In a second trial vitamin D supplementation did not prevent fractures in "
                                        "older adults."),
    ("103", "Vitamin D benefit", "Vitamin D supplementation does prevent fractures in older adults."),
    ("104", "Statin myopathy", "Statin myopathy presents as muscle pain."),
]] + [Article(str(200 + i), f"Unrelated study {i}", f"Zebrafish fin {i} regeneration was imaged.") for i in range(6)]
QUESTION = "Does vitamin D prevent fractures?"
SENTENCE = "Vitamin D supplementation does prevent fractures in older adults."


class PaperLLM(BaseLLM):
    """Answers CLaC 2024's three Task A prompts by rule and records what each was shown."""

    name = "paper"

    def __init__(self) -> None:
        super().__init__("paper-v1")
        self.shown: dict[str, list[list[str]]] = {"decompose": [], "support": [], "contradict": []}

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        return Completion(text=self.reply(messages[-1]["content"]), model=self.model)

    def reply(self, text: str) -> str:
        listed = re.findall(r"^\* PMID (\d+):", text, re.MULTILINE)
        if "You are a biomedical queries extracting agent." in text:
            self.shown["decompose"].append([text.rsplit("Question: ", 1)[1].split("\n")[0]])
            return 'query: ["statin myopathy", "vitamin D fracture"]'
        if "You MUST provide at least one citation" in " ".join(text.replace("**", "").split()):
            self.shown["support"].append(listed)
            return f"Supporting Citations: [{listed[0]}]"
        if "identify and cite documents that contradict a given sentence" in text:
            self.shown["contradict"].append(listed)
            return '["102"]' if "102" in listed else "[]"  # the LLM's own call: it rejects 101
        raise AssertionError(f"unexpected prompt: {text[:200]!r}")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("clac24-a") / "store", DOCS)


def run(preset: str, store: Path, out: Path, *extra: str) -> tuple[PaperLLM, dict[str, Any]]:
    # ColBERT's offline stand-in (packaged MiniLM); System 2's filter: the rule-based 'words' stance (a passage with
    # every content word of the claim contradicts it when exactly one of the two is negated)
    settings = load_settings(preset, ["rerank.backend=embedding", "rerank.model=minilm", *extra])
    llm = PaperLLM()
    item = GroundingItem("7", QUESTION, (GroundingSentence(SENTENCE, ()),), {})
    with Pipeline(settings, store, llm=llm, grounding=True) as pipeline:
        result = TaskA(run_id="clac24").run([item], RunContext(pipeline.context, out, pipeline))
    assert result.report.ok, result.report.as_dict()
    (record,) = [json.loads(line) for line in (out / "verification.jsonl").read_text().splitlines() if line.strip()]
    return llm, record["grounding"][0]


def test_system_1_listwise_support_and_the_question_decomposition_path(store: Path, tmp_path: Path) -> None:
    llm, g = run("clac24-llm", store, tmp_path / "s1")
    assert llm.shown["decompose"] == [[QUESTION]]  # the question, not the sentence, is decomposed (Appendix B)
    assert g["contradiction_queries"] == [QUESTION, "statin myopathy", "vitamin D fracture"]
    assert "104" in g["contradiction_candidates"]  # found only by the decomposition's "statin myopathy"
    (support,) = llm.shown["support"]
    assert 1 <= len(support) <= 10 and g["supported"] == [support[0]]  # the LLM's pick, from the top 10
    (contra,) = llm.shown["contradict"]  # System 1: every question candidate but the supporting pick
    assert contra == [p for p in g["contradiction_candidates"] if p not in g["supported"]]
    assert {"101", "102", "104"} <= set(contra) and g["filtered"] is None
    assert g["contradicted"] == ["102"]
    assert set(g["verdicts"]) == set(support) | set(contra)  # every PMID shown is recorded as read
    assert g["verdicts"]["102"]["stance"] == "contradicts" and g["verdicts"]["101"]["stance"] == "neutral"


def test_system_2_nli_filters_before_the_llm_which_still_decides(store: Path, tmp_path: Path) -> None:
    llm, g = run("clac24-llm-nli", store, tmp_path / "s2", "ground.contradict_filter=null",
                 'ground.contradict_filter={"backend":"words"}')
    assert {"100", "103", "104"} & set(g["contradiction_candidates"])  # there was something to drop
    assert sorted(g["filtered"]) == ["101", "102"]  # only the abstracts with a contradicting sentence
    (contra,) = llm.shown["contradict"]
    assert contra == g["filtered"]  # the filter ran first: the LLM is shown only what it kept
    assert g["contradicted"] == ["102"]  # NLI kept 101 too; the LLM judge did not pick it


def test_system_2_filter_keeping_nothing_spares_the_llm_call(store: Path, tmp_path: Path) -> None:
    llm, g = run("clac24-llm-nli", store, tmp_path / "none", "ground.contradict_filter=null",
                 'ground.contradict_filter={"backend":"overlap"}',
                 "ground.contradict_candidates=1", 'ground.contradict_queries=["original"]')
    assert g["filtered"] == [] and llm.shown["contradict"] == [] and g["contradicted"] == []
    assert len(llm.shown["support"]) == 1 and llm.shown["decompose"] == []
