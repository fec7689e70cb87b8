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

CLaC 2024 (Systems 1 and 2, §2.2) adds three settings. ``contradict_from=question``: contradicting citations are
looked for among other candidates than the sentence's -- the question and its LLM decomposition
(``contradict_queries``) are searched, reranked against the question, and the best ``contradict_candidates`` are
the question's contradiction candidates (retrieved once per question). ``contradict_filter`` (System 2): an NLI
model compares every sentence of each contradiction candidate with the answer sentence, and only an abstract with
a sentence judged contradicting it stays a candidate -- a filter before the judge, not a judge. ``judge=listwise``:
the LLM picks the citations from the lists (:class:`medcite.generate.listwise.ListwiseCitations`, Appendix A)
instead of the stance stage judging each pair; every candidate it was shown is recorded as read, the picked ones
with a one-hot verdict.

Dalhousie 2025 (§III-A1) searches one rewrite per stance and checks that what each found "truly align[s] with the
intended stance". ``candidate_lists=per_side``: the supporting citations are chosen among what the support rewrite
found and the contradicting ones among what the contradict rewrite found, each in its own FAISS order ("we retain
the first three according to the FAISS similarity ranking, since earlier results are more likely to be relevant to
the rewritten query"); ``fused`` (the default) takes both kinds from the one fused ranking.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import GroundSettings
from ..corpus.store import DocumentStore
from ..evidence.sentences import article_sentences
from ..retrieve.base import QuerySet
from ..retrieve.fusion import rrf
from ..types import Article, Hit, Query, Stance, StanceVerdict, Topic
from .retrieval import RetrievalPipeline, Retrieved

log = logging.getLogger(__name__)


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
    #: the contradiction candidates (``contradict_from=question``: the question's; else the sentence's), in order
    contradiction_candidates: list[str] = field(default_factory=list)
    #: the contradiction candidates ``contradict_filter`` let through (None: no filter ran)
    filtered: list[str] | None = None
    #: ``contradict_from=question``: the queries the question was searched with (it and its decomposition)
    contradiction_queries: list[Query] = field(default_factory=list)


def choose(verdicts: dict[str, StanceVerdict], label: Stance, floor: float, most: int,
           ranking: Sequence[str] | None = None) -> list[str]:
    """PMIDs judged ``label`` with probability >= ``floor``, at most ``most``: in ``ranking`` order (the
    retrieval's) when given, else most probable first."""
    ok = {p for p, v in verdicts.items() if v.label is label and v.score(label) >= floor}
    if ranking is not None:
        return [p for p in ranking if p in ok][:most]
    return sorted(ok, key=lambda p: (-verdicts[p].score(label), p))[:most]


def side_ranking(retrieved: Retrieved, side: str) -> list[Hit] | None:
    """What the queries of stage ``side`` (``support`` / ``contradict``) found, in their own search's order (RRF
    when several searched); None when the query set has no such query."""
    ids = {q.id for q in retrieved.queries if side in q.stages}
    runs = [hits for name, hits in retrieved.runs.items() if name.split("/", 1)[-1] in ids]
    if not ids:
        return None
    return list(runs[0]) if len(runs) == 1 else rrf(runs)


def one_hot(label: Stance) -> StanceVerdict:
    """A listwise pick as a verdict: the label with probability 1, the whole abstract as its span."""
    scores = tuple((s.value, 1.0 if s is label else 0.0) for s in (Stance.SUPPORTS, Stance.CONTRADICTS, Stance.NEUTRAL))
    return StanceVerdict(label, scores, None, None, "abstract")


class Grounder:
    """Finds supporting and contradicting abstracts for sentences (see the module docstring)."""

    def __init__(self, retrieval: RetrievalPipeline, stance: object, store: DocumentStore,
                 settings: GroundSettings, *, listwise: Any = None, contradict_queries: QuerySet | None = None,
                 contradict_filter: Any = None) -> None:
        self.retrieval = retrieval
        self.stance = stance
        self.store = store
        self.settings = settings
        self.listwise = listwise
        self.contradict_queries = contradict_queries
        self.contradict_filter = contradict_filter
        if settings.judge == "listwise" and listwise is None:
            raise ValueError("ground.judge is 'listwise' but no listwise judge was given")
        if settings.contradict_from == "question" and contradict_queries is None:
            raise ValueError("ground.contradict_from is 'question' but no query set for the question was given")
        if settings.contradict_filter is not None and contradict_filter is None:
            raise ValueError("ground.contradict_filter is set but no filter backend was given")

    @classmethod
    def from_context(cls, retrieval: RetrievalPipeline, stance: object, store: DocumentStore,
                     settings: GroundSettings, context: Any) -> Grounder:
        """The grounder with what ``settings`` name built through the pipeline's context: the listwise judge's
        LLM, the question's query set and the contradiction filter."""
        listwise = contradict_queries = contradict_filter = None
        if settings.judge == "listwise":
            from ..generate.listwise import ListwiseCitations

            listwise = ListwiseCitations(context.llm(settings.llm, purpose="ground.judge 'listwise'"),
                                         support_prompt=settings.support_prompt,
                                         contradict_prompt=settings.contradict_prompt)
        if settings.contradict_from == "question":
            contradict_queries = QuerySet([context.build("querygen", q) for q in settings.contradict_queries])
        if settings.contradict_filter is not None:
            contradict_filter = context.build("stance", settings.contradict_filter)
        return cls(retrieval, stance, store, settings, listwise=listwise, contradict_queries=contradict_queries,
                   contradict_filter=contradict_filter)

    def question_candidates(self, question: str, topic_id: str) -> tuple[list[Query], list[Hit]]:
        """CLaC 2024's contradiction candidates: the question and its decomposition searched, reranked against the
        question, the best ``contradict_candidates`` (and the queries searched)."""
        got = self.retrieval.retrieve(Topic(f"{topic_id}-question", question), query_set=self.contradict_queries,
                                      keep=self.settings.contradict_candidates)
        return got.queries, got.final

    def nli_filter(self, sentence: str, articles: Sequence[Article]) -> list[str]:
        """The PMIDs of ``articles`` with at least one sentence (title or abstract) that the filter judges to
        contradict ``sentence``: every sentence is compared with it (CLaC 2024 System 2, §2.2)."""
        pairs: list[tuple[str, str]] = []
        owners: list[str] = []
        for a in articles:
            for s in article_sentences(a):
                pairs.append((sentence, s.text))
                owners.append(a.pmid)
        verdicts = self.contradict_filter.classify(pairs) if pairs else []
        hit = {p for p, v in zip(owners, verdicts, strict=True) if v.label is Stance.CONTRADICTS}
        return [a.pmid for a in articles if a.pmid in hit]

    def ground(self, sentences: Sequence[str], *, question: str | None = None,
               exclude: Sequence[Iterable[str]] = (), topic_id: str = "s") -> list[SentenceGrounding]:
        """Ground each sentence; ``exclude[i]`` are PMIDs sentence i already cites (never proposed again)."""
        cfg = self.settings
        found: list[SentenceGrounding] = []
        by_question = self.contradict_queries is not None and bool(question and question.strip())
        asked_queries, asked = self.question_candidates(question or "", topic_id) if by_question else ([], [])
        asked_articles = self.store.get_many([h.pmid for h in asked]) if asked else {}
        for i, text in enumerate(sentences):
            skip = set(exclude[i]) if i < len(exclude) else set()
            retrieved = self.retrieval.retrieve(Topic(f"{topic_id}-{i}", text, topic=question))
            own, other = self._lists(retrieved)
            cands = [h for h in own if h.pmid not in skip][: cfg.candidates]
            others = [h for h in other if h.pmid not in skip][: cfg.candidates] if other is not None else []
            articles = self.store.get_many(list(dict.fromkeys(h.pmid for h in [*cands, *others])))
            cands = [h for h in cands if h.pmid in articles]
            g = SentenceGrounding(text, retrieved.queries, cands, {}, articles=articles, rankings=retrieved.rankings)
            if by_question:
                g.contradiction_candidates = [h.pmid for h in asked if h.pmid in asked_articles and h.pmid not in skip]
                g.contradiction_queries = list(asked_queries)
                g.articles.update({p: asked_articles[p] for p in g.contradiction_candidates})
                if asked:
                    g.rankings = {**g.rankings, "contradiction": asked}
            elif other is not None:
                g.contradiction_candidates = [h.pmid for h in others if h.pmid in articles]
            else:
                g.contradiction_candidates = [h.pmid for h in cands]
            if self.contradict_filter is not None:
                g.filtered = self.nli_filter(text, [g.articles[p] for p in g.contradiction_candidates])
            found.append(g)
        if self.listwise is not None:
            self._pick(found, question or "")
        else:
            self._judge(found)
        return found

    def _lists(self, retrieved: Retrieved) -> tuple[list[Hit], list[Hit] | None]:
        """The supporting citations' candidate ranking and, for ``candidate_lists=per_side``, the contradicting
        ones' (None: the same list)."""
        if self.settings.candidate_lists == "fused":
            return list(retrieved.final), None
        cfg = self.settings
        found = {side: side_ranking(retrieved, side) for side in ("support", "contradict")}
        wanted = {"support": cfg.max_supported > 0,
                  "contradict": cfg.max_contradicted > 0 and cfg.contradict_from == "sentence"}
        missing = [side for side, hits in found.items() if hits is None and wanted[side]]
        if missing:
            log.warning("topic %s: the query set has no %s query: those citations come from the fused ranking",
                        retrieved.topic.id, " or ".join(missing))
        support, contradict = found["support"], found["contradict"]
        return (list(retrieved.final) if support is None else support,
                list(retrieved.final) if contradict is None else contradict)

    def _contradiction_pool(self, g: SentenceGrounding) -> list[str]:
        return g.filtered if g.filtered is not None else g.contradiction_candidates

    def _pick(self, found: Sequence[SentenceGrounding], question: str) -> None:
        """``judge=listwise``: the LLM picks from each list; every candidate it was shown is recorded as read."""
        cfg = self.settings
        for g in found:
            shown = [g.articles[h.pmid] for h in g.candidates]
            g.supported = self.listwise.support(g.text, shown, cfg.max_supported)
            pool = [p for p in self._contradiction_pool(g) if p not in g.supported]
            g.contradicted = self.listwise.contradict(question, g.text, [g.articles[p] for p in pool],
                                                      cfg.max_contradicted)
            for pmid in [h.pmid for h in g.candidates] + pool:
                label = Stance.SUPPORTS if pmid in g.supported else (
                    Stance.CONTRADICTS if pmid in g.contradicted else Stance.NEUTRAL)
                g.verdicts[pmid] = one_hot(label)

    def _judge(self, found: Sequence[SentenceGrounding]) -> None:
        """``judge=stance``: the stance stage judges every (sentence, candidate) pair; thresholds choose."""
        cfg = self.settings
        pairs: list[tuple[str, Article]] = []
        owners: list[tuple[int, str]] = []
        for i, g in enumerate(found):
            for pmid in dict.fromkeys([h.pmid for h in g.candidates] + self._contradiction_pool(g)):
                pairs.append((g.text, g.articles[pmid]))
                owners.append((i, pmid))
        verdicts = self.stance.classify_articles(pairs) if pairs else []  # type: ignore[attr-defined]
        for (i, pmid), verdict in zip(owners, verdicts, strict=True):
            found[i].verdicts[pmid] = verdict
        for g in found:
            g.anchored = [h.pmid for h in g.candidates[: min(cfg.anchor, cfg.max_supported)]]
            own = [h.pmid for h in g.candidates]
            rest = {p: g.verdicts[p] for p in own if p not in g.anchored}
            g.supported = g.anchored + choose(rest, Stance.SUPPORTS, cfg.min_support, cfg.max_supported
                                              - len(g.anchored), own if cfg.order == "retrieval" else None)
            pool = [p for p in self._contradiction_pool(g) if p not in g.anchored and p not in g.supported]
            g.contradicted = choose({p: g.verdicts[p] for p in pool}, Stance.CONTRADICTS, cfg.min_contradict,
                                    cfg.max_contradicted, pool if cfg.order == "retrieval" else None)
