"""Sentence snippets: the best sentences of the top documents, chosen by TF-IDF relevance + MMR.

Every evidence item is an exact span of its article (section + character offsets), so a cited PMID can always
be traced to the words shown to the generator. Scoring (CLaC 2025 selection, applied to sentences as in
Dalhousie 2025 / PJs): ``0.8 * best TF-IDF cosine to the query set + 0.2 * document prior`` where the prior is
``1 / rank`` of the document in the final ranking, times a role prior (:func:`role_weight`: findings over aims
and methods, titles a little lower); MMR with lambda 0.75 removes near-duplicates and at most
``per_doc`` sentences come from one document.

``scorer=reranker`` (Dalhousie 2025: "30 relevant snippets (sentences) are extracted using the same MonoT5
model"): the stage's reranker (``rerank``) scores every (question, sentence) pair and the best ``max_items``
are taken in that order (at most ``per_doc`` per document); no TF-IDF, prior or MMR.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..types import Article, Evidence, Hit, Query
from .base import EvidenceConfig
from .sentences import SentenceSpan, article_sentences
from .tfidf_mmr import mmr, relevance, similarity_matrix

log = logging.getLogger(__name__)

MIN_WORDS = 4  # fragments shorter than this ("Results.") are never evidence

# Findings answer questions; aims and methods rarely do. Structured-abstract labels (NLM categories) and the
# usual aim/method openings of unstructured abstracts shift a sentence's score (a prior, not a filter).
ROLE_WEIGHTS = {"CONCLUSIONS": 1.15, "RESULTS": 1.1, "BACKGROUND": 0.85, "OBJECTIVE": 0.8, "METHODS": 0.75}
TITLE_WEIGHT = 0.8
_AIM_OPENINGS = re.compile(
    r"^(we (aimed|sought|investigated|examined|studied|evaluated|assessed|conducted|performed|describe)|"
    r"(the )?(aim|purpose|objective|goal)s? (of|was|were|is)|this (study|paper|article|review) (aim|was|is|describes)|"
    r"to (investigate|evaluate|assess|determine|examine|explore|compare))",
    re.IGNORECASE,
)


if TYPE_CHECKING:
    from ..context import BuildContext
    from .bioasq_snippets import SentenceScorer


class SnippetsConfig(EvidenceConfig):
    """Sentences of the top documents (TF-IDF relevance to the query set + MMR), exact spans; no LLM."""

    backend: Literal["snippets"] = "snippets"
    per_doc: int = Field(2, ge=1, description="Most evidence sentences taken from one document.")
    scorer: Literal["tfidf", "reranker"] = Field(
        "tfidf", description="How sentences are scored: 'tfidf' (TF-IDF relevance + priors, then MMR) or "
        "'reranker' (the `rerank` stage's model scores each sentence against the question; Dalhousie 2025's "
        "monoT5 snippet extraction)."
    )


def role_weight(span: SentenceSpan) -> float:
    """Prior for how likely a sentence states a finding rather than an aim or a method."""
    if span.section == "title":
        return TITLE_WEIGHT
    role = (span.category or span.label or "").upper()
    weight = ROLE_WEIGHTS.get(role, ROLE_WEIGHTS.get(role + "S", 1.0))
    if _AIM_OPENINGS.match(span.text):
        weight = min(weight, 0.8)
    return weight


@dataclass
class SnippetSelector:
    name: str = "snippets"
    docs: int = 10
    max_items: int = 10
    per_doc: int = 2
    lam: float = 0.75
    prior_weight: float = 0.2
    splitter: str = "syntok"
    include_titles: bool = True
    scorer: SentenceScorer | None = None  # replaces TF-IDF + MMR

    Config: ClassVar[type[SnippetsConfig]] = SnippetsConfig

    @classmethod
    def from_config(cls, cfg: SnippetsConfig, ctx: BuildContext) -> SnippetSelector:
        scorer = None
        if cfg.scorer == "reranker":
            from .bioasq_snippets import RerankerScorer

            rerank = ctx.reranker_config()
            built = ctx.build("rerank", rerank) if rerank.backend != "none" else None
            if built is None:  # e.g. the no-LLM swap of a listwise reranker: said, and TF-IDF + MMR scores
                log.warning("evidence.scorer=reranker, but rerank.backend is 'none': sentences are scored by "
                            "TF-IDF + MMR (set rerank.backend, e.g. monot5, to score them with a reranker)")
            else:
                scorer = RerankerScorer(built)
        return cls(docs=cfg.docs, max_items=cfg.max_items, per_doc=cfg.per_doc, lam=cfg.lam, scorer=scorer)

    def candidates(self, hits: Sequence[Hit], articles: Mapping[str, Article]) -> list[tuple[SentenceSpan, Hit]]:
        out = []
        for hit in hits[: self.docs]:
            article = articles.get(hit.pmid)
            if article is None:
                continue
            for span in article_sentences(article, self.splitter):
                if span.section == "title" and not self.include_titles:
                    continue
                if len(span.text.split()) >= MIN_WORDS:
                    out.append((span, hit))
        return out

    def select(
        self, queries: Sequence[Query], hits: Sequence[Hit], articles: Mapping[str, Article]
    ) -> list[Evidence]:
        cands = self.candidates(hits, articles)
        if not cands:
            return []
        texts = [c[0].text for c in cands]
        if self.scorer is not None:
            return self._by_scorer(self.scorer, queries, cands)
        rel = relevance(texts, [q.text for q in queries])
        doc_rank = {h.pmid: i + 1 for i, h in enumerate(hits)}
        scores = [
            ((1 - self.prior_weight) * float(r) + self.prior_weight / doc_rank[c[1].pmid]) * role_weight(c[0])
            for r, c in zip(rel, cands, strict=True)
        ]
        order = mmr(scores, similarity_matrix(texts), self.max_items, self.lam,
                    groups=[c[0].pmid for c in cands], per_group=self.per_doc)
        return [
            Evidence(index=i + 1, pmid=cands[j][0].pmid, text=cands[j][0].text, section=cands[j][0].section,
                     start=cands[j][0].start, end=cands[j][0].end, score=scores[j], kind="snippet",
                     branches=cands[j][1].branches)
            for i, j in enumerate(order)
        ]

    def _by_scorer(self, scorer: SentenceScorer, queries: Sequence[Query], cands: list[tuple[SentenceSpan, Hit]]
                   ) -> list[Evidence]:
        """The best ``max_items`` sentences by the scorer against the question (the original query; the first
        query when there is none), at most ``per_doc`` per document, in score order."""
        question = next((q.text for q in queries if "original" in q.stages), queries[0].text if queries else "")
        scores = scorer.score(question, [c[0].text for c in cands])
        order = sorted(range(len(cands)), key=lambda j: -scores[j])  # stable: ties keep the documents' order
        taken: dict[str, int] = {}
        out: list[Evidence] = []
        for j in order:
            span, hit = cands[j]
            if taken.get(span.pmid, 0) >= self.per_doc:
                continue
            taken[span.pmid] = taken.get(span.pmid, 0) + 1
            out.append(Evidence(index=len(out) + 1, pmid=span.pmid, text=span.text, section=span.section,
                                start=span.start, end=span.end, score=float(scores[j]), kind="snippet",
                                branches=hit.branches))
            if len(out) >= self.max_items:
                break
        return out
