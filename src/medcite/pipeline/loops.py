"""The verification loops of Dalhousie 2025 and its answer-first flow, run by :class:`.answer.Pipeline`.

- :func:`sufficient_evidence` (``verify.sufficiency_rounds``, run ``afmmd``): the LLM judges whether the
  evidence answers the question; if not it writes a new query, whose hits are fused with what was found
  (RRF) and the evidence selected again; at most N rounds, then the answer is written anyway.
- :func:`verify_citations` (``verify.citations``): every (sentence, cited PMID) pair is judged by the stance
  stage; ``regenerate`` first asks an LLM generator again with the rejected citations' reasons (at most
  ``max_rounds`` generations), then ``drop``/``regenerate`` remove what is still unsupported; ``check`` only
  records; ``corroborate`` adds supporting citations the stance check confirms.
- :func:`answer_first` (``flow=generate-then-ground``, runs ``expd``/``empd``): the LLM answers with no
  retrieval; each sentence is then grounded like a Task A sentence (support side) and keeps at most 3
  supporting PMIDs; a sentence nothing supports is dropped or flagged (``ground.unsupported``).

Every decision is recorded: removals in ``Answer.dropped`` with their reasons, each judged citation and
each loop round in the topic's ``verification`` record (``verification.jsonl``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..attribute.validation import apply_checks, corroborating, gate_checks, judge_citations, reasons
from ..errors import LLMError
from ..evidence.base import format_block
from ..generate.base import FallsBack, Revises
from ..llm.base import reject
from ..llm.personas import frame
from ..llm.prompts import render
from ..llm.reply_parsers import names_sufficiency, parse_sufficiency
from ..llm.trace import trace_context
from ..retrieve.fusion import rrf
from ..types import Answer, AnswerSentence, Article, Dropped, Evidence, Hit, Query, Stance, Topic

if TYPE_CHECKING:
    from .parts import PipelineParts

log = logging.getLogger(__name__)

PERSONAS = {
    "expert": "You are a biomedical expert who answers precisely, as in a clinical review.",
    "emotional": "You are a caring clinician who answers a worried patient warmly, in plain words, and stays "
                 "factually precise.",
    # EmotionPrompt (Li et al. 2023): a plain role; the stimulus is appended to the request (llm.personas.frame)
    "emotionprompt": "You answer biomedical questions.",
}


def check_json(check: Any) -> dict[str, Any]:
    v = check.verdict
    return {"sentence": check.sentence, "pmid": check.pmid, "stance": v.label.value,
            "scores": dict(v.scores), "span": [v.section, v.start, v.end], "kept": check.kept,
            "reason": check.reason}


def sufficient_evidence(pipe: PipelineParts, topic: Topic, queries: list[Query], hits: list[Hit],
                        articles: dict[str, Article], evidence: list[Evidence]
                        ) -> tuple[list[Query], list[Hit], dict[str, Article], list[Evidence], list[dict[str, Any]]]:
    """At most ``verify.sufficiency_rounds`` rounds of judge -> new query -> fused hits -> new evidence."""
    cfg = pipe.settings.verify
    llm = pipe.context.llm(cfg.llm, purpose="the evidence-sufficiency loop (verify.sufficiency_rounds)")
    rounds: list[dict[str, Any]] = []
    for n in range(1, cfg.sufficiency_rounds + 1):
        messages = render("sufficiency", question=topic.question, evidence=format_block(evidence) or "(none)")
        with trace_context(stage="sufficiency", round=n):
            reply = llm.complete(messages)
        ok, query = parse_sufficiency(reply.text)
        if not names_sufficiency(reply.text):  # read as 'insufficient, nothing to search': the loop stops
            reject(llm, reply, "says neither SUFFICIENT nor a QUERY")
        rounds.append({"round": n, "sufficient": ok, "query": query})
        if ok or not query:
            break
        more = pipe.retrieval.retrieve(Topic(f"{topic.id}-s{n}", query, topic.narrative, topic.topic))
        new = Query(f"q{len(queries)}", query, "sufficiency")
        queries = [*queries, new]
        if cfg.sufficiency_evidence == "accumulate":
            hits, articles, evidence = _accumulate(pipe, new, hits, articles, evidence, more.final)
            rounds[-1]["evidence"] = len(evidence)
            continue
        hits = rrf([hits, more.final])[: max(len(hits), len(more.final))]
        articles = pipe.store.get_many([h.pmid for h in hits])
        evidence = pipe.selector.select(queries, hits, articles)
    return queries, hits, articles, evidence, rounds


def _accumulate(pipe: PipelineParts, query: Query, hits: list[Hit], articles: dict[str, Article],
                evidence: list[Evidence], found: Sequence[Hit]) -> tuple[list[Hit], dict[str, Article], list[Evidence]]:
    """The new query's evidence appended after everything collected so far (Dalhousie 2025 afmmd); an item
    already shown (same PMID and text) is not shown twice; the new items are numbered on from the last."""
    seen_hits = {h.pmid for h in hits}
    hits = [*hits, *(h for h in found if h.pmid not in seen_hits)]
    more_articles = pipe.store.get_many([h.pmid for h in found])
    articles = {**articles, **more_articles}
    shown = {(e.pmid, " ".join(e.text.split())) for e in evidence}
    start = max((e.index for e in evidence), default=0)
    added: list[Evidence] = []
    for e in pipe.selector.select([query], list(found), more_articles):
        key = (e.pmid, " ".join(e.text.split()))
        if key not in shown:
            shown.add(key)
            added.append(replace(e, index=start + len(added) + 1))
    return hits, articles, [*evidence, *added]


def gate_citations(pipe: PipelineParts, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence],
                   answer: Answer, articles: Mapping[str, Article]) -> tuple[Answer, dict[str, Any]]:
    """The support gate (``verify.gate``): every citation of a sentence that does not quote the cited abstract
    verbatim is judged; a rejected one is removed (and a sentence left uncited dropped), each with its reason.

    When the gate leaves no sentence at all and the generator has an extractive fallback, the extractive
    answer (quotes, which the gate passes) replaces it, and ``dropped`` says why: an empty answer would fail
    the track's validation and tell the reader nothing."""
    gate = pipe.gate
    if gate is None:  # the pipeline runs this only when a gate is built (medcite.pipeline.gate)
        return answer, {}
    kind = gate.kind
    checks, quoted = gate_checks(answer, articles, gate.judge, min_support=gate.min_support)
    record: dict[str, Any] = {
        "judge": kind, "threshold": gate.threshold,
        "quoted": quoted, "checked": len(checks), "rejected": sum(not c.kept for c in checks),
        "checks": [check_json(c) for c in checks],
    }
    if record["rejected"]:
        log.info("topic %s: the %s gate removed %d of %d generated citations", answer.topic_id, kind,
                 record["rejected"], len(checks))
    gated = apply_checks(answer, checks, (), (), record_stance=kind == "stance", check_name=f"the {kind} gate")
    generator = pipe.generator  # an LLM generator has an extractive fallback
    if answer.sentences and not gated.sentences and isinstance(generator, FallsBack):
        why = f"the {kind} gate left no supported sentence: extractive answer used"
        record["fallback"] = why
        gated = generator.extractive_answer(topic, queries, evidence, list(gated.dropped), answer.text, why)
    return gated, record


