"""Grounding one sentence with citations: retrieve for it, judge each candidate's stance, keep the clearest.

TREC BioGen 2025 Task A (and the answer-first flow of Dalhousie 2025): the sentence is the question of a
topic run through the preset's retrieval (its query set — e.g. the sentence and its rule-based negation
(``negation``) or LLM rewrites — branches, fusion and reranker); the best ``ground.candidates`` abstracts
not already cited are judged by the stance stage; at most ``max_supported`` abstracts judged *supports*
with P(supports) >= ``min_support`` are kept as supporting citations, and at most ``max_contradicted``
judged *contradicts* with P(contradicts) >= ``min_contradict`` as contradicting ones, each list in the
retrieval's order (``order=retrieval``: the ranking is the stronger relevance signal, the stance a filter) or
by decreasing probability (``order=stance``). A threshold leaves fewer citations rather than weak ones.
``anchor`` N: the first N candidates count as supporting whatever the stance (recorded as ``anchored``), for
a stance model that is a weaker signal than the top of the ranking (measured in bench_task_a.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..config import GroundSettings
from ..corpus.store import DocumentStore
from ..types import Article, Hit, Query, Stance, StanceVerdict, Topic
from .retrieval import RetrievalPipeline


@dataclass
class SentenceGrounding:
    """What grounding found for one sentence (everything the run directory records)."""

    text: str
    queries: list[Query]
    candidates: list[Hit]
    verdicts: dict[str, StanceVerdict]
    supported: list[str] = field(default_factory=list)
    contradicted: list[str] = field(default_factory=list)
    anchored: list[str] = field(default_factory=list)
    articles: dict[str, Article] = field(default_factory=dict)
    rankings: dict[str, list[Hit]] = field(default_factory=dict)


def choose(verdicts: dict[str, StanceVerdict], label: Stance, floor: float, most: int,
           ranking: Sequence[str] | None = None) -> list[str]:
    """PMIDs judged ``label`` with probability >= ``floor``, at most ``most``: in ``ranking`` order (the
    retrieval's) when given, else most probable first."""
    ok = {p for p, v in verdicts.items() if v.label is label and v.score(label) >= floor}
    if ranking is not None:
        return [p for p in ranking if p in ok][:most]
    return sorted(ok, key=lambda p: (-verdicts[p].score(label), p))[:most]


class Grounder:
    """Finds supporting and contradicting abstracts for sentences (see the module docstring)."""

    def __init__(self, retrieval: RetrievalPipeline, stance: object, store: DocumentStore,
                 settings: GroundSettings) -> None:
        self.retrieval = retrieval
        self.stance = stance
        self.store = store
        self.settings = settings

    def ground(self, sentences: Sequence[str], *, question: str | None = None,
               exclude: Sequence[Iterable[str]] = (), topic_id: str = "s") -> list[SentenceGrounding]:
        """Ground each sentence; ``exclude[i]`` are PMIDs sentence i already cites (never proposed again)."""
        cfg = self.settings
        found: list[SentenceGrounding] = []
        pairs: list[tuple[str, Article]] = []
        owners: list[tuple[int, str]] = []
        for i, text in enumerate(sentences):
            skip = set(exclude[i]) if i < len(exclude) else set()
            retrieved = self.retrieval.retrieve(Topic(f"{topic_id}-{i}", text, topic=question))
            cands = [h for h in retrieved.final if h.pmid not in skip][: cfg.candidates]
            articles = self.store.get_many([h.pmid for h in cands])
            cands = [h for h in cands if h.pmid in articles]
            found.append(SentenceGrounding(text, retrieved.queries, cands, {}, articles=articles,
                                           rankings=retrieved.rankings))
            for h in cands:
                pairs.append((text, articles[h.pmid]))
                owners.append((i, h.pmid))
        verdicts = self.stance.classify_articles(pairs) if pairs else []  # type: ignore[attr-defined]
        for (i, pmid), verdict in zip(owners, verdicts, strict=True):
            found[i].verdicts[pmid] = verdict
        for g in found:
            g.anchored = [h.pmid for h in g.candidates[: min(cfg.anchor, cfg.max_supported)]]
            rest = {p: v for p, v in g.verdicts.items() if p not in g.anchored}
            ranking = [h.pmid for h in g.candidates] if cfg.order == "retrieval" else None
            g.supported = g.anchored + choose(rest, Stance.SUPPORTS, cfg.min_support,
                                              cfg.max_supported - len(g.anchored), ranking)
            g.contradicted = choose(rest, Stance.CONTRADICTS, cfg.min_contradict, cfg.max_contradicted, ranking)
        return found
