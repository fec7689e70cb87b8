"""LLM answers constrained to the evidence block, with a constraint-retry loop and an extractive fallback.

Two modes:

* ``cited`` (CLaC 2025, Dalhousie 2025): the model sees the evidence block ``[i] (PMID) text`` (prompt
  ``generate.txt``) and cites indices only; :func:`~medcite.generate.postprocess.finalize` maps them to PMIDs
  and enforces the caps. Violations (empty answer, uncited sentences, indices outside the block, PMIDs
  written directly, more than ``max_citations`` PMIDs in a sentence, more than ``max_words`` words, too few
  valid sentences) are fed back to the model (``retry.txt``) for up to ``max_attempts`` generations
  (Dalhousie 2025's citation-validation loop).
* ``posthoc`` (CLaC 2024 "simpleqa"): the model answers without citations (``generate_plain.txt``); each
  sentence is then attributed to the one evidence item it was most plausibly written from
  (:mod:`.attribution`: TF-IDF cosine at least ``posthoc_threshold``, same negation polarity); sentences
  nothing supports are dropped. With ``posthoc_judge`` each sentence's ``posthoc_candidates`` items (picked by
  TF-IDF, or by the ``posthoc_shortlist`` reranker: CLaC 2024's ColBERT) are judged and the supporting ones cited.

With ``condense`` (CLaC 2024) an answer over ``max_words`` is first shortened by the model (``condense.txt``)
and only then trimmed. An answer still invalid after the last attempt is replaced by the
:class:`~medcite.generate.extractive.ExtractiveGenerator`'s (generator ``llm+extractive-fallback``), and why
is recorded in ``Answer.dropped``. Every call is traced with stage ``generation``/``condensation``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..errors import ConfigError, LLMError
from ..evidence.base import format_block
from ..evidence.sentences import split_spans
from ..llm.base import reject
from ..llm.completion import Completion
from ..registry import stage_field
from ..set_option import set_line
from ..settings_base import UsesLLM
from ..types import Answer, Dropped, Evidence, Query, Topic
from .attribution import (
    ListwisePicker,
    RerankShortlist,
    Shortlister,
    SupportJudge,
    attribute,
    attribute_judged,
    attribute_listwise,
)
from .base import FALLBACK, ExtractiveOptions, GenerateConfig, Generator
from .citations import DraftSentence, carry_verdicts, split_cited_sentences
from .extractive import ExtractiveConfig, ExtractiveGenerator
from .postprocess import finalize, word_count

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..llm.base import LLM, Message

log = logging.getLogger(__name__)



class LLMGenerateConfig(UsesLLM, GenerateConfig):
    """Evidence-constrained LLM answers with a constraint-retry loop and an extractive fallback."""

    no_llm: ClassVar[dict[str, str]] = {"backend": "extractive"}

    backend: Literal["llm"] = "llm"
    mode: Literal["cited", "posthoc"] = Field(
        "cited", description="'cited' (the model cites evidence indices; Dalhousie/CLaC 2025) or 'posthoc' "
        "(CLaC 2024 simpleqa: answer without citations, then cite each sentence by its source evidence)."
    )
    max_attempts: int = Field(
        3, ge=1, description="Generations tried; each retry feeds the violations back (Dalhousie 2025: up to 20). "
        "Still invalid after the last one: the extractive fallback."
    )
    fallback: bool = Field(
        True, description="Answer extractively when the LLM answer stays invalid (else keep what survives)."
    )
    fallback_when: Literal["invalid", "empty"] = Field(
        "invalid", description="When the extractive fallback replaces the LLM answer: 'invalid' (medcite's "
        "presets: any rule still broken after the last attempt) or 'empty' (a paper's post-processing: rule "
        "breaks are repaired by dropping citations and sentences, and only an answer with no valid sentence left "
        "is replaced; the run directory marks it)."
    )
    retry_on: Literal["any", "limits"] = Field(
        "any", description="Which broken rules make the model generate again: 'any' (every violation above) or "
        "'limits' (Dalhousie 2025, §III-B2a(6): only an answer over max_words words or a sentence citing more "
        "than max_citations PMIDs; other faults are repaired by post-processing)."
    )
    extractive: ExtractiveOptions = Field(
        default_factory=ExtractiveOptions, description="The extractive fallback's options."
    )
    condense: bool = Field(
        False, description="Ask the LLM to condense an answer over max_words before trimming (CLaC 2024)."
    )
    condense_prompt: Literal["condense", "clac24_condense"] = Field(
        "condense", description="The condensation prompt: medcite's 'condense' or 'clac24_condense' (CLaC 2024's "
        "Appendix C Answer Condensation Prompt, verbatim)."
    )
    max_tokens: int | None = Field(None, ge=1, description="Most tokens generated per answer (None: the LLM's).")
    posthoc_threshold: float = Field(
        0.1, ge=0, le=1, description="'posthoc': least TF-IDF cosine for an evidence item to be cited."
    )
    posthoc_judge: stage_field("stance") | None = Field(  # type: ignore[valid-type]
        None, description="'posthoc': a stance backend that judges each sentence against its most similar "
        "evidence items and cites those it finds supporting, up to max_citations (CLaC 2024: Mistral's support "
        "prompt, {'backend': 'llm', 'llm': 'mistral'}); None: the one most similar item by TF-IDF."
    )
    posthoc_candidates: int = Field(
        5, ge=1, description="'posthoc' with a judge: evidence items judged per sentence (the most similar).")
    posthoc_pick: Literal["each", "listwise"] = Field(
        "each", description="'posthoc' with a judge: 'each' (the judge's verdict on every candidate; supporting ones "
        "are cited) or 'listwise' (CLaC 2024 System 1's citation selection: the judge's LLM -- posthoc_judge must "
        "be {'backend': 'llm', ...} -- is shown a sentence's candidates in one call with the Appendix A support "
        "prompt, clac24_support, and names at most max_citations PMIDs)."
    )
    posthoc_shortlist: stage_field("rerank") | None = Field(  # type: ignore[valid-type]
        None, description="'posthoc' with a judge: a reranker that picks each sentence's posthoc_candidates among "
        "the evidence items, the sentence as its query (CLaC 2024: System 1's ColBERT, {'backend': 'colbert'}); "
        "None: TF-IDF cosine."
    )
    min_sentences: int = Field(
        1, ge=1, description="Fewest valid sentences an accepted answer has (fewer is a violation)."
    )
    prompt: Literal["generate", "generate_topic", "clac25_generate"] = Field(
        "generate", description="'cited' mode's prompt: 'generate' (question and evidence) or 'generate_topic' "
        "(Dalhousie 2025: also the topic, the narrative, the query set's reformulations and the sentence range) "
        "or 'clac25_generate' (CLaC 2025's Listing 3, verbatim, with the same values and the citation cap)."
    )
    plain_prompt: Literal["generate_plain", "generate_plain_question", "clac24_generate"] = Field(
        "generate_plain", description="'posthoc' mode's prompt: 'generate_plain' (the question, the topic and the "
        "narrative; CLaC 2024 SimpleQA) or 'generate_plain_question' (the question alone; CLaC 2024 MedHopQA, "
        "which \"uses only the question\") or 'clac24_generate' (CLaC 2024's Appendix C Answer Generation Prompt, "
        "verbatim: the documents, the topic, the narrative and the question)."
    )
    max_sentences: int = Field(
        8, ge=1, description="'generate_topic': the most sentences the prompt asks for (the range starts at "
        "min_sentences)."
    )
    dedupe: float | None = Field(
        None, gt=0, le=1, description="Fuzzy de-duplication of answer sentences (Dalhousie 2025): a sentence whose "
        "character similarity (difflib ratio, case and spacing ignored) to an earlier kept one is at least this "
        "is dropped. None: off."
    )


    def llm_names(self) -> set[str | None]:
        judge = self.posthoc_judge.llm_names() if self.posthoc_judge is not None and self.mode == "posthoc" else set()
        return {self.llm, *judge}

    def model_names(self) -> list[str]:
        if self.posthoc_judge is None:
            return []
        shortlist = self.posthoc_shortlist.model_names() if self.posthoc_shortlist is not None else []
        return [*self.posthoc_judge.model_names(), *shortlist]


def cited_violations(drafts: Sequence[DraftSentence], evidence: Sequence[Evidence], *, max_citations: int = 3,
                     max_words: int = 250, min_sentences: int = 1) -> list[str]:
    """Every rule the parsed answer breaks, as sentences the model can act on (empty: valid)."""
    if not drafts:
        return ["the answer is empty: write at least one sentence citing the evidence"]
    by_index = {e.index: e.pmid for e in evidence}
    out: list[str] = []
    valid = 0
    for n, d in enumerate(drafts, 1):
        quote = _quote(d.text)
        out.extend(f"sentence {n} ({quote}): {reason}" for reason in d.invalid)
        unknown = sorted({i for i in d.indices if i not in by_index})
        if unknown:
            out.append(f"sentence {n} ({quote}) cites {', '.join(f'[{i}]' for i in unknown)}, which "
                       f"{'is' if len(unknown) == 1 else 'are'} not in the evidence list (1 to {len(evidence)})")
        pmids = {by_index[i] for i in d.indices if i in by_index}
        if not d.indices and not d.invalid:
            out.append(f"sentence {n} ({quote}) has no citation")
        if len(pmids) > max_citations:
            out.append(f"sentence {n} ({quote}) cites {len(pmids)} sources; cite at most {max_citations}")
        valid += bool(pmids)
    words = sum(word_count(d.text) for d in drafts)
    if words > max_words:
        out.append(f"the answer has {words} words; use at most {max_words}")
    if valid < min_sentences:
        out.append(f"only {valid} sentence(s) cite valid evidence; write at least {min_sentences}")
    return out


def limit_violations(drafts: Sequence[DraftSentence], evidence: Sequence[Evidence], *, max_citations: int = 3,
                     max_words: int = 250) -> list[str]:
    """Only the two limits of a TREC BioGen answer (Dalhousie 2025's constraint check): more than
    ``max_citations`` PMIDs in a sentence, more than ``max_words`` words."""
    by_index = {e.index: e.pmid for e in evidence}
    out = []
    for n, d in enumerate(drafts, 1):
        pmids = {by_index[i] for i in d.indices if i in by_index}
        if len(pmids) > max_citations:
            out.append(f"sentence {n} ({_quote(d.text)}) cites {len(pmids)} sources; cite at most {max_citations}")
    words = sum(word_count(d.text) for d in drafts)
    if words > max_words:
        out.append(f"the answer has {words} words; use at most {max_words}")
    return out


def _quote(text: str, words: int = 8) -> str:
    parts = text.split()
    return '"' + " ".join(parts[:words]) + (' ..."' if len(parts) > words else '"')


def _plain_sentences(text: str) -> list[str]:
    """Sentences of an uncited answer (bracket groups a model wrote anyway are removed first)."""
    drafts = split_cited_sentences(text)
    joined = " ".join(d.text for d in drafts)
    return [" ".join(joined[s:e].split()) for s, e in split_spans(joined)]


def fuzzy_dedupe(drafts: Sequence[DraftSentence], threshold: float | None) -> tuple[list[DraftSentence],
                                                                                   list[Dropped]]:
    """Dalhousie 2025's fuzzy de-duplication: drop a sentence whose difflib ratio (case and spacing ignored)
    to an earlier kept sentence is at least ``threshold``; ``None`` keeps every sentence."""
    if threshold is None:
        return list(drafts), []
    from difflib import SequenceMatcher

    kept: list[DraftSentence] = []
    keys: list[str] = []
    dropped: list[Dropped] = []
    for draft in drafts:
        key = " ".join(draft.text.casefold().split())
        best = max((SequenceMatcher(None, key, k).ratio() for k in keys), default=0.0)
        if best >= threshold:
            dropped.append(Dropped("sentence", draft.text, f"near-duplicate of an earlier sentence "
                                                           f"(similarity {best:.2f} >= {threshold})"))
            continue
        kept.append(draft)
        keys.append(key)
    return kept, dropped


def _picker(cfg: LLMGenerateConfig, ctx: BuildContext) -> ListwisePicker | None:
    """``posthoc_pick=listwise``: CLaC 2024's listwise support prompt on the post-hoc judge's LLM."""
    if cfg.mode != "posthoc" or cfg.posthoc_judge is None or cfg.posthoc_pick != "listwise":
        return None
    if cfg.posthoc_judge.backend != "llm":
        raise ConfigError(f"generate.posthoc_pick=listwise asks the judge's LLM to pick, but generate.posthoc_judge "
                          f"is the {cfg.posthoc_judge.backend!r} stance backend",
                          hint=f"{set_line('generate.posthoc_judge.backend', 'llm')}, or "
                          + set_line("generate.posthoc_pick", "each"))
    from .listwise import ListwiseCitations

    return ListwiseCitations(ctx.llm(cfg.posthoc_judge.llm, purpose="generate.posthoc_pick 'listwise'"))


class LLMGenerator:
    """Evidence-constrained LLM answers (see the module docstring for the papers and the two modes)."""

    name = "llm"

    def __init__(self, llm: LLM, *, mode: str = "cited", max_words: int = 250, max_citations: int = 3,
                 max_attempts: int = 3, fallback: bool = True, condense: bool = False,
                 max_tokens: int | None = None, posthoc_threshold: float = 0.1, min_sentences: int = 1,
                 extractive: Generator | None = None, prompt_dir: str | Path | None = None,
                 prompt: str = "generate", max_sentences: int = 8, dedupe: float | None = None,
                 judge: SupportJudge | None = None, judge_candidates: int = 5, fallback_when: str = "invalid",
                 plain_prompt: str = "generate_plain", retry_on: str = "any", condense_prompt: str = "condense",
                 shortlist: Shortlister | None = None, picker: ListwisePicker | None = None) -> None:
        if mode not in ("cited", "posthoc"):
            raise ConfigError(f"unknown generation mode {mode!r}", hint="choose 'cited' or 'posthoc'")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
        self.llm = llm
        self.mode = mode
        self.max_words = max_words
        self.max_citations = max_citations
        self.max_attempts = max_attempts
        self.fallback = fallback
        self.condense = condense
        self.max_tokens = max_tokens
        self.posthoc_threshold = posthoc_threshold
        self.min_sentences = min_sentences
        self.extractive = extractive or ExtractiveGenerator(max_words=max_words, max_citations=max_citations)
        self.prompt_dir = prompt_dir
        self.prompt = prompt
        self.max_sentences = max(max_sentences, min_sentences)
        self.dedupe = dedupe
        self.judge = judge
        self.judge_candidates = judge_candidates
        if fallback_when not in ("invalid", "empty"):
            raise ConfigError(f"unknown fallback_when {fallback_when!r}", hint="choose 'invalid' or 'empty'")
        self.fallback_when = fallback_when
        self.plain_prompt = plain_prompt
        if retry_on not in ("any", "limits"):
            raise ConfigError(f"unknown retry_on {retry_on!r}", hint="choose 'any' or 'limits'")
        self.retry_on = retry_on
        self.condense_prompt = condense_prompt
        self.shortlist = shortlist
        self.picker = picker
        self._replies: dict[str, Completion] = {}  # topic id -> the reply its latest LLM answer came from
        self._replies_lock = threading.Lock()

    Config = LLMGenerateConfig

    @classmethod
    def from_config(cls, cfg: LLMGenerateConfig, ctx: BuildContext) -> LLMGenerator:
        llm = ctx.llm(cfg.llm, purpose="generate.backend 'llm'")
        # the extractive fallback: this generator's caps, its own options
        extractive = ctx.build("generate", ExtractiveConfig(
            max_sentences=cfg.extractive.max_sentences, min_relative_score=cfg.extractive.min_relative_score,
            max_words=cfg.max_words, max_citations=cfg.max_citations))
        return cls(llm, mode=cfg.mode, max_words=cfg.max_words, max_citations=cfg.max_citations,
                   max_attempts=cfg.max_attempts, fallback=cfg.fallback, condense=cfg.condense,
                   max_tokens=cfg.max_tokens, posthoc_threshold=cfg.posthoc_threshold,
                   min_sentences=cfg.min_sentences, extractive=extractive, prompt=cfg.prompt,
                   max_sentences=cfg.max_sentences, dedupe=cfg.dedupe,
                   judge=ctx.build("stance", cfg.posthoc_judge) if cfg.posthoc_judge is not None
                   and cfg.mode == "posthoc" else None, judge_candidates=cfg.posthoc_candidates,
                   fallback_when=cfg.fallback_when, plain_prompt=cfg.plain_prompt, retry_on=cfg.retry_on,
                   condense_prompt=cfg.condense_prompt,
                   shortlist=RerankShortlist(ctx.build("rerank", cfg.posthoc_shortlist))
                   if cfg.posthoc_shortlist is not None and cfg.posthoc_judge is not None and cfg.mode == "posthoc"
                   else None, picker=_picker(cfg, ctx))

    # -- model calls -----------------------------------------------------------------------------------
    def _keep_reply(self, topic_id: str, reply: Completion) -> None:
        """Remember the generation reply of a topic's current answer: a later check (the gate, the citation
        check's regeneration) that discards the answer rejects it (:meth:`_reject_reply`)."""
        with self._replies_lock:
            self._replies.pop(topic_id, None)
            self._replies[topic_id] = reply
            while len(self._replies) > 64:  # topics are answered one after another: only the latest matter
                self._replies.pop(next(iter(self._replies)))

    def _reject_reply(self, topic_id: str, reason: str) -> None:
        with self._replies_lock:
            reply = self._replies.pop(topic_id, None)
        if reply is not None:
            reject(self.llm, reply, reason)

    def _complete(self, messages: list[Message], stage: str, attempt: int) -> tuple[Completion, str]:
        """The reply, and its text without the framing a chat model puts around prose
        (:func:`medcite.llm.reply.prose`)."""
        from ..llm.reply import prose
        from ..llm.trace import trace_context

        with trace_context(stage=stage, attempt=attempt):
            reply = self.llm.complete(messages, max_tokens=self.max_tokens)
        return reply, prose(reply.text)

    def _condensed(self, question: str, text: str, words: int, attempt: int) -> str:
        """CLaC 2024: the model shortens an over-long answer, keeping its citations; '' when it gave nothing."""
        from ..llm.prompts import render
        from ..llm.reply_parsers import parse_condensation

        if not self.condense or words <= self.max_words:
            return ""
        messages = render(self.condense_prompt, self.prompt_dir, question=question, answer=text, long_answer=text,
                          max_words=self.max_words)
        reply, text = self._complete(messages, "condensation", attempt)
        short = parse_condensation(text, self.max_words)
        if not short:
            reject(self.llm, reply, "no condensed answer could be read")
        return short

    def _drafts(self, text: str, evidence: Sequence[Evidence]) -> list[DraftSentence]:
        if self.mode == "cited":
            return carry_verdicts(split_cited_sentences(text))
        if self.picker is not None:
            return carry_verdicts(attribute_listwise(_plain_sentences(text), evidence, self.picker,
                                                     candidates=self.judge_candidates,
                                                     max_citations=self.max_citations, shortlist=self.shortlist))
        if self.judge is not None:
            return carry_verdicts(attribute_judged(_plain_sentences(text), evidence, self.judge,
                                                   candidates=self.judge_candidates, max_citations=self.max_citations,
                                                   shortlist=self.shortlist))
        return carry_verdicts(attribute(_plain_sentences(text), evidence, threshold=self.posthoc_threshold))

    def _violations(self, drafts: Sequence[DraftSentence], evidence: Sequence[Evidence]) -> list[str]:
        if self.mode == "cited":
            return cited_violations(drafts, evidence, max_citations=self.max_citations, max_words=self.max_words,
                                    min_sentences=self.min_sentences)
        out = [f"sentence {n} ({_quote(d.text)}) is not supported by any evidence item"
               for n, d in enumerate(drafts, 1) if not d.indices]
        words = sum(word_count(d.text) for d in drafts)
        if not drafts:
            out.append("the answer is empty: write at least one sentence from the evidence")
        if words > self.max_words:
            out.append(f"the answer has {words} words; use at most {self.max_words}")
        if sum(bool(d.indices) for d in drafts) < self.min_sentences:
            out.append(f"fewer than {self.min_sentences} sentence(s) are supported by the evidence")
        return out

    # -- the loop ------------------------------------------------------------------------------------
    def _messages(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> list[Message]:
        from ..llm.prompts import render

        prompt = self.prompt if self.mode == "cited" else self.plain_prompt
        if prompt == "generate":
            return render(prompt, self.prompt_dir, question=topic.question, evidence=format_block(evidence),
                          max_words=self.max_words)
        asked = " ".join(topic.question.split()).casefold()
        variants = [q.text for q in queries if " ".join(q.text.split()).casefold() != asked]
        return render(prompt, self.prompt_dir, question=topic.question, evidence=format_block(evidence),
                      documents=format_block(evidence), max_words=self.max_words, topic=topic.topic or "(not given)",
                      narrative=topic.narrative or "(not given)",
                      reformulations="\n".join(f"- {v}" for v in variants) or "(none)",
                      min_sentences=self.min_sentences, max_sentences=self.max_sentences,
                      max_citations=self.max_citations)

    def _feedback(self, messages: list[Message], text: str, violations: Sequence[str],
                  n_evidence: int) -> list[Message]:
        from ..llm.prompts import render

        retry = "retry" if self.mode == "cited" else "retry_plain"
        feedback = render(retry, self.prompt_dir, violations="\n".join(f"- {v}" for v in violations),
                          max_words=self.max_words, n_evidence=n_evidence)
        return [*messages, {"role": "assistant", "content": text}, *feedback]

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        if not evidence:
            return Answer(topic.id, [], [Dropped("answer", "", "no evidence to answer from")], self.name)
        return self._loop(self._messages(topic, queries, evidence), topic, queries, evidence)

    def revise(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence], previous: Answer,
               reasons: Sequence[str]) -> Answer:
        """Generate again with ``reasons`` (e.g. citations a stance check rejected) fed back after ``previous``
        (Dalhousie 2025's citation-validation loop)."""
        if not evidence:
            return previous
        self._reject_reply(topic.id, "generated again: " + "; ".join(reasons))
        messages = self._feedback(self._messages(topic, queries, evidence), previous.text, reasons, len(evidence))
        return self._loop(messages, topic, queries, evidence)

    def _loop(self, messages: list[Message], topic: Topic, queries: Sequence[Query],
              evidence: Sequence[Evidence]) -> Answer:
        notes: list[Dropped] = []
        text, violations = "", ["not generated"]
        drafts: list[DraftSentence] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                reply, text = self._complete(messages, "generation", attempt)
            except LLMError as exc:
                if not self.fallback:
                    raise
                log.warning("topic %s: the LLM call failed (%s); answering extractively", topic.id, exc.message)
                return self.extractive_answer(topic, queries, evidence, notes, text,
                                              f"the LLM call failed at attempt {attempt} ({exc.message}): "
                                              "extractive answer used", reject_reply=False)  # no reply to reject
            self._keep_reply(topic.id, reply)
            drafts = self._drafts(text, evidence)
            words = sum(word_count(d.text) for d in drafts)
            short = self._condensed(topic.question, text, words, attempt)
            if short:
                notes.append(Dropped("answer", text, f"attempt {attempt}: {words} words, condensed by the LLM"))
                text, drafts = short, self._drafts(short, evidence)
            violations = self._violations(drafts, evidence)
            retry = violations if self.retry_on == "any" else limit_violations(
                drafts, evidence, max_citations=self.max_citations, max_words=self.max_words)
            if not retry:
                break
            log.info("topic %s: attempt %d breaks %d rule(s)", topic.id, attempt, len(retry))
            notes.append(Dropped("answer", text, f"attempt {attempt} rejected: " + "; ".join(retry)))
            if attempt < self.max_attempts:  # asked again: the cache must not replay it (the last: extractive_answer)
                self._reject_reply(topic.id, f"attempt {attempt} breaks: " + "; ".join(retry))
            messages = self._feedback(messages, text, retry, len(evidence))
        drafts, repeats = fuzzy_dedupe(drafts, self.dedupe)
        sentences, dropped = finalize(drafts, evidence, max_citations=self.max_citations, max_words=self.max_words,
                                      model_text=True)
        dropped = [*repeats, *dropped]
        if not violations or not self.fallback or (self.fallback_when == "empty" and sentences):
            return Answer(topic.id, sentences, [*notes, *dropped], self.name)
        why = (f"LLM answer still invalid after {self.max_attempts} attempt(s) "
               f"({'; '.join(violations)}): extractive answer used") if self.fallback_when == "invalid" else (
               f"no valid sentence left after post-processing ({'; '.join(violations)}): extractive answer used")
        return self.extractive_answer(topic, queries, evidence, notes, text, why)

    def extractive_answer(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence],
                          notes: list[Dropped], text: str, why: str, *, reject_reply: bool = True) -> Answer:
        """The extractive answer, with the discarded LLM text and ``why`` recorded in ``Answer.dropped``. The LLM
        reply the discarded answer came from is rejected (the cache does not replay it) unless ``reject_reply``
        is False (the answer was not found wanting: its check could not run)."""
        if reject_reply:
            self._reject_reply(topic.id, why)
        backup = self.extractive.generate(topic, queries, evidence)
        return Answer(topic.id, backup.sentences, [*notes, Dropped("answer", text, why), *backup.dropped],
                      FALLBACK)