def verify_citations(pipe: PipelineParts, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence],
                     articles: Mapping[str, Article], answer: Answer) -> tuple[Answer, dict[str, Any]]:
    """The stance check of every citation (see the module docstring); returns the answer and its record.

    When the judge's LLM fails for good (its server keeps answering 500s or unreadable bodies after the
    backend's retries), the citations cannot be checked as the preset requires: an LLM generator's extractive
    answer (verbatim quotes of the cited abstracts) replaces the unchecked one, and the record and ``dropped``
    say why. A generator without that fallback lets the error stop the run."""
    try:
        return _verify_citations(pipe, topic, queries, evidence, articles, answer)
    except LLMError as exc:
        generator = pipe.generator
        if not isinstance(generator, FallsBack):
            raise
        why = f"the citation check failed ({exc.message}): extractive answer used"
        log.warning("topic %s: %s", topic.id, why)
        # the answer was not found wanting (its check could not run): its reply may be replayed
        replaced = generator.extractive_answer(topic, queries, evidence, list(answer.dropped), answer.text, why,
                                               reject_reply=False)
        return replaced, {"rounds": [], "checks": [], "failed": why}


def _verify_citations(pipe: PipelineParts, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence],
                      articles: Mapping[str, Article], answer: Answer) -> tuple[Answer, dict[str, Any]]:
    cfg, stance = pipe.settings.verify, pipe.stance
    if stance is None:  # the pipeline runs the check only when it built the stance stage
        return answer, {}
    record: dict[str, Any] = {"rounds": []}
    checks = judge_citations(answer, articles, stance, min_support=cfg.min_support, keep_neutral=cfg.keep_neutral)
    generator = pipe.generator
    rounds = 1
    while cfg.citations == "regenerate" and isinstance(generator, Revises) and rounds < cfg.max_rounds:
        rejected = reasons(checks, answer)
        if not rejected:
            break
        record["rounds"].append({"round": rounds, "rejected": rejected})
        answer = generator.revise(topic, queries, evidence, answer, rejected)
        checks = judge_citations(answer, articles, stance, min_support=cfg.min_support,
                                 keep_neutral=cfg.keep_neutral)
        rounds += 1
    extra = []
    if cfg.corroborate:
        extra = corroborating(answer, evidence, articles, stance, min_support=cfg.min_support,
                              max_citations=pipe.settings.generate.max_citations)
    record["checks"] = [check_json(c) for c in [*checks, *extra]]
    if cfg.citations == "check":
        checks = [type(c)(c.sentence, c.pmid, c.verdict, True, "") for c in checks]
    return apply_checks(answer, checks, extra, evidence), record


