"""The answer-first extractive generator (``extractive-qa``): the answer, then the sentences that support it.

No LLM. The question's type (the topic's BioASQ type, else :func:`medcite.evidence.concepts.question_type`)
decides the lead sentence:

- **yes/no**: "Yes." or "No." from medcite's yes/no head (the qa stage's offline answerer, ``models:medcite-
  yesno``) applied to the chosen evidence, or "The evidence is mixed." when its P(yes) lies within
  ``mixed_margin`` of its threshold; ``kind="verdict"``, citing the PMIDs of the support sentences;
- **factoid / list**: the entities the answerer extracts (:mod:`medcite.qa.entities`) that at least
  ``min_entity_pmids`` different articles of the evidence name; ``kind="entities"``, citing those articles;
- **summary**: no lead.

Then up to ``max_sentences`` support sentences, verbatim evidence sentences each citing its own PMID, in the
evidence order (the selector's score), hedged ones ("may", "suggest", "further studies") last; the whole
answer stays within ``max_words`` words and ``max_citations`` PMIDs per sentence.

Abstention: with no evidence, or when no evidence sentence mentions a key concept of the question (see
:mod:`medcite.evidence.concepts`), the answer is the one sentence "The corpus holds no article about X."
(``kind="abstain"``, no citation) and ``Answer.abstained`` is set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import Field

from ..errors import ConfigError
from ..evidence.concepts import (
    _norm_tokens,
    corpus_lookup,
    key_concepts,
    mentions,
    missing_concepts,
    question_type,
    zipf,
)
from ..types import QUESTION_TYPES, Answer, AnswerSentence, Dropped, Evidence, Query, Question, Snippet, Topic
from .base import GenerateConfig
from .citations import DraftSentence
from .postprocess import finalize

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

_HEDGE = re.compile(r"\b(may|might|could|possibly|potential(?:ly)?|suggest(?:s|ed)?|appear(?:s|ed)? to|"
                    r"further (?:studies|research|investigation)|remains? (?:unclear|unknown|to be)|warrant)\b",
                    re.IGNORECASE)
VERDICTS = {"yes": "Yes.", "no": "No.", "mixed": "The evidence is mixed."}


class ExtractiveQAConfig(GenerateConfig):
    """Answer first (yes/no verdict or named entities), then verbatim support sentences; abstains when the
    evidence is about none of the question's key concepts (no LLM)."""

    backend: Literal["extractive-qa"] = "extractive-qa"
    max_sentences: int = Field(4, ge=1, description="Most support sentences after the lead.")
    reader_model: str = Field("models:medcite-reader", description="The reader whose yes/no and span heads decide "
                              "the lead (models:NAME or a folder), run by the qa stage's offline answerer.")
    mixed_margin: float = Field(0.02, ge=0, le=0.5, description="'The evidence is mixed.' when P(yes) is within "
                                "this of the head's threshold.")
    min_entity_pmids: int = Field(2, ge=1, description="An entity leads a factoid/list answer only when this many "
                                  "articles of the evidence name it.")
    max_entities: int = Field(5, ge=1, description="Most entities named in the lead sentence.")
    keep_ratio: float = Field(0.85, ge=0, le=1, description="Support sentences after the first must score at least "
                              "this share of the best evidence score (short answers of strong sentences score "
                              "better than padded ones).")
    index: str | None = Field("bm25", description="The index searched to say which key concept the corpus lacks "
                              "when an answer abstains (None: name every key concept).")
    device: str = Field("cpu", description="Torch device of the yes/no encoder.")

    runtime_fields = frozenset({"device"})


@runtime_checkable
class Answerer(Protocol):
    """The qa stage's offline answerer (:class:`medcite.qa.extractive.ExtractiveQA`), as used here."""

    def yes_probability(self, question: str, texts: Sequence[str]) -> tuple[float, float]: ...

    def entities(self, question: Question, snippets: Sequence[Snippet]) -> list[str]: ...


