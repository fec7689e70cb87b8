"""Post-hoc citation of uncited sentences (CLaC 2024 "simpleqa"), restricted to what a sentence was written from.

CLaC 2024 attached evidence to each sentence of an uncited LLM answer by similarity. Lexical similarity
cannot tell a finding from its negation ("Vitamin D prevented hip fractures" and "... did not prevent hip
fractures" share every content word), so medcite cites at most one item per sentence: the most similar
one (TF-IDF cosine at least ``threshold``) whose negation polarity agrees with the sentence's
(:func:`negated`). A sentence no item reaches stays uncited and is dropped by the post-processor. More
citations per sentence need a stance check of each (sentence, abstract) pair: :func:`attribute_judged`
(CLaC 2024's LLM support prompt) makes it with a stance backend.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from ..types import Article, Evidence, Hit, Stance, StanceVerdict
from .citations import DraftSentence

# negation cues of clinical text (NegEx-style triggers, Chapman et al. 2001), matched as whole words
_NEGATION = re.compile(
    r"\b(?:no|not|never|none|neither|nor|without|cannot|can't|didn't|doesn't|don't|isn't|wasn't|weren't|"
    r"aren't|won't|failed to|fail to|fails to|lack of|lacked|absence of|absent|ineffective|"
    r"insignificant|non-significant|nonsignificant|unchanged|did not differ|no longer)\b",
    re.IGNORECASE,
)


def negated(text: str) -> bool:
    """Whether ``text`` contains a negation cue (a polarity signal, not a parse of its scope)."""
    return _NEGATION.search(text) is not None


def attribute(sentences: Sequence[str], evidence: Sequence[Evidence], *, threshold: float = 0.1) -> list[DraftSentence]:
    """Each sentence with the one evidence item it was most plausibly written from, or with none."""
    from ..evidence.tfidf_mmr import tfidf_vectors

    if not sentences:
        return []
    if not evidence:
        return [DraftSentence(s) for s in sentences]
    try:
        sent_vecs, ev_vecs = tfidf_vectors(list(sentences), [e.text for e in evidence])
    except ValueError:  # nothing but stop words
        return [DraftSentence(s) for s in sentences]
    sims = (sent_vecs @ ev_vecs.T).toarray()  # type: ignore[attr-defined]
    polarity = [negated(e.text) for e in evidence]
    drafts = []
    for row, text in zip(sims, sentences, strict=True):
        negative = negated(text)
        chosen: list[int] = []
        for j in sorted(range(len(evidence)), key=lambda j: (-row[j], j)):
            if row[j] < threshold:
                break
            if polarity[j] == negative:
                chosen.append(evidence[j].index)
                break
        drafts.append(DraftSentence(text, chosen))
    return drafts


class Shortlister(Protocol):
    """Picks a sentence's candidate evidence items: ``shortlist(sentence, items, n)`` -> positions in ``items``."""

    def shortlist(self, sentence: str, evidence: Sequence[Evidence], n: int) -> list[int]: ...


class RerankShortlist:
    """A rerank-stage backend as a :class:`Shortlister` (CLaC 2024: System 1's ColBERT reranks the documents
    against the answer sentence and the top 10 are judged): each evidence item is a document of its text."""

    def __init__(self, reranker: Any) -> None:
        self.reranker = reranker

    def shortlist(self, sentence: str, evidence: Sequence[Evidence], n: int) -> list[int]:
        keys = [str(j) for j in range(len(evidence))]  # positions: two items may share a PMID
        docs = {k: Article(k, "", e.text) for k, e in zip(keys, evidence, strict=True)}
        hits = [Hit(k, 0.0, r) for r, k in enumerate(keys, 1)]
        return [int(h.pmid) for h in self.reranker.rerank(sentence, hits, docs, n)][:n]


class ListwisePicker(Protocol):
    """Picks a sentence's supporting documents from a list in one call (CLaC 2024 System 1's support prompt,
    :class:`medcite.generate.listwise.ListwiseCitations`): PMIDs among ``articles``, at most ``limit``."""

    def support(self, sentence: str, articles: Sequence[Article], limit: int = 3) -> list[str]: ...