def answer_first(pipe: PipelineParts, topic: Topic) -> tuple[list[Query], list[Hit], list[Evidence], Answer,
                                                        dict[str, Article], dict[str, Any]]:
    """The LLM answers first; each sentence is grounded afterwards (see the module docstring)."""
    from ..evidence.sentences import split_spans
    from ..generate.citations import split_cited_sentences, strip_pmid_mentions
    from ..generate.postprocess import answer_sentences

    settings = pipe.settings
    llm = pipe.context.llm(settings.verify.llm, purpose="the generate-then-ground flow")
    persona = PERSONAS[settings.ground.persona]
    messages = render("answer_first", question=topic.question, max_words=settings.generate.max_words,
                      persona=persona)
    if settings.ground.persona == "emotionprompt":
        messages = frame(messages, "emotionprompt")
    with trace_context(stage="generation"):
        reply = llm.complete(messages)
    plain, mentions = strip_pmid_mentions(" ".join(d.text for d in split_cited_sentences(reply.text)), set())
    sentences, cleaned = answer_sentences([" ".join(plain[s:e].split()) for s, e in split_spans(plain)])
    if not sentences:
        reject(llm, reply, "no answer sentence could be read")
    assert pipe.grounder is not None  # the pipeline builds one for this flow
    found = pipe.grounder.ground(sentences, question=topic.question, topic_id=topic.id)
    evidence: list[Evidence] = []
    out: list[AnswerSentence] = []
    # the model answered with no evidence: any PMID it names is unread (it may be invented)
    dropped: list[Dropped] = [*cleaned, *(Dropped("citation", m, why) for m, why in mentions)]
    articles: dict[str, Article] = {}
    words = 0
    for g in found:
        cites, indices, stances = [], [], []
        for pmid in g.supported:
            v = g.verdicts[pmid]
            article = g.articles[pmid]
            source = article.title if v.section == "title" else article.abstract
            span = source[v.start: v.end] if v.start is not None and v.end is not None else article.text
            evidence.append(Evidence(len(evidence) + 1, pmid, span, v.section, v.start, v.end,
                                     v.score(Stance.SUPPORTS), "stance-span"))
            articles[pmid] = article
            cites.append(pmid)
            indices.append(len(evidence))
            stances.append((pmid, Stance.SUPPORTS))
        n = len(g.text.split())
        if words + n > settings.generate.max_words:
            dropped.append(Dropped("sentence", g.text, f"answer would exceed {settings.generate.max_words} words"))
            continue
        if not cites and settings.ground.unsupported == "drop":
            dropped.append(Dropped("sentence", g.text, "no retrieved abstract supports it"))
            continue
        if not cites:
            dropped.append(Dropped("citation", g.text, "flagged: no retrieved abstract supports it; kept uncited"))
        out.append(AnswerSentence(g.text, tuple(cites), tuple(indices), tuple(stances)))
        words += n
    answer = Answer(topic.id, out, dropped, "llm+grounded")
    queries = [Query(f"q{i}", q.text, q.stage, q.also) for i, q in enumerate(q for g in found for q in g.queries)]
    hits = rrf([h for g in found for h in [g.candidates]]) if found else []
    record = {"grounding": [{"sentence": g.text, "supported": g.supported, "contradicted": g.contradicted,
                            "anchored": g.anchored, "verdicts": {p: {"stance": v.label.value, "scores": dict(v.scores),
                                             "span": [v.section, v.start, v.end]} for p, v in g.verdicts.items()}}
                           for g in found]}
    return queries, hits, evidence, answer, articles, record
