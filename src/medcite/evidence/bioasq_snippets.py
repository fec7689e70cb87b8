"""BioASQ Phase A snippets: the best sentences of the top documents, with exact BioASQ section offsets.

PJs-team (BioASQ 13b, "Exploring Retrieval-Reranking and LLM-Based Answer Generation for Biomedical QA")
scored the sentences of the top documents by all-MiniLM-L6-v2 similarity to the question and submitted the
best ones as snippets. Here a sentence is scored by one of three scorers:

- ``embedding`` (PJs): cosine similarity of encoder vectors (the packaged MiniLM by default), the question
  encoded as a query and each sentence as a document;
- ``reranker``: any rerank backend scoring (question, sentence) pairs, built by the context through the one
  construction path (a cross-encoder, an ensemble, a listwise LLM, ...);
- ``tfidf``: TF-IDF cosine to the question (cheap, no model).

At most ``per_document`` sentences come from one document and at most ``snippets`` (BioASQ: 10) are returned,
best first. Every snippet is an exact span of the stored article: its ``begin_section``/``end_section`` is
``title`` or ``abstract`` and ``section_text[begin_offset:end_offset] == text`` (end exclusive), where the
section text is ``Article.title`` or ``Article.abstract`` as the store holds it (:func:`snippet_text`).

Why a module of its own and not an evidence backend: the evidence stage hands numbered ``Evidence`` to a
generator and is chosen per preset for Task B; Phase A submits ranked BioASQ ``Snippet`` objects, and its
options (documents, snippets, scorer, sentences per document) sit in ``settings.bioasq`` beside the other
BioASQ limits, read by the BioASQ task. The module reuses the evidence stage's sentence splitter
(:mod:`.sentences`) and the rerank stage's backends through the build context.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError
from ..set_option import set_line
from ..types import Article, Hit, Snippet
from .sentences import SentenceSpan, article_sentences
from .tfidf_mmr import relevance

if TYPE_CHECKING:
    from ..config import BioASQSettings
    from ..context import BuildContext
    from ..rerank.base import Reranker

log = logging.getLogger(__name__)

#: Hit ids given to sentences when a reranker scores them: integers (an index's vector lookup reads PMIDs as
#: integers) far above any real PMID, so no stored document vector is ever taken for a sentence.
PSEUDO_PMID_BASE = 10**12


class SentenceEncoder(Protocol):
    """What :class:`EncoderScorer` needs from an encoder (a part of the dense index's Encoder protocol)."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray: ...


@runtime_checkable
class SentenceScorer(Protocol):
    """Scores sentences for a question; higher is better."""

    name: str

    def score(self, question: str, sentences: Sequence[str]) -> list[float]: ...


class TfidfScorer:
    """TF-IDF cosine of each sentence to the question (word uni- and bigrams, English stop words removed)."""

    name = "tfidf"

    def score(self, question: str, sentences: Sequence[str]) -> list[float]:
        return [float(x) for x in relevance(list(sentences), [question])]


class EncoderScorer:
    """Cosine similarity of encoder vectors (PJs: all-MiniLM-L6-v2): the question as a query, each sentence as a
    document (an asymmetric encoder such as MedCPT reads it with its article side)."""

    name = "embedding"

    def __init__(self, encoder: SentenceEncoder) -> None:
        self.encoder = encoder

    def score(self, question: str, sentences: Sequence[str]) -> list[float]:
        if not sentences:
            return []
        q = np.asarray(self.encoder.encode_queries([question]), dtype=np.float64)[0]
        docs = np.asarray(self.encoder.encode_documents(_pseudo_articles(sentences)), dtype=np.float64)
        qn = np.linalg.norm(q)
        dn = np.linalg.norm(docs, axis=1)
        denom = np.where(dn * qn > 0, dn * qn, 1.0)
        return [float(s) for s in (docs @ q) / denom]


class RerankerScorer:
    """Any reranker scoring (question, sentence) pairs: each sentence is handed over as a one-sentence article.

    A pointwise reranker scores every sentence; any other reranker (an ensemble, a listwise LLM) ranks them
    and a sentence it leaves out scores ``-inf``.
    """

    name = "reranker"

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker

    def score(self, question: str, sentences: Sequence[str]) -> list[float]:
        if not sentences:
            return []
        articles = _pseudo_articles(sentences)
        pointwise = getattr(self.reranker, "score", None)
        if callable(pointwise):
            return [float(s) for s in pointwise(question, articles)]
        hits = [Hit(a.pmid, float(len(articles) - i), i + 1) for i, a in enumerate(articles)]
        ranked = self.reranker.rerank(question, hits, {a.pmid: a for a in articles}, len(hits))
        got = {h.pmid: float(h.score) for h in ranked}
        return [got.get(a.pmid, float("-inf")) for a in articles]


def _pseudo_articles(sentences: Sequence[str]) -> list[Article]:
    return [Article(str(PSEUDO_PMID_BASE + i), "", s) for i, s in enumerate(sentences)]


def snippet_text(article: Article, section: str, start: int, end: int) -> str:
    """``article.title[start:end]`` or ``article.abstract[start:end]``; raises on any other section name."""
    if section == "title":
        return article.title[start:end]
    if section == "abstract":
        return article.abstract[start:end]
    raise ValueError(f"unknown BioASQ section {section!r}: use 'title' or 'abstract'")


def offsets_exact(snippet: Snippet, article: Article) -> bool:
    """Whether a one-section snippet's text is exactly its section's text between its offsets."""
    return (snippet.begin_section == snippet.end_section and snippet.pmid == article.pmid
            and snippet_text(article, snippet.begin_section, snippet.begin_offset, snippet.end_offset)
            == snippet.text)


def to_snippet(span: SentenceSpan, score: float) -> Snippet:
    """The BioASQ snippet of one sentence span (one section, end exclusive)."""
    return Snippet(span.pmid, span.text, span.section, span.start, span.section, span.end, float(score))


@dataclass
class BioASQSnippets:
    """Phase A snippet selection (see the module docstring): ``select(question, hits, articles)``."""

    scorer: SentenceScorer
    documents: int = 10
    snippets: int = 10
    per_document: int = 2
    min_words: int = 4
    include_titles: bool = True
    splitter: str = "syntok"

    def __post_init__(self) -> None:
        if not 0 <= self.snippets <= 10:
            raise ConfigError(f"BioASQ allows at most 10 snippets per question, got {self.snippets}",
                              hint=set_line("bioasq.snippets", 10))
        if self.documents < 1 or self.per_document < 1:
            raise ConfigError(f"snippet documents ({self.documents}) and per_document ({self.per_document}) "
                              "must be at least 1")

    @classmethod
    def from_settings(cls, cfg: BioASQSettings, ctx: BuildContext) -> BioASQSnippets:
        """The selector ``settings.bioasq`` describes; its encoder or reranker is built by ``ctx``."""
        scorer: SentenceScorer
        if cfg.scorer == "tfidf":
            scorer = TfidfScorer()
        elif cfg.scorer == "embedding":
            scorer = EncoderScorer(ctx.encoder(cfg.encoder))
        else:
            rerank_cfg = cfg.reranker if cfg.reranker is not None else ctx.reranker_config()
            built = ctx.build("rerank", rerank_cfg)  # None for the 'none' reranker
            if built is None:
                raise ConfigError(
                    "the snippet scorer 'reranker' needs a reranker, and none is configured",
                    hint=f"set bioasq.reranker (e.g. {set_line('bioasq.reranker', 'cross-encoder:MODEL')}) or "
                    f"rerank.backend; or use {set_line('bioasq.scorer', 'embedding')}",
                )
            scorer = RerankerScorer(built)
        return cls(scorer, documents=cfg.snippet_documents, snippets=cfg.snippets, per_document=cfg.per_document,
                   min_words=cfg.min_words, include_titles=cfg.include_titles, splitter=cfg.splitter)

    def candidates(self, hits: Sequence[Hit], articles: Mapping[str, Article]) -> list[tuple[SentenceSpan, int]]:
        """(sentence, rank of its document) for the sentences of the top ``documents`` readable hits."""
        out: list[tuple[SentenceSpan, int]] = []
        rank = 0
        seen: set[str] = set()
        for hit in hits:
            article = articles.get(hit.pmid)
            if article is None or hit.pmid in seen:
                continue
            seen.add(hit.pmid)
            rank += 1
            for span in article_sentences(article, self.splitter):
                if span.section == "title" and not self.include_titles:
                    continue
                if len(span.text.split()) >= self.min_words:
                    out.append((span, rank))
            if rank >= self.documents:
                break
        return out

    def select(self, question: str, hits: Sequence[Hit], articles: Mapping[str, Article]) -> list[Snippet]:
        """At most ``snippets`` snippets, best score first (ties: better document, then earlier in it)."""
        cands = self.candidates(hits, articles)
        if not cands or self.snippets == 0:
            return []
        scores = self.scorer.score(question, [span.text for span, _ in cands])
        if len(scores) != len(cands):
            raise ValueError(f"{type(self.scorer).__name__} gave {len(scores)} scores for {len(cands)} sentences")
        order = sorted(range(len(cands)), key=lambda i: (-_finite(scores[i]), cands[i][1],
                                                          cands[i][0].section != "title", cands[i][0].start))
        chosen: list[Snippet] = []
        per_doc: dict[str, int] = {}
        for i in order:
            span = cands[i][0]
            if per_doc.get(span.pmid, 0) >= self.per_document:
                continue
            per_doc[span.pmid] = per_doc.get(span.pmid, 0) + 1
            chosen.append(to_snippet(span, scores[i]))
            if len(chosen) >= self.snippets:
                break
        return chosen


def _finite(value: float) -> float:
    return value if np.isfinite(value) else -1e300
