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

The top ``always_read`` articles of the ranking are always read: each gives the evidence its best sentence
unless none can be used, and the reason is then recorded (``last["read"]``, written to ``evidence.jsonl`` and
shown by the viewer): no quotable sentence, off topic (names none of the subject), or a repeat of a sentence
already chosen. An article among them whose title or abstract names the question's subject, or most of what the
question says (``cover_whole`` of its content words, weighted by rarity), is on topic as a whole: its sentences
need not repeat the subject's name (the topic guard reads such an article whole). For a
yes/no question the guard also weighs what the question asks of its subject (the predicate: "caused by
disruption of nuclear architecture"): sentences that name less than half as much of it as the best candidate
does are left out, so one shared word is not enough.
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
    ALTERNATIVES,
    _norm_tokens,
    content_words,
    corpus_lookup,
    coverage,
    guard_words,
    key_concepts,
    key_entity,
    mentions,
    missing_concepts,
    on_topic,
    predicate_words,
    question_type,
    rarity_coverage,
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
    always_read: int = Field(3, ge=0, description="The top this many retrieved articles each give the evidence "
                             "their best usable on-topic sentence; an article that cannot is recorded with the "
                             "reason (evidence.jsonl 'read').")
    predicate_guard: float = Field(0.5, ge=0, le=1, description="Yes/no questions: a sentence (with its title) must "
                                   "name at least this share of the predicate words the best candidate names (0: "
                                   "off).")
    cover_whole: float = Field(0.6, ge=0, le=1.01, description="An article among the `always_read` top ones "
                               "whose title and abstract name this share of the question's content words (each "
                               "weighted by its rarity in English) is on topic as a whole, though it misses the "
                               "subject's exact words (a question written as a title: 'psychomotor deficits' for "
                               "an abstract on 'motor function'); above 1: never. 0.6 chosen on the tune half of "
                               "the held-back PubMedQA items (false abstention 0.078 -> 0.039, verdicts unchanged; "
                               "0.7: 0.052).")


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
    always_read: int = 3
    predicate_guard: float = 0.5
    cover_whole: float = 0.6
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
                   topic_guard=cfg.topic_guard, always_read=cfg.always_read, predicate_guard=cfg.predicate_guard,
                   cover_whole=cfg.cover_whole, in_corpus=corpus_lookup(ctx, cfg.index))

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
        first = [h.pmid for h in hits if h.pmid in articles][: self.always_read]
        missing = missing_concepts(concepts, (a.text for a in top), self.in_corpus)
        entity = key_entity(question)
        # one of the top articles names the question's key entity: the corpus holds something on it, never no
        # evidence for a concept that only a wording of the question adds
        anchored = [p for p in first if entity and all(mentions(w, _norm_tokens(articles[p].text)) for w in entity)]
        self.last = {"question_type": qtype, "concepts": concepts, "missing": missing, "key_entity": entity,
                     "anchored": anchored}
        reasons: dict[str, str] = {}
        if missing and self.abstain_on_missing and not anchored:
            log.info("no retrieved article mentions %s: no evidence", ", ".join(missing))
            self.last["read"] = _read(first, {}, {p: f"names none of {', '.join(missing)}" for p in first})
            return []
        cands = answer_candidates(hits, articles, self.docs)
        with_sentence = {c.span.pmid for c in cands}
        reasons |= {p: "no quotable sentence (each is cut, a heading, a reference or too short)" for p in first
                    if p not in with_sentence}
        if cands and self.topic_guard:
            cands = self._on_topic(question, qtype, cands, articles, first, anchored, reasons)
        if not cands:
            self.last["read"] = _read(first, {}, reasons)
            return []
        scores, sim = self.scores(question, qtype, cands, concepts)
        scores, keep = self._naming(concepts, cands, scores, first)
        keep, copy_of = self._distinct(keep, cands, scores, sim)
        sub = sim[np.ix_(keep, keep)]
        order = [keep[o] for o in mmr([float(scores[i]) for i in keep], sub, self.max_items, self.lam,
                                      groups=[cands[i].span.pmid for i in keep], per_group=self.per_doc)]
        order = self._with_first(order, keep, cands, scores, first)
        _why_not_chosen(first, order, keep, cands, copy_of, reasons)
        out = []
        for n, i in enumerate(order):
            c = cands[i]
            out.append(Evidence(index=n + 1, pmid=c.span.pmid, text=c.span.text, section=c.span.section,
                                start=c.span.start, end=c.span.end, score=float(scores[i]), kind="snippet",
                                branches=c.hit.branches))
        self.last["read"] = _read(first, {e.pmid: e.index for e in out}, reasons)
        return out

    def _on_topic(self, question: str, qtype: str, cands: list[AnswerCandidate], articles: Mapping[str, Article],
                  first: Sequence[str], anchored: Sequence[str], reasons: dict[str, str]) -> list[AnswerCandidate]:
        """The candidates about the question's subject (their article's title or text, or the sentence, names
        it), and for a yes/no question those that also name enough of what it asks; ``reasons`` says why each of
        the ``first`` articles lost its sentences."""
        with_sentence = {c.span.pmid for c in cands}
        about, every = guard_words(question)
        whole = {p for p in first if on_topic(about, articles[p].title, articles[p].text, every=every)
                 or p in anchored}
        # those that miss the subject's exact words but name most of what the question says
        said = content_words(question)
        covering = [p for p in first if p not in whole
                    and rarity_coverage(said, f"{articles[p].title} {articles[p].text}") >= self.cover_whole]
        whole |= set(covering)
        self.last["covering"] = covering
        guarded = [c for c in cands if c.span.pmid in whole or
                   on_topic(about, c.text, articles[c.span.pmid].title, every=every)]
        self.last["subject"] = about
        self.last["off_topic_sentences"] = len(cands) - len(guarded)
        kept_docs = {c.span.pmid for c in guarded}
        reasons |= {p: f"off topic: neither its title nor its sentences name {_words(about)}" for p in first
                    if p in with_sentence and p not in kept_docs}
        if guarded and qtype == "yesno" and self.predicate_guard > 0:
            asks = predicate_words(question)
            cover = [coverage(asks, c.text + " " + articles[c.span.pmid].title) for c in guarded]
            best = max(cover)
            if best > 0:
                asked = [c for c, v in zip(guarded, cover, strict=True) if v >= self.predicate_guard * best]
                kept_asked = {c.span.pmid for c in asked}
                reasons |= {p: f"off topic: names {_words(about)} but little of what the question asks "
                               f"({_words(asks)})" for p in kept_docs & set(first) if p not in kept_asked}
                self.last["off_predicate_sentences"] = len(guarded) - len(asked)
                guarded = asked
        if not guarded:
            log.info("no retrieved sentence is about %s: no evidence", " ".join(about))
        return guarded

    @staticmethod
    def _naming(concepts: Sequence[str], cands: Sequence[AnswerCandidate], scores: np.ndarray,
                first: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """The scores with the sentences that name none of the key concepts put last (when some sentence names
        one), and the candidates kept: those naming a concept, plus every top article's best sentence."""
        keep = list(range(len(cands)))
        if concepts:
            naming = [any(mentions(c, _norm_tokens(x.text)) for c in concepts) for x in cands]
            if any(naming):  # sentences naming none of the key concepts only when none names one
                scores = np.where(naming, scores, scores.min() - 1.0)
                keep = [i for i, ok in enumerate(naming) if ok]
        # every top article's best sentence stays a candidate, whether or not it names a key concept itself
        for p in first:
            mine = [i for i, c in enumerate(cands) if c.span.pmid == p]
            if mine and not set(mine) & set(keep):
                keep.append(max(mine, key=lambda i: scores[i]))
        return scores, keep

    def _distinct(self, keep: Sequence[int], cands: Sequence[AnswerCandidate], scores: np.ndarray,
                  sim: np.ndarray) -> tuple[list[int], dict[int, int]]:
        """``keep`` without near-copies across documents (overlapping snippets, repeated findings), best first
        kept, in index order, and which kept sentence each dropped one copies. A sentence that negates a
        chosen one is no copy of it."""
        allowed: list[int] = []
        copy_of: dict[int, int] = {}
        for i in sorted(keep, key=lambda j: -scores[j]):
            same = next((j for j in allowed if sim[i, j] > self.max_overlap
                         and negated(cands[i].text) == negated(cands[j].text)), None)
            if same is None:
                allowed.append(i)
            else:
                copy_of[i] = same
        return sorted(allowed), copy_of

    def _with_first(self, order: list[int], keep: list[int], cands: Sequence[AnswerCandidate], scores: np.ndarray,
                    first: Sequence[str]) -> list[int]:
        """``order`` with the best kept sentence of each of the ``first`` articles it lacks, in place of the
        lowest-scored sentences of other articles when the evidence is full."""
        order = list(order)
        for p in first:
            if any(cands[i].span.pmid == p for i in order):
                continue
            mine = [i for i in keep if cands[i].span.pmid == p]
            if not mine:
                continue
            best = max(mine, key=lambda i: scores[i])
            if len(order) >= self.max_items:
                others = [i for i in order if cands[i].span.pmid not in first]
                if not others:
                    continue
                order.remove(min(others, key=lambda i: scores[i]))
            at = next((k for k, i in enumerate(order) if scores[i] < scores[best]), len(order))
            order.insert(at, best)  # in its place by score; the others keep the MMR order
        return order


def _words(words: Sequence[str]) -> str:
    return ", ".join(f"'{w.split(ALTERNATIVES)[0]}'" for w in words) or "its subject"


def _read(first: Sequence[str], used: Mapping[str, int], reasons: Mapping[str, str]) -> list[dict[str, object]]:
    """What became of each of the top articles: evidence (its first item) or rejected, and why."""
    out: list[dict[str, object]] = []
    for rank, p in enumerate(first, start=1):
        if p in used:
            out.append({"pmid": p, "rank": rank, "status": "evidence", "evidence": used[p]})
        else:
            out.append({"pmid": p, "rank": rank, "status": "rejected",
                        "reason": reasons.get(p, "not read: no evidence was chosen")})
    return out


def _why_not_chosen(first: Sequence[str], order: Sequence[int], keep: Sequence[int],
                    cands: Sequence[AnswerCandidate], copy_of: Mapping[int, int], reasons: dict[str, str]) -> None:
    """Add to ``reasons`` why each of the ``first`` articles with no reason yet has no chosen sentence."""
    chosen = {cands[i].span.pmid for i in order}
    for p in first:
        if p in chosen or p in reasons:
            continue
        mine = [i for i, c in enumerate(cands) if c.span.pmid == p]
        dup = [copy_of[i] for i in mine if i in copy_of]
        reasons[p] = (f"repeats a sentence of PMID {cands[dup[0]].span.pmid} already chosen" if dup and not
                      [i for i in mine if i in keep] else "its sentences scored below the evidence chosen")
