"""The non-agentic multi-hop flow of CLaC 2024's MedHopQA systems 5/6, run by :class:`.answer.Pipeline` when
``flow=multi-hop`` (settings ``hops``).

1. **Simple or multi-hop** (``hops.classify``): the LLM says whether the question needs more than one search
   (``hop_classify.txt``); a simple question skips decomposition and is searched as it is.
2. **First hop**: the LLM names the question's key phrase and writes one focused sub-question about it
   (``hop_first.txt``); the preset's retrieval (its query set, branches, fusion, reranker, ``retrieve.keep``)
   runs for that sub-question as if it were a topic's question.
3. **Further hops**: from the top ``hops.hop_docs`` abstracts the last hop found, the LLM writes at most
   ``hops.max_subquestions`` new sub-questions, or DONE (``hop_next.txt``); each is searched; at most
   ``hops.max_hops`` hops. "Non-agentic": the sequence is fixed, the model only writes the next questions.
4. **Pooling**: the runs of every sub-question (and of the question itself, ``hops.search_question``) are fused
   by RRF and the best ``hops.docs`` kept (CLaC 2024: 60); evidence selection, generation and citation then
   run on that pool as in the retrieve-then-generate flow.
5. **Short answer** (``hops.short_answer``): a few words from the same evidence (``hop_short_answer.txt``),
   recorded; the long answer, the generator's, is the one submitted.

Every LLM call is traced with its stage (``hop_classification``, ``sub_question`` with its ``hop``,
``short_answer``); each hop's sub-questions and the PMIDs each found are recorded in the topic's
``verification`` record under ``multihop`` (``verification.jsonl``), and every sub-question is a query of the
topic (``queries.jsonl``, stage ``sub_question``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..evidence.base import format_block
from ..llm.base import reject
from ..llm.prompts import load_prompt, render
from ..llm.reply_parsers import (
    names_hop_kind,
    parse_first_hop,
    parse_hop_kind,
    parse_next_hops,
    parse_short_answer,
    says_done,
)
from ..llm.trace import trace_context
from ..retrieve.fusion import rrf
from ..set_option import set_line
from ..types import Evidence, Hit, Query, Topic, ranked

if TYPE_CHECKING:
    from ..llm.base import LLM
    from ..llm.completion import Completion, Message
    from .parts import PipelineParts

log = logging.getLogger(__name__)

PURPOSE = "the multi-hop flow (flow=multi-hop: an LLM writes the sub-questions)"


@dataclass
class MultiHop:
    """What the hops found for one topic: every query searched, the pooled ranking and the record."""

    queries: list[Query]
    hits: list[Hit]
    record: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # the notes of each search (retrieval.Retrieved.notes)


def hop_llm(pipe: PipelineParts) -> LLM:
    """The LLM of the hops; the flow has no no-LLM stand-in, so a missing one stops the run before any work."""
    cfg = pipe.settings.hops
    where = "llm" if cfg.llm is None else f"llms.{cfg.llm}"
    backend = pipe.settings.llm if cfg.llm is None else pipe.settings.llms.get(cfg.llm)
    if backend is not None and backend.calls_nothing:
        from ..presets.offline import offline_lines

        local = " ".join(offline_lines(pipe.settings, "local"))  # the hops' LLM is among those swapped
        raise ConfigError(
            f"flow 'multi-hop' needs a language model to write its sub-questions, but {where}.backend is 'none'; "
            "the multi-hop flow has no no-LLM stand-in",
            hint=f"run offline with the packaged local model: {local}; or answer without hops: "
            + set_line("flow", "retrieve-then-generate"),
        )
    return pipe.context.llm(cfg.llm, purpose=PURPOSE)


def _ask(llm: LLM, messages: list[Message], max_tokens: int, **labels: object) -> Completion:
    with trace_context(**labels):
        return llm.complete(messages, max_tokens=max_tokens)


def _is_multi_hop(pipe: PipelineParts, llm: LLM, question: str) -> bool:
    kind = pipe.settings.hops.classify
    if kind != "llm":
        return kind == "always"
    reply = _ask(llm, render("hop_classify", question=question), pipe.settings.hops.max_tokens,
                 stage="hop_classification")
    if not names_hop_kind(reply.text):
        reject(llm, reply, "names neither SIMPLE nor MULTI-HOP (read as multi-hop)")
    return parse_hop_kind(reply.text)


def _echoed(text: str, prompt: str) -> bool:
    """Whether ``text`` is copied from the instructions of ``prompt`` (a small model repeating "the entity or
    concept that must be understood ..." or "Do not repeat a sub-question ..."): such a line is not a sub-question."""
    words = re.findall(r"\w+", text.casefold())
    if len(words) < 4:  # a short key phrase ("axonal injury") may well share words with the instructions
        return False
    instructions = re.findall(r"\w+", " ".join(m["content"] for m in load_prompt(prompt)).casefold())
    return f" {' '.join(words)} " in f" {' '.join(instructions)} "


def _block(pipe: PipelineParts, hits: Sequence[Hit]) -> str:
    """The top abstracts of a hop as ``[i] (PMID) title. abstract`` (what the next sub-questions are written from)."""
    top = list(hits[: pipe.settings.hops.hop_docs])
    articles = pipe.store.get_many([h.pmid for h in top])
    items = [Evidence(i, h.pmid, f"{articles[h.pmid].title} {articles[h.pmid].abstract}".strip(), "abstract", None,
                      None, h.score, "abstract") for i, h in enumerate((h for h in top if h.pmid in articles), 1)]
    return format_block(items) or "(nothing found)"


class _Searcher:
    """Runs the preset's retrieval for one text after another, numbering their queries q0, q1, ... across the
    hops and naming each hit's branch after that number (``bm25/q3``), so the pooled evidence says which
    sub-question found it."""

    def __init__(self, pipe: PipelineParts, topic: Topic) -> None:
        self.pipe = pipe
        self.topic = topic
        self.queries: list[Query] = []
        self.runs: list[list[Hit]] = []
        self.notes: list[str] = []

    def search(self, text: str, label: str, stage: str) -> dict[str, Any]:
        topic = self.topic
        asked = topic if text == topic.question else Topic(f"{topic.id}-{label}", text, topic.narrative, topic.topic)
        found = self.pipe.retrieval.retrieve(asked)
        self.notes += [f"{label}: {n}" if asked is not topic else n for n in found.notes]
        rename: dict[str, str] = {}
        for q in found.queries:
            new = f"q{len(self.queries)}"
            rename[q.id] = new
            self.queries.append(Query(new, q.text, stage if q.text == text else q.stage, q.also))

        def relabel(name: str) -> str:
            branch, _, qid = name.rpartition("/")
            return f"{branch}/{rename.get(qid, qid)}" if branch else name

        hits = [Hit(h.pmid, h.score, h.rank, frozenset(relabel(b) for b in h.branches)) for h in found.final]
        self.runs.append(hits)
        return {"id": rename.get(found.queries[0].id, ""), "text": text, "hits": [h.pmid for h in hits]}


def retrieve(pipe: PipelineParts, topic: Topic) -> MultiHop:
    """Classify, hop, pool (see the module docstring)."""
    cfg = pipe.settings.hops
    llm = hop_llm(pipe)
    t0 = time.perf_counter()
    multi = _is_multi_hop(pipe, llm, topic.question)
    record: dict[str, Any] = {"kind": "multi-hop" if multi else "simple", "classified_by": cfg.classify, "hops": []}
    searcher = _Searcher(pipe, topic)
    if cfg.search_question or not multi:
        record["hops"].append({"hop": 0, "sub_questions": [searcher.search(topic.question, "q", "original")]})
    if multi:
        record.update(_hop(pipe, llm, topic, searcher, record["hops"]))
    else:
        record["stopped"] = "simple question: no decomposition"
    runs = [r for r in searcher.runs if r]
    if len(runs) > 1:
        pooled = rrf(runs, k=pipe.settings.retrieve.rrf_k)
    else:
        pooled = ranked(runs[0]) if runs else []
    pooled = pooled[: cfg.docs]
    record["pooled"] = [h.pmid for h in pooled]
    return MultiHop(searcher.queries, pooled, record, {"hops": time.perf_counter() - t0}, searcher.notes)


def _hop(pipe: PipelineParts, llm: LLM, topic: Topic, searcher: _Searcher,
         hops: list[dict[str, Any]]) -> dict[str, Any]:
    """Hop 1 from the key phrase, then further hops from the evidence; returns the key phrase and why it stopped."""
    cfg = pipe.settings.hops
    reply = _ask(llm, render("hop_first", question=topic.question), cfg.max_tokens, stage="sub_question", hop=1)
    text = reply.text
    key, first = parse_first_hop(text)
    key = "" if _echoed(key, "hop_first") else key
    first = key if first == key or _echoed(first, "hop_first") else first
    out: dict[str, Any] = {"key_phrase": key}
    asked = {topic.question.strip().casefold()}
    frontier = [first] if first and first.strip().casefold() not in asked else []
    if not frontier:
        log.warning("topic %s: no sub-question could be read from %r; searching the question only", topic.id,
                    text[:200])
        reject(llm, reply, "no sub-question could be read")
        return {**out, "stopped": "no sub-question could be read"}
    for n in range(1, cfg.max_hops + 1):
        found = [searcher.search(q, f"h{n}.{j}", "sub_question") for j, q in enumerate(frontier, 1)]
        hops.append({"hop": n, "sub_questions": found})
        asked |= {q.strip().casefold() for q in frontier}
        if n == cfg.max_hops:
            return {**out, "stopped": f"max_hops ({cfg.max_hops}) reached"}
        runs = searcher.runs[-len(frontier):]
        last = rrf(runs, k=pipe.settings.retrieve.rrf_k) if len(runs) > 1 else runs[0]
        messages = render("hop_next", question=topic.question, max_subquestions=cfg.max_subquestions,
                          asked="\n".join(f"- {q}" for h in hops for q in (s["text"] for s in h["sub_questions"])),
                          evidence=_block(pipe, last))
        reply = _ask(llm, messages, cfg.max_tokens, stage="sub_question", hop=n + 1)
        text = reply.text
        named = parse_next_hops(text, cfg.max_subquestions)
        frontier = [q for q in named if q.strip().casefold() not in asked and not _echoed(q, "hop_next")]
        if not named and not says_done(text):  # neither DONE nor a sub-question: unread, not the model's choice
            reject(llm, reply, "neither DONE nor a sub-question could be read")
        if not frontier:
            return {**out, "stopped": f"hop {n + 1}: no new sub-question (the model answered "
                                      f"{' '.join(text.split())[:80]!r})"}
    return out  # not reached: the loop returns at max_hops


def short_answer(pipe: PipelineParts, topic: Topic, evidence: Sequence[Evidence]) -> str:
    """The short answer from the evidence the long answer is written from (recorded, not submitted)."""
    if not evidence:
        return ""
    messages = render("hop_short_answer", question=topic.question, evidence=format_block(evidence))
    llm = hop_llm(pipe)
    reply = _ask(llm, messages, pipe.settings.hops.max_tokens, stage="short_answer")
    answer = parse_short_answer(reply.text)
    if not answer:
        reject(llm, reply, "no short answer could be read")
    return answer
