"""Sentence snippets: the best sentences of the top documents, chosen by TF-IDF relevance + MMR.

Every evidence item is an exact span of its article (section + character offsets), so a cited PMID can always
be traced to the words shown to the generator. Scoring (CLaC 2025 selection, applied to sentences as in
Dalhousie 2025 / PJs): ``0.8 * best TF-IDF cosine to the query set + 0.2 * document prior`` where the prior is
``1 / rank`` of the document in the final ranking; MMR with lambda 0.75 removes near-duplicates and at most
``per_doc`` sentences come from one document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..types import Article, Evidence, Hit, Query
from .sentences import SentenceSpan, article_sentences
from .tfidf_mmr import mmr, relevance, similarity_matrix

MIN_WORDS = 4  # fragments shorter than this ("Results.") are never evidence


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
        rel = relevance(texts, [q.text for q in queries])
        doc_rank = {h.pmid: i + 1 for i, h in enumerate(hits)}
        scores = [
            (1 - self.prior_weight) * float(r) + self.prior_weight / doc_rank[c[1].pmid]
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