@dataclass
class ExtractiveQAGenerator:
    #: the qa stage's answerer: ``yes_probability(question, texts) -> (p, threshold)`` and
    #: ``entities(Question, snippets) -> names``
    answerer: Answerer
    name: str = "extractive-qa"
    max_sentences: int = 4
    max_words: int = 250
    max_citations: int = 3
    mixed_margin: float = 0.02
    min_entity_pmids: int = 2
    max_entities: int = 5
    keep_ratio: float = 0.85
    in_corpus: Callable[[str], bool] | None = None

    Config: ClassVar[type[ExtractiveQAConfig]] = ExtractiveQAConfig

    @classmethod
    def from_config(cls, cfg: ExtractiveQAConfig, ctx: BuildContext) -> ExtractiveQAGenerator:
        from ..registry import validate_config

        qa_cfg = validate_config("qa", {"backend": "extractive", "reader_model": cfg.reader_model,
                                        "device": cfg.device})
        answerer = ctx.build("qa", qa_cfg)
        if not isinstance(answerer, Answerer):  # the extractive qa backend has both abilities
            raise ConfigError(f"generate.backend='extractive-qa' needs the extractive qa answerer, got {answerer!r}")
        return cls(answerer, max_sentences=cfg.max_sentences, max_words=cfg.max_words,
                   max_citations=cfg.max_citations, mixed_margin=cfg.mixed_margin,
                   min_entity_pmids=cfg.min_entity_pmids, max_entities=cfg.max_entities,
                   keep_ratio=cfg.keep_ratio, in_corpus=corpus_lookup(ctx, cfg.index))

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        question = topic.question
        qtype = topic.type if topic.type in QUESTION_TYPES else question_type(question)
        usable = [e for e in evidence if e.text.strip()]
        concepts = key_concepts(question)
        if not usable:
            return self.abstain(topic, qtype, missing_concepts(concepts, [], self.in_corpus))
        # a key concept the corpus lacks (searched when an index is at hand; else one the evidence lacks while it
        # mentions no key concept at all): the evidence is about something else
        lacking = missing_concepts(concepts, [e.text for e in usable], self.in_corpus)
        if lacking and (self.in_corpus is not None
                        or not any(mentions(c, _norm_tokens(e.text)) for c in concepts for e in usable)):
            return self.abstain(topic, qtype, lacking)
        support, dropped = self.support(usable)
        if not support:
            return self.abstain(topic, qtype, concepts)
        lead, verdict = self.lead(question, qtype, usable, support)
        if lead is not None:
            room = self.max_words - len(lead.text.split())
            support, dropped = self.support(usable, room)
            lead = _restrict(lead, support)
        sentences = ([lead] if lead is not None else []) + support
        return Answer(topic.id, sentences, dropped, self.name, qtype, verdict, False)

    def abstain(self, topic: Topic, qtype: str, missing: Sequence[str]) -> Answer:
        """The one-sentence abstention, naming the key concepts the corpus lacks (when known)."""
        text = f"The corpus holds no article about {_or(list(missing))}." if missing else \
            "The corpus holds no article that answers this question."
        return Answer(topic.id, [AnswerSentence(text, kind="abstain")], [], self.name, qtype, None, True)

    def support(self, evidence: Sequence[Evidence], max_words: int | None = None
                ) -> tuple[list[AnswerSentence], list[Dropped]]:
        """Verbatim support sentences in evidence order, hedged ones last, each citing its own PMID."""
        seen: set[str] = set()
        firm: list[Evidence] = []
        hedged: list[Evidence] = []
        for e in evidence:
            key = " ".join(e.text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            (hedged if _HEDGE.search(e.text) else firm).append(e)
        top = max((e.score for e in evidence), default=0.0)
        floor = self.keep_ratio * top if top > 0 else -float("inf")
        firm = firm[:1] + [e for e in firm[1:] if e.score >= floor]
        hedged = [e for e in hedged if e.score >= floor or not firm]
        order = (firm + hedged)[: self.max_sentences]
        drafts = [DraftSentence(_as_sentence(e.text), [e.index]) for e in order]
        return finalize(drafts, evidence, max_citations=self.max_citations,
                        max_words=self.max_words if max_words is None else max_words)

    def lead(self, question: str, qtype: str, evidence: Sequence[Evidence], support: Sequence[AnswerSentence]
             ) -> tuple[AnswerSentence | None, str | None]:
        if qtype == "yesno":
            texts = [e.text for e in evidence]
            p, threshold = self.answerer.yes_probability(question, texts)
            verdict = "mixed" if abs(p - threshold) < self.mixed_margin else ("yes" if p >= threshold else "no")
            pmids = list(dict.fromkeys(p for s in support for p in s.pmids))[: self.max_citations]
            index = {e.pmid: e.index for e in reversed(evidence)}
            return AnswerSentence(VERDICTS[verdict], tuple(pmids), tuple(index[p] for p in pmids),
                                  kind="verdict"), verdict
        if qtype in ("factoid", "list"):
            snippets = [Snippet(e.pmid, e.text) for e in evidence]
            names = self.answerer.entities(Question("q", qtype, question), snippets)
            chosen: list[tuple[str, list[str]]] = []
            for name in names:
                if all(w.islower() and zipf(w) >= 4.0 for w in name.split()):
                    continue  # a common word ("clinical", "patients") names no answer
                vocab_hits = [e.pmid for e in evidence if mentions(name, _norm_tokens(e.text))]
                pmids = list(dict.fromkeys(vocab_hits))
                if len(pmids) >= self.min_entity_pmids:
                    chosen.append((name, pmids))
                if len(chosen) >= (1 if qtype == "factoid" else self.max_entities):
                    break
            if not chosen:
                return None, None
            cited = list(dict.fromkeys(p for _, ps in chosen for p in ps))[: self.max_citations]
            index = {e.pmid: e.index for e in reversed(evidence)}
            named = _join([n for n, _ in chosen])
            text = f"The answer most articles name: {named}." if qtype == "factoid" else \
                f"Named in several articles: {named}."
            return AnswerSentence(text, tuple(cited), tuple(index[p] for p in cited), kind="entities"), None
        return None, None


def _restrict(lead: AnswerSentence, support: Sequence[AnswerSentence]) -> AnswerSentence:
    """A verdict cites only PMIDs its support sentences cite (entities cite the articles that name them)."""
    if lead.kind != "verdict":
        return lead
    kept = [(p, e) for p, e in zip(lead.pmids, lead.evidence, strict=True) if any(p in s.pmids for s in support)]
    return AnswerSentence(lead.text, tuple(p for p, _ in kept), tuple(e for _, e in kept), kind=lead.kind)


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _or(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _as_sentence(text: str) -> str:
    text = " ".join(text.split())
    if text and text[-1] not in ".!?":
        text += "."
    return text