class SupportJudge(Protocol):
    """What judged attribution needs from a stance backend (medcite.attribute): ``classify((claim, text))``."""

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[StanceVerdict]: ...


def attribute_judged(sentences: Sequence[str], evidence: Sequence[Evidence], judge: SupportJudge, *,
                     candidates: int = 5, max_citations: int = 3,
                     shortlist: Shortlister | None = None) -> list[DraftSentence]:
    """CLaC 2024's post-hoc citation with an LLM support prompt: each sentence's ``candidates`` best evidence
    items (only the items the generator read; by ``shortlist`` -- CLaC 2024's ColBERT against the sentence -- or
    else TF-IDF cosine) are judged by ``judge``; the ones judged to support it are cited, best first, at most
    ``max_citations``. One batch of judgements."""
    if not sentences or not evidence:
        return [DraftSentence(s) for s in sentences]
    shortlists = _shortlists(sentences, evidence, candidates, shortlist)
    pairs = [(s, evidence[j].text) for s, short in zip(sentences, shortlists, strict=True) for j in short]
    verdicts = iter(judge.classify(pairs)) if pairs else iter(())
    drafts = []
    for text, short in zip(sentences, shortlists, strict=True):
        supported = [evidence[j].index for j in short if next(verdicts).label is Stance.SUPPORTS]
        drafts.append(DraftSentence(text, supported[:max_citations]))
    return drafts


def _shortlists(sentences: Sequence[str], evidence: Sequence[Evidence], n: int,
                shortlist: Shortlister | None) -> list[list[int]]:
    """Each sentence's ``n`` candidate evidence positions: by ``shortlist`` when given, else by TF-IDF."""
    if shortlist is not None:
        return [shortlist.shortlist(s, evidence, n) for s in sentences]
    return _tfidf_shortlists(sentences, evidence, n)


def _tfidf_shortlists(sentences: Sequence[str], evidence: Sequence[Evidence], n: int) -> list[list[int]]:
    """Each sentence's ``n`` evidence positions of highest TF-IDF cosine (ties: block order)."""
    from ..evidence.tfidf_mmr import tfidf_vectors

    try:
        sent_vecs, ev_vecs = tfidf_vectors(list(sentences), [e.text for e in evidence])
        sims = (sent_vecs @ ev_vecs.T).toarray()  # type: ignore[attr-defined]
    except ValueError:  # nothing but stop words: every item is a candidate, in block order
        sims = [[0.0] * len(evidence) for _ in sentences]
    return [sorted(range(len(evidence)), key=lambda j: (-row[j], j))[:n] for row in sims]


def attribute_listwise(sentences: Sequence[str], evidence: Sequence[Evidence], picker: ListwisePicker, *,
                       candidates: int = 10, max_citations: int = 3,
                       shortlist: Shortlister | None = None) -> list[DraftSentence]:
    """CLaC 2024's post-hoc citation as System 1 selects citations (§3.2: "citation selection remain[s]
    unchanged"): each sentence's ``candidates`` best evidence items (``shortlist``, else TF-IDF) are shown to the
    LLM in one call, which names at most ``max_citations`` supporting PMIDs; each named PMID cites its first
    shortlisted item. Only the items the generator read can be shown, so only they can be cited."""
    if not sentences or not evidence:
        return [DraftSentence(s) for s in sentences]
    shortlists = _shortlists(sentences, evidence, candidates, shortlist)
    drafts = []
    for text, short in zip(sentences, shortlists, strict=True):
        first: dict[str, int] = {}
        for j in short:
            first.setdefault(evidence[j].pmid, j)
        shown = [Article(pmid, "", evidence[j].text) for pmid, j in first.items()]
        chosen = picker.support(text, shown, max_citations)
        drafts.append(DraftSentence(text, [evidence[first[p]].index for p in chosen if p in first][:max_citations]))
    return drafts
