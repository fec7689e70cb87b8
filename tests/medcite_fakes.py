"""Fake backends registered for the tests (tests/conftest.py), reachable from settings like any other.

They are real backends of their stages (a Config model and ``from_config``), so a test builds them through
the one construction path with ``--set`` instead of injecting objects by hand:

- encoder ``hash-bow``: a deterministic bag-of-words hashing encoder (no model files);
- llm ``rules``: answers by fixed rules of the prompt it receives (summaries, reformulations,
  decompositions, condensation, multi-hop sub-questions, cited and uncited answers; its first cited answer
  breaks a rule so the constraint-retry path runs);
- llm ``replies``: answers with the configured replies in turn (the last one repeats);
- stance ``words``: supports when a passage holds every content word of the claim, contradicts when
  exactly one of them is negated;
- rerank ``hub-only`` (registered by the tests that need it): loads a model this machine lacks and declares no
  offline stand-in;
- :class:`Fixed` (not registered): a pointwise reranker whose score of each PMID is given, for the tests of the
  rerankers that combine others (ensembles, cascades).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from medcite.attribute.base import PassageClassifier, StanceConfig
from medcite.index.dense.encoders import EncoderConfig
from medcite.llm.base import BaseLLM, Completion, LLMConfig, Message
from medcite.rerank.base import RerankConfig
from medcite.rerank.scoring import PointwiseReranker
from medcite.types import Article


class HashConfig(EncoderConfig):
    backend: Literal["hash-bow"] = "hash-bow"
    dim: int = Field(32, ge=2, description="Vector size.")


class HashEncoder:
    """A tiny deterministic bag-of-words encoder (hashing trick), enough to exercise the dense code path."""

    Config = HashConfig
    name = "hash-bow"

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim
        self.fingerprint = f"hash-bow-{dim}"
        self.documents_encoded = 0

    @classmethod
    def from_config(cls, cfg: HashConfig, ctx: Any = None) -> HashEncoder:
        return cls(cfg.dim)

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1
        n = np.linalg.norm(v)
        return v / n if n else v

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        self.documents_encoded += len(articles)
        return np.stack([self._vec(a.text) for a in articles]) if articles else np.zeros((0, self.dim), np.float32)


class RulesConfig(LLMConfig):
    backend: Literal["rules"] = "rules"
    model: str | None = "rules-v1"
    cache: bool = False


class RuleLLM(BaseLLM):
    """Answers by fixed rules of the prompt (see the module docstring)."""

    Config = RulesConfig
    name = "rules"

    def __init__(self, model: str = "rules-v1", cache: Any = None) -> None:
        super().__init__(model, cache=cache)
        self.calls = 0

    @classmethod
    def from_config(cls, cfg: RulesConfig, ctx: Any = None, *, cache: Any = None) -> RuleLLM:
        return cls(cfg.model or "rules-v1", cache=cache)

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.calls += 1
        return Completion(text=self.answer(messages), model=self.model)

    @staticmethod
    def answer(messages: list[Message]) -> str:
        first = messages[1]["content"] if len(messages) > 1 else messages[0]["content"]
        last = messages[-1]["content"]
        if "You are a biomedical queries extracting agent." in first:  # CLaC 2024 Appendix B
            return 'query: ["statin LDL", "blood pressure exercise", "vitamin D fracture"]'
        if "You are a medical citation expert." in first:  # CLaC 2024 Appendix A: the first two listed / none
            listed = re.findall(r"^\* PMID (\d+):", first, re.MULTILINE)
            if "contradict a given sentence" in first:
                return "[]"
            return "Supporting Citations: [" + ", ".join(listed[:2]) + "]"
        if "You are a medical question-answering summarizing expert." in first:  # CLaC 2024 Appendix C
            return "output: " + first.split("Long Answer:\n", 1)[1].split(". ")[0].rstrip(".") + "."
        if "SIMPLE or MULTI-HOP" in first:  # CLaC 2024 MedHopQA: every question takes the hops
            return "MULTI-HOP"
        if "Find its key phrase" in first:
            question = first.rsplit("Question: ", 1)[1].strip().rstrip("?")
            key = " ".join(question.split()[1:4])
            return f"KEY PHRASE: {key}\nSUB-QUESTION: What is known about {key}?"
        if "Sub-questions already searched" in first:
            return "DONE"
        if "short answer only" in first:
            return "Short answer: yes"
        if "Summarize the abstract" in first:
            abstract = first.split("Abstract: ", 1)[1]
            return "Summary: " + abstract.split(". ")[0].rstrip(".") + "."
        if "Summarize the biomedical EVIDENCE" in first:  # CLaC 2025 Listing 2: "EVIDENCE:\n<title> <abstract>"
            abstract = first.split("EVIDENCE:\n", 1)[1].split("\n\nSummary:", 1)[0]
            return abstract.split(". ")[-1 if abstract.count(". ") else 0].rstrip(".") + "."
        if "exactly three different questions" in first or "rewrite the question in three different ways" in first:
            return "1. statin LDL cholesterol\n2. can statins hurt my muscles\n3. statin myopathy"
        if "as one keyword query" in first:
            return "Query: statin LDL cholesterol hypercholesterolemia"
        if "keyword queries" in first:
            return '["statin LDL", "blood pressure exercise", "vitamin D fracture"]'
        if "Shorten the answer" in first:
            return last.split("Answer:\n", 1)[1].split(". ")[0] + "."
        if "RankGPT" in messages[0]["content"]:
            return "[2] > [1]"
        evidence = re.findall(r"^\[(\d+)\] \(\d+\) (.+)$", first, re.MULTILINE)
        if "Do not write citations" in first or "You are a medical question-answering expert." in first:
            return " ".join(text for _, text in evidence[:2])
        if len(messages) <= 2:  # first attempt: one index outside the block
            return f"{evidence[0][1]} [{len(evidence) + 5}]." if evidence else "Nothing to say."
        return " ".join(f"{text.rstrip('.')} [{i}]." for i, text in evidence[:2])


class RepliesConfig(LLMConfig):
    backend: Literal["replies"] = "replies"
    model: str | None = "replies-v1"
    cache: bool = False
    replies: list[str] = Field(default_factory=lambda: ["ok"], description="Answers given in turn.")


class ReplyLLM(BaseLLM):
    """Answers with its configured replies in turn; records every prompt."""

    Config = RepliesConfig
    name = "replies"
    instances: ClassVar[list[ReplyLLM]] = []

    def __init__(self, replies: Sequence[str], cache: Any = None) -> None:
        super().__init__("replies-v1", cache=cache)
        self.replies = list(replies)
        self.prompts: list[list[Message]] = []
        ReplyLLM.instances.append(self)

    @classmethod
    def from_config(cls, cfg: RepliesConfig, ctx: Any = None, *, cache: Any = None) -> ReplyLLM:
        return cls(cfg.replies, cache=cache)

    def _generate(self, messages: list[Message], params: dict[str, Any]) -> Completion:
        self.prompts.append(messages)
        text = self.replies[min(len(self.prompts), len(self.replies)) - 1]
        return Completion(text=text, model=self.model)


def register() -> None:
    from medcite import registry

    registry.register("encoder", "hash-bow", "medcite_fakes:HashEncoder")
    registry.register("llm", "rules", "medcite_fakes:RuleLLM")
    registry.register("llm", "replies", "medcite_fakes:ReplyLLM")
    registry.register("stance", "words", "medcite_fakes:WordsStance")


class ReverseConfig(RerankConfig):
    backend: Literal["reverse"] = "reverse"
    keep_first: bool = Field(False, description="Leave the first hit where it is.")


class ReverseReranker:
    """A plugin-style reranker (not registered by default): reverses the order of the hits it reads."""

    Config = ReverseConfig
    name = "reverse"

    def __init__(self, keep_first: bool) -> None:
        self.keep_first = keep_first

    @classmethod
    def from_config(cls, cfg: ReverseConfig, ctx: Any) -> ReverseReranker:
        return cls(cfg.keep_first)

    def rerank(self, query: str, hits: Sequence[Any], articles: Any, k: int) -> list[Any]:
        from medcite.types import Hit

        order = list(hits)
        order = order[:1] + order[1:][::-1] if self.keep_first else order[::-1]
        return [Hit(h.pmid, float(len(order) - i), i + 1, h.branches) for i, h in enumerate(order[:k])]


class WordsStanceConfig(StanceConfig):
    backend: Literal["words"] = "words"


class WordsStance(PassageClassifier):
    """A stance backend by fixed rules (registered as ``words``): a passage holding every content word of the
    claim supports it, or contradicts it when exactly one of the two is negated; otherwise neutral."""

    Config = WordsStanceConfig
    name = "words"

    @classmethod
    def from_config(cls, cfg: WordsStanceConfig, ctx: Any = None) -> WordsStance:
        return cls(cfg.whole_text_chars, cfg.sentences)

    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        from medcite.generate.attribution import negated

        stop = {"not", "did", "does", "the", "and", "with", "for", "was", "were", "are", "that"}
        out = []
        for claim, passage in zip(claims, passages, strict=True):
            words = {w for w in re.findall(r"\w{3,}", claim.lower()) if w not in stop}
            have = set(re.findall(r"\w{3,}", passage.lower()))
            if words and words <= have:
                out.append([0.1, 0.8, 0.1] if negated(claim) != negated(passage) else [0.8, 0.1, 0.1])
            else:
                out.append([0.1, 0.1, 0.8])
        return np.array(out)


class HubOnlyConfig(RerankConfig):
    """A reranker that loads a model this machine does not have and declares no offline stand-in."""

    backend: Literal["hub-only"] = "hub-only"

    def model_names(self) -> list[str]:
        return ["org/hub-only-reranker"]


class HubOnly:
    """Registered as ``hub-only`` by the tests that need it (``registry.register("rerank", "hub-only",
    "medcite_fakes:HubOnly")``); never built: an offline check fails first, or nothing asks for it."""

    Config = HubOnlyConfig

    @classmethod
    def from_config(cls, cfg: HubOnlyConfig, ctx: Any) -> HubOnly:  # pragma: no cover - never built
        raise AssertionError("the hub-only reranker is never built")


class Fixed(PointwiseReranker):
    """A reranker whose score of each PMID is given (what is tested is how the others combine its scores)."""

    def __init__(self, scores: dict[str, float]) -> None:
        super().__init__(None)
        self.scores = scores

    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        return [self.scores[a.pmid] for a in articles]
