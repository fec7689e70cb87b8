"""The answer-first extractive generator (``extractive-qa``): the answer, then the sentences that support it.

No LLM. The question's type (the topic's BioASQ type, else :func:`medcite.evidence.concepts.question_type`)
decides the lead sentence:

- **yes/no**: medcite's reader (``models:medcite-reader``, run by the qa stage's offline answerer) reads the
  question with each evidence sentence: per sentence a calibrated (P(yes), P(no), P(maybe)), for the question
  their settling-weighted mean P(yes). "Yes." only when P(yes) >= ``yes_from`` **and** some evidence sentence,
  read alone, says yes (P(yes) / (P(yes) + P(no)) >= ``sentence_agree``, P(maybe) < 0.5) as a finding (no negation
  cue; not an aim such as "We investigated ...", nor what earlier work suggested or a study did: "Recent studies
  have implicated ...", "... was assessed by ..."; naming ``predicate_cover`` of what the question asks about its
  subject, e.g. "antimicrobial" of "Is hemoglobin antimicrobial?"); "No." likewise (P(yes) <= ``no_below``, a
  finding with a negation cue: "did not", "no significant"; with ``cue_no`` also a P(yes) under one half when the
  sentence says no by such a cue or names the opposite of what is asked). The verdict cites the sentences that
  decide it (those agreeing sentences, the clearest first), and they open the support. "The evidence is mixed."
  only when one sentence clearly says yes and another clearly says no (both cited). Otherwise, when a quoted
  finding reads as saying yes or no (the reader's P(maybe) under one half) though no verdict could be trusted, the
  lead is "The findings below bear on this, but medcite's reader is not sure enough to say yes or no."; only when
  none does is it "The retrieved abstracts do not settle this."; the most relevant findings follow.
  ``kind="verdict"``; ``Answer.verdict`` is yes / no / mixed / undecided / unsettled. ``yes_from``, ``no_below``,
  ``sentence_agree``, ``predicate_cover`` and ``cue_no`` were chosen together for precision on real abstracts (the
  tune half of the held-back PubMedQA items asked with retrieval: benchmarks/bench_offline_pubmedqa.py --choose).
  The yes / no / neither from P(yes) is :func:`medcite.reader.verdict.decide`, the function BioASQ's exact answer
  decides by too.
- **factoid / list**: the answers the reader's span head extracts from the evidence sentences (synonyms and
  abbreviations merged), each with P >= ``span_min``, none made of question words; each is named exactly as it
  is written in an evidence sentence, which is cited and opens the support; ``kind="entities"``. No span that
  sure: no lead.
- **summary**: no lead.

Then up to ``max_sentences`` support sentences, verbatim evidence sentences each citing its own PMID, in the
evidence order (the selector's score), hedged ones ("may", "suggest", "further studies") and aims ("We
investigated ...") last, the sentences a lead cites first; the whole answer stays within ``max_words`` words and
``max_citations`` PMIDs per sentence.

Abstention: with no evidence, or when no evidence sentence mentions a key concept of the question (see
:mod:`medcite.evidence.concepts`), the answer is the one sentence "The corpus holds no article about X."
(``kind="abstain"``, no citation) and ``Answer.abstained`` is set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from ..devices import Device, Dtype, device_field, dtype_field
from ..errors import ConfigError
from ..evidence.answer_features import negated, prior_or_method, states_aim
from ..evidence.antonyms import opposes
from ..evidence.concepts import (
    ALTERNATIVES,
    _norm_tokens,
    corpus_lookup,
    coverage,
    key_concepts,
    key_entity,
    mentions,
    missing_concepts,
    predicate_words,
    question_type,
    subject,
)
from ..types import QUESTION_TYPES, Answer, AnswerSentence, Dropped, Evidence, Query, Topic
from .base import GenerateConfig
from .citations import DraftSentence
from .postprocess import finalize

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..reader.spans import Answer as SpanAnswer

log = logging.getLogger(__name__)

_HEDGE = re.compile(r"\b(may|might|could|possibly|potential(?:ly)?|suggest(?:s|ed)?|appear(?:s|ed)? to|"
                    r"further (?:studies|research|investigation)|remains? (?:unclear|unknown|to be)|warrant)\b",
                    re.IGNORECASE)
#: the share of what the question asks that a sentence names to bear on it (the undecided lead's test): fixed, so
#: that a stricter ``predicate_cover`` for verdicts never turns a quote that settles the question into "do not
#: settle"
BEARS_COVER = 0.5
VERDICTS = {"yes": "Yes.", "no": "No.", "mixed": "The evidence is mixed.",
            "unsettled": "The retrieved abstracts do not settle this.",
            "undecided": "The findings below bear on this, but medcite's reader is not sure enough to say yes or no."}


class ExtractiveQAConfig(GenerateConfig):
    """Answer first (yes/no verdict or named entities), then verbatim support sentences; abstains when the
    evidence is about none of the question's key concepts (no LLM)."""

    backend: Literal["extractive-qa"] = "extractive-qa"
    max_sentences: int = Field(4, ge=1, description="Most support sentences after the lead.")
    reader_model: str = Field("models:medcite-reader", description="The reader whose yes/no and span heads decide "
                              "the lead (models:NAME or a folder), run by the qa stage's offline answerer.")
    yes_from: float = Field(0.65, ge=0, le=1.01, description="'Yes.' only from this P(yes) of the question (and "
                            "with an evidence sentence that says yes); above 1: never.")
    no_below: float = Field(0.3, ge=-0.01, le=1, description="'No.' only under this P(yes) of the question (and "
                            "with an evidence sentence that says no, with a negation cue); below 0: never from P(yes) "
                            "alone, only from a sentence's cue (`cue_no`).")
    sentence_agree: float = Field(0.8, ge=0.5, le=1, description="A sentence says yes when, read alone, its "
                                  "P(yes) / (P(yes) + P(no)) reaches this (no: 1 minus this) and P(maybe) < 0.5.")
    min_agreeing: int = Field(1, ge=1, description="'Yes.'/'No.' only when sentences of this many different "
                              "articles say it.")
    predicate_cover: float = Field(0.5, ge=0, le=1, description="A deciding sentence names at least this share "
                                   "of what the question asks about its subject (its other content words), so that "
                                   "the sentence a verdict cites says what the verdict says. The verdict settings "
                                   "(yes_from, no_below, sentence_agree, predicate_cover, cue_no) were chosen together "
                                   "on real abstracts: the tune half of the held-back PubMedQA items asked with "
                                   "retrieval (their yes/no items with evidence), the most right verdicts with "
                                   "'Yes.' and 'No.' each right 90 % of the time "
                                   "(benchmarks/bench_offline_pubmedqa.py --choose; docs/BENCHMARKS.md, "
                                   "offline_pubmedqa).")
    cue_no: bool = Field(False, description="A deciding sentence that says no by a cue of its own (a negation, the "
                         "opposite of what is asked) lets 'No.' be said while the question's P(yes) is under one "
                         "half, not only under `no_below`. Off: on the tune half the most right verdicts at 90 % come "
                         "without it (a 'No.' from a cue is right less often than one from P(yes) under no_below).")
    span_min: float = Field(1.01, ge=0, le=1.01, description="An extracted answer leads a factoid/list answer from "
                            "this reader probability; above 1: never. Default: never, because on 109 held-out tuning "
                            "questions no setting named a right answer 85 % of the time (best: 10 of 14).")
    span_pmids: int = Field(2, ge=1, description="An extracted answer leads only when sentences of this many "
                            "different articles name it.")
    max_entities: int = Field(5, ge=1, description="Most answers named in a list answer's lead sentence.")
    keep_ratio: float = Field(0.85, ge=0, le=1, description="Support sentences after the first must score at least "
                              "this share of the best evidence score (short answers of strong sentences score "
                              "better than padded ones).")
    index: str | None = Field("bm25", description="The index searched to say which key concept the corpus lacks "
                              "when an answer abstains (None: name every key concept).")
    device: Device = device_field("the reader (int8 on the CPU)")
    dtype: Dtype = dtype_field("the reader")

    runtime_fields = frozenset({"device", "dtype"})


