"""CLaC 2024's post-hoc citation with a support judge: only evidence the generator read, judged per sentence,
at most ``max_citations`` supporting items, most similar first."""

from __future__ import annotations

import pytest

from medcite.attribute.llm_stance import LLMStance
from medcite.config import load_settings
from medcite.generate.attribution import attribute_judged
from medcite.generate.llm_generator import LLMGenerator
from medcite.llm.base import BaseLLM, Completion, Message
from medcite.pipeline import build_stage
from medcite.types import Evidence, Query, Topic
from medcite_fakes import WordsStance

EVIDENCE = [
    Evidence(1, "111", "Statins lowered LDL cholesterol in adults.", score=0.9),
    Evidence(2, "222", "Statins did not lower LDL cholesterol in children.", score=0.8),
    Evidence(3, "333", "Malaria killed children in Africa.", score=0.7),
    Evidence(4, "444", "Statins lowered LDL cholesterol and triglycerides in adults.", score=0.6),
]


def test_judged_attribution_cites_what_the_judge_supports() -> None:
    drafts = attribute_judged(["Statins lowered LDL cholesterol.", "Malaria killed children.", "Gout is painful."],
                              EVIDENCE, WordsStance(), candidates=3, max_citations=3)
    # sentence 1: candidates by TF-IDF are 1, 4, 2; 1 and 4 hold every content word and agree in polarity,
    # 2 is negated (contradicts): cited 1 and 4 (most similar first)
    assert drafts[0].indices == [1, 4]
    assert drafts[1].indices == [3]
    assert drafts[2].indices == []  # nothing supports it: dropped later


def test_judged_attribution_respects_candidates_and_the_cap() -> None:
    one = attribute_judged(["Statins lowered LDL cholesterol."], EVIDENCE, WordsStance(), candidates=1)
    assert one[0].indices == [1]
    capped = attribute_judged(["Statins lowered LDL cholesterol."], EVIDENCE, WordsStance(), candidates=4,
                              max_citations=1)
    assert capped[0].indices == [1]


class JudgeLLM(BaseLLM):
    """Answers the generation prompt with two sentences; the stance prompt: SUPPORTS when the statement is about
    statins and the abstract says 'adults'."""

    name = "judge"

    def __init__(self) -> None:
        super().__init__("judge-model")
        self.stance_prompts: list[str] = []

    def _generate(self, messages: list[Message], params: dict) -> Completion:  # type: ignore[type-arg]
        text = messages[-1]["content"]
        if text.startswith("Statement:"):
            self.stance_prompts.append(text)
            statement, _, rest = text.partition("\n")
            abstract = rest.split("Abstract:", 1)[1].split("\n", 1)[0]
            ok = "Statins" in statement and "adults" in abstract
            return Completion(text="SUPPORTS\nNONE" if ok else "NEUTRAL\nNONE", model=self.model)
        return Completion(text="Statins lowered LDL cholesterol in adults. Gout hurts.", model=self.model)


def test_generator_cites_post_hoc_with_the_llm_support_prompt() -> None:
    llm = JudgeLLM()
    gen = LLMGenerator(llm, mode="posthoc", max_attempts=1, fallback=False, judge=LLMStance(llm), judge_candidates=2)
    topic = Topic("t1", "Do statins lower LDL?", narrative="adult patients", topic="statins")
    ans = gen.generate(topic, [Query("q0", topic.question)], EVIDENCE)
    assert [(s.text, s.pmids) for s in ans.sentences] == [("Statins lowered LDL cholesterol in adults.",
                                                           ("111", "444"))]
    assert len(llm.stance_prompts) == 4  # 2 sentences x 2 candidates, nothing outside the evidence block
    assert all("Malaria" not in p for p in llm.stance_prompts[:2])


def test_the_preset_builds_the_judge_from_its_own_llm() -> None:
    from medcite.generate.attribution import RerankShortlist
    from medcite.presets.offline import offline_settings

    base = load_settings("clac24-simpleqa", ["llm.backend=rules", "llms.mistral.backend=rules"])
    shortlist = offline_settings(base, "local").generate.posthoc_shortlist  # type: ignore[attr-defined]
    assert shortlist.backend == "embedding"  # ColBERT is hub-only: the MiniLM stand-in shortlists offline
    s = base.model_copy(update={"generate": base.generate.model_copy(update={"posthoc_shortlist": shortlist})})
    assert s.generate.llm_names() == {None, "mistral"}  # type: ignore[attr-defined]
    assert s.generate.posthoc_shortlist.k == 10  # type: ignore[attr-defined]
    gen = build_stage("generate", s.generate, settings=s)
    # issue 25: System 1 judges its top 10 documents (003 §2.2), picked by its reranker, not TF-IDF
    assert isinstance(gen, LLMGenerator) and isinstance(gen.judge, LLMStance) and gen.judge_candidates == 10
    assert isinstance(gen.shortlist, RerankShortlist)
    assert (gen.plain_prompt, gen.condense_prompt) == ("clac24_generate", "clac24_condense")


