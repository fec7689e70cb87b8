"""Summary bullets: LLM summaries of the pooled abstracts, split into short bullets, chosen by TF-IDF + MMR.

CLaC 2025 (BioGen Task B, "Modular sparse and dense retrieval for evidence-constrained biomedical QA"):
each retrieved abstract is summarised by the LLM in 1-2 sentences (at most 80 words, numbers kept, prompt
``summarize.txt``); the summaries are split into bullets of at most 28 words, at most ``bullets_per_doc``
from one document; bullets are scored by TF-IDF cosine to the query set (``prior_weight`` adds the document's
``1/rank`` prior as :mod:`.snippets` does; the paper has none, so it is 0) and selected by MMR with lambda 0.75.
CLaC 2025 summarises the whole pooled union (``docs`` at least the pool's size), not a cut of it.

A bullet is the model's paraphrase, not a span of the article, so its ``section``/``start``/``end`` are None;
its PMID is the summarised article's, so citations stay traceable to the documents shown to the model.
When the LLM gives nothing usable for any document, the selector falls back to sentence snippets.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..settings_base import UsesLLM
from ..types import Article, Evidence, Hit, Query
from .base import EvidenceConfig, EvidenceSelector
from .sentences import split_spans
from .snippets import SnippetsConfig, SnippetSelector
from .tfidf_mmr import mmr, relevance, similarity_matrix

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..llm.base import LLM

log = logging.getLogger(__name__)

MIN_BULLET_WORDS = 4


class SummariesConfig(UsesLLM, EvidenceConfig):
    """CLaC 2025: LLM summaries of the top ``docs`` abstracts (one call each), split into bullets."""

    no_llm: ClassVar[dict[str, str]] = {"backend": "snippets"}

    backend: Literal["summaries"] = "summaries"
    summary_words: int = Field(80, ge=5, description="Most words kept of one summary.")
    prompt: Literal["summarize", "clac25_summarize"] = Field(
        "summarize", description="The prompt file: medcite's 'summarize' or 'clac25_summarize' (CLaC 2025's "
        "Listing 2, verbatim)."
    )
    max_tokens: int = Field(160, ge=8, description="Most tokens generated per summary.")
    bullet_words: int = Field(28, ge=5, description="Most words per bullet (CLaC 2025: 28).")
    bullets_per_doc: int = Field(2, ge=1, description="Most bullets taken from one document's summary.")
    prior_weight: float = Field(
        0.0, ge=0, le=1, description="Weight of the document's 1/rank prior beside TF-IDF relevance. CLaC 2025 "
        "scores bullets by TF-IDF relevance alone (0)."
    )
_CLAUSE = re.compile(r"(?<=[;:])\s+|,\s+(?=(?:and|but|whereas|while|which|although)\b)")


def split_bullets(summary: str, max_words: int = 28) -> list[str]:
    """Sentences of ``summary``; a longer sentence is split at clause breaks, then cut into word windows.

    Every bullet has at most ``max_words`` words; fragments under four words join the bullet before them
    when they fit, else are dropped.
    """
    out: list[str] = []
    for start, end in split_spans(summary):
        sentence = " ".join(summary[start:end].split())
        if len(sentence.split()) <= max_words:
            pieces = [sentence]
        else:
            pieces = _split_long(sentence, max_words)
        for piece in pieces:
            piece = piece.strip(" ,;:")
            n = len(piece.split())
            if n >= MIN_BULLET_WORDS:
                out.append(piece)
            elif out and len(out[-1].split()) + n <= max_words and n:
                out[-1] = f"{out[-1]} {piece}"
    return out


def _split_long(sentence: str, max_words: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    for clause in _CLAUSE.split(sentence):
        words = clause.split()
        if current and len(current) + len(words) > max_words:
            pieces.append(" ".join(current))
            current = []
        current.extend(words)
        while len(current) > max_words:
            pieces.append(" ".join(current[:max_words]))
            current = current[max_words:]
    if current:
        pieces.append(" ".join(current))
    return pieces


def _question(queries: Sequence[Query]) -> str:
    for q in queries:
        if "original" in q.stages:
            return q.text
    return queries[0].text if queries else ""


@dataclass
class SummarySelector:
    """CLaC 2025 evidence: LLM summaries of the top ``docs`` abstracts, as bullets, TF-IDF + MMR."""

    llm: LLM
    name: str = "summaries"
    docs: int = 10
    max_items: int = 10
    bullets_per_doc: int = 2
    bullet_words: int = 28
    summary_words: int = 80
    max_tokens: int = 160
    lam: float = 0.75
    prior_weight: float = 0.0
    fallback: EvidenceSelector = field(default_factory=SnippetSelector)
    prompt: str = "summarize"

    Config: ClassVar[type[SummariesConfig]] = SummariesConfig

    @classmethod
    def from_config(cls, cfg: SummariesConfig, ctx: BuildContext) -> SummarySelector:
        """When the LLM gives nothing usable, the sentence snippets of the same documents stand in."""
        llm = ctx.llm(cfg.llm, purpose="the evidence selector 'summaries'")
        fallback = ctx.build("evidence", SnippetsConfig(docs=cfg.docs, max_items=cfg.max_items,
                                                        per_doc=cfg.bullets_per_doc, lam=cfg.lam))
        return cls(llm, docs=cfg.docs, max_items=cfg.max_items, bullets_per_doc=cfg.bullets_per_doc,
                   bullet_words=cfg.bullet_words, summary_words=cfg.summary_words, max_tokens=cfg.max_tokens,
                   lam=cfg.lam, prior_weight=cfg.prior_weight, prompt=cfg.prompt, fallback=fallback)

    def summarize(self, question: str, articles: Sequence[Article]) -> list[str]:
        """One parsed summary per article (empty when the model gave nothing usable)."""
        from ..llm.base import reject
        from ..llm.prompts import render
        from ..llm.reply_parsers import parse_summary
        from ..llm.trace import trace_context

        if not articles:
            return []
        chats = [render(self.prompt, question=question, title=a.title, abstract=a.abstract or a.title, pmid=a.pmid)
                 for a in articles]
        with trace_context(stage="summary"):
            completions = self.llm.complete_many(chats, max_tokens=self.max_tokens)
        summaries = [parse_summary(c.text, max_words=self.summary_words) for c in completions]
        for c, summary in zip(completions, summaries, strict=True):
            if not summary:
                reject(self.llm, c, "no summary could be read")
        return summaries

    def select(
        self, queries: Sequence[Query], hits: Sequence[Hit], articles: Mapping[str, Article]
    ) -> list[Evidence]:
        top = [(h, articles[h.pmid]) for h in hits if h.pmid in articles][: self.docs]
        summaries = self.summarize(_question(queries), [a for _, a in top])
        cands: list[tuple[str, Hit]] = []
        for (hit, _), summary in zip(top, summaries, strict=True):
            if not summary:
                log.warning("no usable summary of PMID %s", hit.pmid)
                continue
            cands.extend((b, hit) for b in split_bullets(summary, self.bullet_words))
        if not cands:
            log.warning("no summary bullets for these %d documents: using sentence snippets", len(top))
            return self.fallback.select(queries, hits, articles)
        texts = [c[0] for c in cands]
        rel = relevance(texts, [q.text for q in queries])
        doc_rank = {h.pmid: i + 1 for i, h in enumerate(hits)}
        scores = [(1 - self.prior_weight) * float(r) + self.prior_weight / doc_rank[c[1].pmid]
                  for r, c in zip(rel, cands, strict=True)]
        order = mmr(scores, similarity_matrix(texts), self.max_items, self.lam,
                    groups=[c[1].pmid for c in cands], per_group=self.bullets_per_doc)
        return [
            Evidence(index=i + 1, pmid=cands[j][1].pmid, text=cands[j][0], section=None, start=None, end=None,
                     score=scores[j], kind="bullet", branches=cands[j][1].branches)
            for i, j in enumerate(order)
        ]