@runtime_checkable
class Answerer(Protocol):
    """The qa stage's offline answerer (:class:`medcite.qa.extractive.ExtractiveQA`), as used here."""

    def yesno_probabilities(self, question: str, texts: Sequence[str]) -> np.ndarray: ...

    def span_answers(self, question: str, texts: Sequence[str]) -> list[SpanAnswer]: ...


@dataclass
class ExtractiveQAGenerator:
    #: the qa stage's answerer: per-sentence yes/no probabilities and the reader's span answers
    answerer: Answerer
    name: str = "extractive-qa"
    max_sentences: int = 4
    max_words: int = 250
    max_citations: int = 3
    yes_from: float = 0.65
    no_below: float = 0.3
    sentence_agree: float = 0.8
    min_agreeing: int = 1
    predicate_cover: float = 0.5
    cue_no: bool = False
    span_min: float = 1.01
    span_pmids: int = 2
    max_entities: int = 5
    keep_ratio: float = 0.85
    in_corpus: Callable[[str], bool] | None = None
    #: evidence indices of the sentences the last verdict read as settling the question either way
    settling: set[int] = field(default_factory=set)

    Config: ClassVar[type[ExtractiveQAConfig]] = ExtractiveQAConfig

    @classmethod
    def from_config(cls, cfg: ExtractiveQAConfig, ctx: BuildContext) -> ExtractiveQAGenerator:
        from ..registry import validate_config

        qa_cfg = validate_config("qa", {"backend": "extractive", "reader_model": cfg.reader_model,
                                        "device": cfg.device, "dtype": cfg.dtype})
        answerer = ctx.build("qa", qa_cfg)
        if not isinstance(answerer, Answerer):  # the extractive qa backend has both abilities
            raise ConfigError(f"generate.backend='extractive-qa' needs the extractive qa answerer, got {answerer!r}")
        return cls(answerer, max_sentences=cfg.max_sentences, max_words=cfg.max_words,
                   max_citations=cfg.max_citations, yes_from=cfg.yes_from, no_below=cfg.no_below,
                   sentence_agree=cfg.sentence_agree, min_agreeing=cfg.min_agreeing,
                   predicate_cover=cfg.predicate_cover, cue_no=cfg.cue_no, span_min=cfg.span_min,
                   span_pmids=cfg.span_pmids, max_entities=cfg.max_entities,
                   keep_ratio=cfg.keep_ratio, in_corpus=corpus_lookup(ctx, cfg.index))

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        question = topic.question
        qtype = topic.type if topic.type in QUESTION_TYPES else question_type(question)
        usable = [e for e in evidence if e.text.strip()]
        concepts = key_concepts(question)
        if not usable:
            return self.abstain(topic, qtype, missing_concepts(concepts, [], self.in_corpus), subject(question))
        # a key concept the corpus lacks (searched when an index is at hand; else one the evidence lacks while it
        # mentions no key concept at all): the evidence is about something else
        lacking = missing_concepts(concepts, [e.text for e in usable], self.in_corpus)
        entity = {w.lower() for c in key_entity(question) for w in c.split(ALTERNATIVES)[0].split()}
        # the corpus lacks the key entity itself (or, without an index, the evidence names no key concept): the
        # evidence is about something else. A lacking word that is not the key entity (a wording of the question
        # the corpus never uses) is no reason to abstain while the evidence names the entity
        if lacking and ((not entity or entity & {w.lower() for w in lacking}) if self.in_corpus is not None
                        else not any(mentions(c, _norm_tokens(e.text)) for c in concepts for e in usable)):
            return self.abstain(topic, qtype, lacking)
        self.settling = set()
        lead, verdict, first = self.lead(question, qtype, usable)
        room = self.max_words - (len(lead.text.split()) if lead is not None else 0)
        support, dropped = self.support(usable, room, first)
        if not support:
            return self.abstain(topic, qtype, concepts)
        if lead is not None:
            restricted = _restrict(lead, support)
            if restricted.pmids != lead.pmids and lead.kind == "entities" and not restricted.pmids:
                lead = None  # its sentences did not fit: an answer no quoted sentence shows is not stated
            elif lead.kind == "verdict" and lead.pmids and (
                    not restricted.pmids or (verdict == "mixed" and len(restricted.pmids) < 2)):
                # the sentences that decide it did not fit in the answer: a verdict nothing quoted shows is unsaid
                lead, verdict = AnswerSentence(VERDICTS["unsettled"], kind="verdict"), "unsettled"
            else:
                lead = restricted
        if verdict == "unsettled" and any(i in self.settling for s in support for i in s.evidence):
            # a quoted sentence reads as settling it, though no verdict could be trusted: the lead must not say the
            # abstracts leave the question open
            lead, verdict = AnswerSentence(VERDICTS["undecided"], kind="verdict"), "undecided"
        sentences = ([lead] if lead is not None else []) + support
        return Answer(topic.id, sentences, dropped, self.name, qtype, verdict, False)

    def abstain(self, topic: Topic, qtype: str, missing: Sequence[str], about: Sequence[str] = ()) -> Answer:
        """The one-sentence abstention: the key concepts the corpus lacks when known, else what the question is
        about that no retrieved sentence names."""
        if missing:
            text = f"The corpus holds no article about {_or(list(missing))}."
        elif about:
            named = " ".join(a.split(ALTERNATIVES)[0] for a in about)
            text = f"No sentence of the retrieved abstracts is about {named}."
        else:
            text = "The corpus holds no article that answers this question."
        return Answer(topic.id, [AnswerSentence(text, kind="abstain")], [], self.name, qtype, None, True)

    def support(self, evidence: Sequence[Evidence], max_words: int | None = None, first: Sequence[int] = ()
                ) -> tuple[list[AnswerSentence], list[Dropped]]:
        """Verbatim support sentences: the evidence items ``first`` (a lead's deciding sentences) in that order,
        then the others in evidence order, hedged ones and aims ("We investigated ...") last, each citing its own
        PMID."""
        seen: set[str] = set()
        lead: list[Evidence] = []
        firm: list[Evidence] = []
        hedged: list[Evidence] = []
        by_index = {e.index: e for e in evidence}
        for e in [by_index[i] for i in first if i in by_index] + list(evidence):
            key = " ".join(e.text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            later = _HEDGE.search(e.text) or states_aim(e.text)  # hedges and aims say less than findings
            (lead if e.index in first else hedged if later else firm).append(e)
        top = max((e.score for e in evidence), default=0.0)
        floor = self.keep_ratio * top if top > 0 else -float("inf")
        firm = firm[:1] + [e for e in firm[1:] if e.score >= floor] if not lead else \
            [e for e in firm if e.score >= floor]
        hedged = [e for e in hedged if e.score >= floor or not (firm or lead)]
        order = (lead + firm + hedged)[: max(self.max_sentences, len(lead))]
        drafts = [DraftSentence(_as_sentence(e.text), [e.index]) for e in order]
        return finalize(drafts, evidence, max_citations=self.max_citations,
                        max_words=self.max_words if max_words is None else max_words)

    def lead(self, question: str, qtype: str, evidence: Sequence[Evidence]
             ) -> tuple[AnswerSentence | None, str | None, list[int]]:
        """(the lead sentence, the verdict, the evidence indices it rests on, which open the support)."""
        if qtype == "yesno":
            return self.verdict(question, evidence)
        if qtype in ("factoid", "list"):
            lead, first = self.entities(question, qtype, evidence)
            return lead, None, first
        return None, None, []

    def readings(self, question: str, evidence: Sequence[Evidence]) -> list[Reading]:
        """How each evidence sentence reads as an answer to ``question``: the reader's probabilities, and the
        cues that must agree with them (see :class:`Reading`)."""
        probs = np.asarray(self.answerer.yesno_probabilities(question, [e.text for e in evidence]),
                           dtype=np.float64).reshape(-1, 3)
        asks = predicate_words(question)
        out = []
        for i, e in enumerate(evidence):
            opposite = opposes(question, e.text)
            # what the question asks, named as asked or as its opposite ("rare" for "common")
            named = coverage(asks, e.text + (f" {opposite}" if opposite else ""))
            aim = states_aim(e.text) or prior_or_method(e.text)  # no finding: an aim, earlier work, a method
            out.append(Reading(i, probs[i], finding=not aim and named >= self.predicate_cover,
                               negated=negated(e.text), opposite=opposite, bears=not aim and named >= BEARS_COVER))
        return out

    def verdict(self, question: str, evidence: Sequence[Evidence]
                ) -> tuple[AnswerSentence, str, list[int]]:
        """The selective verdict of the module doc."""
        from ..reader.verdict import decide, yes_probability

        readings = self.readings(question, evidence)
        p = yes_probability(np.asarray([r.probs for r in readings]).reshape(-1, 3))
        says_yes = sorted((r for r in readings if r.says_yes(self.sentence_agree)), key=lambda r: -r.ratio)
        says_no = sorted((r for r in readings if r.says_no(self.sentence_agree)), key=lambda r: r.ratio)
        self.settling = {evidence[r.index].index for r in readings if r.settles()}

        def articles(rs: list[Reading]) -> int:
            return len({evidence[r.index].pmid for r in rs})

        # a sentence that names the opposite of what is asked (or negates it) says no by itself: with the
        # reader not leaning yes the question's P(yes) need not be low
        cue_no = self.cue_no and any(r.opposite or r.negated for r in says_no)
        decided = decide(p, self.yes_from, self.no_below, cue_no=cue_no)
        if says_yes and says_no:
            verdict, deciding = "mixed", [says_yes[0].index, says_no[0].index]
        elif decided == "yes" and says_yes and articles(says_yes) >= self.min_agreeing:
            verdict, deciding = "yes", [r.index for r in says_yes]
        elif decided == "no" and says_no and articles(says_no) >= self.min_agreeing:
            verdict, deciding = "no", [r.index for r in says_no]
        else:
            return AnswerSentence(VERDICTS["unsettled"], kind="verdict"), "unsettled", []
        chosen: list[Evidence] = []
        for i in deciding[: self.max_citations]:  # the clearest few; at most max_citations articles
            if len({e.pmid for e in chosen} | {evidence[i].pmid}) > self.max_citations:
                break
            chosen.append(evidence[i])
        pmids = tuple(dict.fromkeys(e.pmid for e in chosen))
        index = {e.pmid: e.index for e in reversed(chosen)}
        return (AnswerSentence(VERDICTS[verdict], pmids, tuple(index[p] for p in pmids), kind="verdict"), verdict,
                [e.index for e in chosen])

    def entities(self, question: str, qtype: str, evidence: Sequence[Evidence]
                 ) -> tuple[AnswerSentence | None, list[int]]:
        """The lead naming the reader's answers, each as written in the evidence sentence it cites."""
        texts = [e.text for e in evidence]
        about = {w.lower() for c in key_concepts(question) + subject(question) for w in c.split()}
        named: list[str] = []
        cited: list[Evidence] = []
        for ans in self.answerer.span_answers(question, texts):
            if ans.score < self.span_min:
                break  # ranked by score: no later one is surer
            if len({evidence[h.passage].pmid for h in ans.spans}) < self.span_pmids:
                continue
            pmids = {e.pmid for e in cited}
            # the surest span in a sentence already cited, or in one that can still be cited
            spans = [h for h in sorted(ans.spans, key=lambda h: -h.p)
                     if evidence[h.passage] in cited or len(pmids | {evidence[h.passage].pmid}) <= self.max_citations]
            if not spans:
                continue
            best = spans[0]
            surface = texts[best.passage][best.start: best.end]
            words = {w.lower() for w in re.findall(r"[^\W_]+", surface)}
            if not surface.strip() or words & about or surface.lower() in (n.lower() for n in named):
                continue  # the question's own subject (or a name of it) is no answer to it
            if evidence[best.passage] not in cited:
                cited.append(evidence[best.passage])
            named.append(surface)
            if len(named) >= (1 if qtype == "factoid" else self.max_entities):
                break
        if not named:
            return None, []
        cited_pmids = tuple(dict.fromkeys(e.pmid for e in cited))
        index = {e.pmid: e.index for e in reversed(cited)}
        text = f"The abstracts name {_join(named)}."
        return (AnswerSentence(text, cited_pmids, tuple(index[p] for p in cited_pmids), kind="entities"),
                [e.index for e in cited])


@dataclass(frozen=True)
class Reading:
    """One evidence sentence read as an answer: the sentence reader's (P(yes), P(no), P(maybe)) and the cues
    that must agree with it. A sentence says yes only as a finding (not an aim, naming what the question asks)
    that the reader reads as yes, with no negation cue and no opposite of the question's predicate ("rare" for
    "Is it common?"); it says no when the reader reads it as no with such a cue, or when it names the opposite of
    the predicate (without a negation) and the reader leans no."""

    index: int
    probs: np.ndarray
    finding: bool
    negated: bool
    opposite: str | None
    #: a finding that names at least half of what is asked (:data:`BEARS_COVER`), however strict ``finding`` is
    bears: bool = False

    @property
    def ratio(self) -> float:
        return float(self.probs[0] / max(self.probs[0] + self.probs[1], 1e-9))

    def settled(self) -> bool:
        return float(self.probs[2]) < 0.5

    def says_yes(self, agree: float) -> bool:
        return self.finding and self.settled() and self.ratio >= agree and not self.negated and not self.opposite

    def says_no(self, agree: float) -> bool:
        if not self.finding:
            return False
        if self.opposite and not self.negated and self.ratio < 0.5:
            return True  # it names the opposite of what is asked, and the reader leans no
        return self.settled() and self.ratio <= 1 - agree and (self.negated or bool(self.opposite))

    def settles(self) -> bool:
        """Whether the sentence reads as settling the question either way: a sentence that bears on it (a finding
        naming half of what is asked, whatever ``predicate_cover`` a verdict needs) that the reader reads as saying
        yes or no (P(maybe) under one half) even when it cannot tell which, or that names the opposite of what is
        asked while the reader leans no -- quoted under a "do not settle" lead it would contradict it, so that lead
        becomes the undecided one ("… not sure enough to say yes or no")."""
        # what says_no() adds to settled(): the opposite of what is asked, the reader leaning no
        return self.bears and (self.settled() or (bool(self.opposite) and not self.negated and self.ratio < 0.5))


def _restrict(lead: AnswerSentence, support: Sequence[AnswerSentence]) -> AnswerSentence:
    """A lead cites only PMIDs its support sentences cite: what it states is shown by a quoted sentence."""
    kept = [(p, e) for p, e in zip(lead.pmids, lead.evidence, strict=True)
            if any(e in s.evidence and p in s.pmids for s in support)]
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