def test_a_reranker_shortlist_replaces_tfidf() -> None:
    from medcite.generate.attribution import RerankShortlist
    from medcite_fakes import ReverseReranker

    # the reverse reranker puts the block's last items first: with 2 candidates, items 4 and 3 are judged, so the
    # sentence is cited by 4 only (3 is about malaria), where TF-IDF would have judged 1 and 4
    drafts = attribute_judged(["Statins lowered LDL cholesterol."], EVIDENCE, WordsStance(), candidates=2,
                              shortlist=RerankShortlist(ReverseReranker(keep_first=False)))
    assert drafts[0].indices == [4]
    assert attribute_judged(["Statins lowered LDL cholesterol."], EVIDENCE, WordsStance(),
                            candidates=2)[0].indices == [1, 4]


def test_clac24_prompts_render_the_documents_and_the_long_answer() -> None:
    class Seen(BaseLLM):
        def __init__(self) -> None:
            super().__init__("seen")
            self.prompts: list[str] = []

        def _generate(self, messages: list[Message], params: dict) -> Completion:  # type: ignore[type-arg]
            self.prompts.append(messages[-1]["content"])
            if "summarizing expert" in messages[-1]["content"]:
                return Completion(text="output: Statins lowered LDL cholesterol in adults.", model=self.model)
            return Completion(text="output: " + "Statins lowered LDL cholesterol in adults. " * 60, model=self.model)

    llm = Seen()
    gen = LLMGenerator(llm, mode="posthoc", max_attempts=1, fallback=False, judge=WordsStance(), condense=True,
                       plain_prompt="clac24_generate", condense_prompt="clac24_condense")
    topic = Topic("t1", "Do statins lower LDL?", narrative="adult patients", topic="statins")
    ans = gen.generate(topic, [Query("q0", topic.question)], EVIDENCE)
    first, second = llm.prompts
    assert "Documents:\n[1] (111) Statins lowered LDL" in first and "Topic: statins\nNarrative: adult patients" in first
    assert second.startswith("You are a medical question-answering summarizing expert.")
    assert "Long Answer:\nStatins lowered LDL cholesterol in adults." in second
    assert [s.text for s in ans.sentences] == ["Statins lowered LDL cholesterol in adults."]  # 'output:' taken off


class PickLLM(BaseLLM):
    """Answers CLaC 2024's listwise support prompt: every shown PMID whose text says 'adults' (the prompt's list)."""

    name = "pick"

    def __init__(self) -> None:
        super().__init__("pick-model")
        self.shown: list[list[str]] = []

    def _generate(self, messages: list[Message], params: dict) -> Completion:  # type: ignore[type-arg]
        import re

        text = messages[-1]["content"]
        assert "You ** MUST provide at least one citation **" in text
        docs = re.findall(r"^\* PMID (\d+): (.*)$", text.split("**YOUR TASK:**", 1)[1], re.MULTILINE)
        self.shown.append([p for p, _ in docs])
        return Completion(text="Supporting Citations: [" + ", ".join(p for p, d in docs if "adults" in d) + ", 999]",
                          model=self.model)


def test_listwise_pick_cites_what_the_llm_names_among_the_shortlist() -> None:
    from medcite.generate.attribution import attribute_listwise
    from medcite.generate.listwise import ListwiseCitations

    llm = PickLLM()
    drafts = attribute_listwise(["Statins lowered LDL cholesterol.", "Gout is painful."], EVIDENCE,
                                ListwiseCitations(llm), candidates=3, max_citations=3)
    # sentence 1's TF-IDF shortlist is items 1, 4, 2: the LLM names 111 and 444 (and 999, never shown: ignored)
    assert llm.shown[0] == ["111", "444", "222"] and drafts[0].indices == [1, 4]
    assert attribute_listwise(["Statins lowered LDL cholesterol."], EVIDENCE, ListwiseCitations(PickLLM()),
                              candidates=3, max_citations=1)[0].indices == [1]


def test_the_preset_picks_listwise_with_the_judges_llm() -> None:
    from medcite.errors import ConfigError
    from medcite.generate.listwise import ListwiseCitations

    s = load_settings("clac24-simpleqa", ["llm.backend=rules", "llms.mistral.backend=rules",
                                          "generate.posthoc_shortlist=null"])
    assert s.generate.posthoc_pick == "listwise"  # type: ignore[attr-defined]
    gen = build_stage("generate", s.generate, settings=s)
    assert isinstance(gen, LLMGenerator) and isinstance(gen.picker, ListwiseCitations)
    assert gen.picker.llm is not None and gen.picker.support_prompt == "clac24_support"
    bad = load_settings("clac24-simpleqa", ["llm.backend=rules", "generate.posthoc_shortlist=null",
                                            "generate.posthoc_judge=null",
                                            'generate.posthoc_judge={"backend":"overlap"}'])
    with pytest.raises(ConfigError, match="posthoc_pick=listwise"):
        build_stage("generate", bad.generate, settings=bad)
