"""Answer sentences (evidence backend ``answer-sentences``): the abstract sentences a trained scorer expects to
answer the question, each an exact span of its article.

Candidates and features come from :mod:`.answer_features`; a LightGBM scorer (``models:medcite-answer``,
trained on BioASQ questions with each candidate's ROUGE-2 F1 to the ideal answer as label) scores them.
A sentence that, with its article's title, does not name the question's subject
(:func:`medcite.evidence.concepts.guard_words`: the drug, gene, disease or population it is about) is never
evidence (the topic guard). Sentences that mention a key concept of the question
(:func:`medcite.evidence.concepts.key_concepts`) are preferred: only when none does are the others used. The
best ones are taken by MMR (Carbonell & Goldstein 1998), at most ``per_doc`` from one article.

When a key concept of the question occurs in none of the retrieved articles (title or abstract, typos within a
difflib ratio of 0.85 forgiven), the corpus has nothing about it: the selector returns no evidence, and an
answer-first generator abstains instead of quoting sentences that merely share the question's common words.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..types import Article, Evidence, Hit, Query
from .answer_features import answer_candidates, answer_features, negated
from .base import EvidenceConfig
from .concepts import (
    _norm_tokens,
    corpus_lookup,
    guard_words,
    key_concepts,
    mentions,
    missing_concepts,
    on_topic,
    question_type,
)
from .tfidf_mmr import mmr

if TYPE_CHECKING:
    from ..context import BuildContext
    from .answer_features import AnswerCandidate
    from .answer_scorer import AnswerScorer

log = logging.getLogger(__name__)


class AnswerSentencesConfig(EvidenceConfig):
    """Abstract sentences ranked by a trained answer-sentence scorer, key concepts required; no LLM."""

    backend: Literal["answer-sentences"] = "answer-sentences"
    model: str = Field("models:medcite-answer", description="The answer-sentence scorer: models:NAME or a folder "
                       "(made by `medcite models build medcite-answer`).")
    max_items: int = Field(8, ge=1, description="Evidence sentences shown to the generator.")
    per_doc: int = Field(2, ge=1, description="Most evidence sentences taken from one document.")
    lam: float = Field(0.8, ge=0, le=1, description="MMR lambda: scorer score against redundancy.")
    abstain_on_missing: bool = Field(True, description="Return no evidence when a key concept of the question "
                                     "occurs in none of the retrieved articles (nor in the corpus, by `index`).")
    index: str | None = Field("bm25", description="The index searched for a key concept no retrieved article "
                              "mentions (None: the retrieved articles decide alone).")
    max_overlap: float = Field(0.6, ge=0, le=1, description="Most TF-IDF cosine of an evidence sentence to one "
                               "already chosen.")
    topic_guard: bool = Field(True, description="Keep only sentences that, with their article's title, name the "
                              "question's subject (medcite.evidence.concepts.subject): a study of nurses is no "
                              "evidence about survivors.")


@dataclass
class AnswerSentenceSelector:
    scorer: AnswerScorer | None
    name: str = "answer-sentences"
    docs: int = 10
    max_items: int = 8
    per_doc: int = 2
    lam: float = 0.8
    abstain_on_missing: bool = True
    max_overlap: float = 0.6
    topic_guard: bool = True
    in_corpus: Callable[[str], bool] | None = None
    last: dict[str, object] = field(default_factory=dict)  # what the last call found (concepts, missing)

    Config: ClassVar[type[AnswerSentencesConfig]] = AnswerSentencesConfig

    @classmethod
    def from_config(cls, cfg: AnswerSentencesConfig, ctx: BuildContext | None = None) -> AnswerSentenceSelector:
        from .answer_scorer import AnswerScorer, scorer_folder

        folder = scorer_folder(cfg.model)

        def load() -> AnswerScorer:
            return AnswerScorer.load(folder)

        scorer = load() if ctx is None else ctx.models.get(("answer-scorer", str(folder)), load)
        return cls(scorer, docs=cfg.docs, max_items=cfg.max_items, per_doc=cfg.per_doc, lam=cfg.lam,
                   abstain_on_missing=cfg.abstain_on_missing, max_overlap=cfg.max_overlap,
                   topic_guard=cfg.topic_guard, in_corpus=corpus_lookup(ctx, cfg.index))

    def scores(self, question: str, qtype: str, cands: Sequence[AnswerCandidate], concepts: Sequence[str]
               ) -> tuple[np.ndarray, np.ndarray]:
        x, sim = answer_features(question, qtype, cands, concepts)
        if self.scorer is None:  # no model: the question-similarity column alone (tests, ablations)
            from .answer_features import ANSWER_FEATURES

            return x[:, ANSWER_FEATURES.index("tfidf_question")].astype(np.float64), sim
        return self.scorer.score(x), sim

    def select(self, queries: Sequence[Query], hits: Sequence[Hit], articles: Mapping[str, Article]
               ) -> list[Evidence]:
        question = next((q.text for q in queries if "original" in q.stages), queries[0].text if queries else "")
        qtype = question_type(question)
        concepts = key_concepts(question)
        top = [articles[h.pmid] for h in hits[: self.docs] if h.pmid in articles]
        missing = missing_concepts(concepts, (a.text for a in top), self.in_corpus)
        self.last = {"question_type": qtype, "concepts": concepts, "missing": missing}
        if missing and self.abstain_on_missing:
            log.info("no retrieved article mentions %s: no evidence", ", ".join(missing))
            return []
        cands = answer_candidates(hits, articles, self.docs)
        if cands and self.topic_guard:
            about, every = guard_words(question)
            guarded = [c for c in cands if on_topic(about, c.text, articles[c.span.pmid].title, every=every)]
            self.last["subject"] = about
            self.last["off_topic_sentences"] = len(cands) - len(guarded)
            if not guarded:
                log.info("no retrieved sentence is about %s: no evidence", " ".join(about))
            cands = guarded
        if not cands:
            return []
        scores, sim = self.scores(question, qtype, cands, concepts)
        if concepts:
            naming = [any(mentions(c, _norm_tokens(x.text)) for c in concepts) for x in cands]
            if any(naming):  # sentences naming none of the key concepts only when none names one
                scores = np.where(naming, scores, scores.min() - 1.0)
                keep = [i for i, ok in enumerate(naming) if ok]
            else:
                keep = list(range(len(cands)))
        else:
            keep = list(range(len(cands)))
        # near-copies across documents (overlapping snippets, repeated findings) never both reach the answer; a
        # sentence that negates a chosen one is no copy of it
        allowed: list[int] = []
        for i in sorted(keep, key=lambda j: -scores[j]):
            if all(sim[i, j] <= self.max_overlap or negated(cands[i].text) != negated(cands[j].text)
                   for j in allowed):
                allowed.append(i)
        keep = sorted(allowed)
        sub = sim[np.ix_(keep, keep)]
        order = mmr([float(scores[i]) for i in keep], sub, self.max_items, self.lam,
                    groups=[cands[i].span.pmid for i in keep], per_group=self.per_doc)
        out = []
        for n, o in enumerate(order):
            c = cands[keep[o]]
            out.append(Evidence(index=n + 1, pmid=c.span.pmid, text=c.span.text, section=c.span.section,
                                start=c.span.start, end=c.span.end, score=float(scores[keep[o]]), kind="snippet",
                                branches=c.hit.branches))
        return out
