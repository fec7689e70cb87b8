"""CLaC 2024's post-hoc citation with a support judge: only evidence the generator read, judged per sentence,
at most ``max_citations`` supporting items, most similar first."""

from __future__ import annotations

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
    s = load_settings("clac24-simpleqa", ["llm.backend=rules", "llms.mistral.backend=rules"])
    assert s.generate.llm_names() == {None, "mistral"}  # type: ignore[attr-defined]
    gen = build_stage("generate", s.generate, settings=s)
    # issue 25: System 1 judges its top 10 documents (003 §2.2)
    assert isinstance(gen, LLMGenerator) and isinstance(gen.judge, LLMStance) and gen.judge_candidates == 10
