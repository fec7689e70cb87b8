"""Cheap per-candidate features for learning to rank (:mod:`medcite.rerank.ltr`).

Each feature costs microseconds to a millisecond per candidate: no model reads a (query, document) pair.
They come in groups, so a model can be trained on some groups and an ablation can drop one at a time:

- ``first_stage``: the fused first-stage score and rank, and which branches (bm25 / dense / others) found it.
- ``bm25``: BM25 (Robertson et al. 1994; k1 = 1.2, b = 0.75) of the title, the abstract and both, computed
  here over the candidates' analysed text with the sparse index's document frequencies; and the sparse
  index's own BM25 score and rank of the question over the whole store (top ``bm25_depth``).
- ``prf``: BM25 of the Rocchio (1971) and RM3 (Abdul-Jaleel et al. 2004) expanded queries, the feedback
  documents being the index's top 10 for the question (one small extra search).
- ``dense``: for each encoder, the cosine of the question and the article vector (stored vectors of an open
  index are reused, :class:`medcite.rerank.embedding.DocumentVectors`), its rank among the candidates and
  its distance to the best candidate's.
- ``terms``: share of the query terms in the title and in the abstract (plain and IDF-weighted), query
  bigrams found as bigrams, and proximity: matched terms over the shortest span of the text holding them
  all (Tao & Zhai 2007's minimum-cover span).
- ``passage``: the best abstract sentence's BM25 and its share of the query terms (passage-level evidence,
  Callan 1994: one sentence often decides relevance, as BioASQ's gold snippets show).
- ``document``: title and abstract length, publication year, number of publication types, review or not.
  Off by default: on a benchmark corpus whose relevant documents were rebuilt from gold snippets (shorter,
  no year) these features learn the corpus, not relevance.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..types import Article, Hit

if TYPE_CHECKING:
    from ..retrieve.expansion import WeightedQuery


#: term counts of titles, abstracts and both, and the title and abstract lengths
_Counts = tuple[list[Counter[str]], list[Counter[str]], list[Counter[str]], np.ndarray, np.ndarray]


class Expander(Protocol):
    """Pseudo-relevance feedback: the query's weighted terms given feedback documents (Rocchio, RM3)."""

    def expand(self, query: str, docs: Sequence[tuple[str, float]]) -> WeightedQuery: ...

#: the version of the feature code, stored in every model trained on it; bump it whenever a feature's definition
#: changes, so a model trained on the old features is refused (and the shipped model's test fails until it is
#: rebuilt: tests/unit/test_shipped_models.py)
FEATURE_VERSION = 1

GROUPS = ("first_stage", "bm25", "prf", "dense", "terms", "passage", "document")
DEFAULT_GROUPS = ("first_stage", "bm25", "prf", "dense", "terms", "passage")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
K1, B = 1.2, 0.75

Analyzer = Callable[[str], list[str]]


def feature_names(groups: Sequence[str], encoders: Sequence[str]) -> list[str]:
    """The feature columns of ``groups`` (in :data:`GROUPS` order) with ``encoders`` named for ``dense``."""
    out: list[str] = []
    for g in GROUPS:
        if g not in groups:
            continue
        if g == "first_stage":
            out += ["fused_score", "fused_rank", "fused_rrank", "in_bm25", "in_dense", "branches"]
        elif g == "bm25":
            out += ["bm25_title", "bm25_abstract", "bm25_text", "bm25_text_gap", "bm25_index", "bm25_index_rank"]
        elif g == "prf":
            out += ["bm25_rocchio", "bm25_rm3"]
        elif g == "dense":
            for e in encoders:
                out += [f"cos_{e}", f"cos_{e}_rank", f"cos_{e}_gap"]
        elif g == "terms":
            out += ["cover_title", "cover_abstract", "cover_text_idf", "bigrams", "proximity", "query_terms"]
        elif g == "passage":
            out += ["sentence_bm25", "sentence_cover"]
        elif g == "document":
            out += ["len_title", "len_abstract", "year", "pub_types", "review"]
    return out


def bm25_term(tf: float, df: int, n_docs: int, dl: float, avgdl: float) -> float:
    """Lucene's BM25 of one term: idf = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    if tf <= 0:
        return 0.0
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / max(avgdl, 1e-9)))


def bm25(query: Mapping[str, float], tf: Mapping[str, int], dl: int, avgdl: float,
         df: Callable[[str], int], n_docs: int) -> float:
    """BM25 of a weighted query (term -> weight) against one text's term counts."""
    return sum(w * bm25_term(tf.get(t, 0), df(t), n_docs, dl, avgdl) for t, w in query.items())


def bm25_many(query: Mapping[str, float], tfs: Sequence[Mapping[str, int]], lengths: np.ndarray, avgdl: float,
              df: Callable[[str], int], n_docs: int) -> np.ndarray:
    """:func:`bm25` of one weighted query against many texts at once (a texts x terms matrix)."""
    terms = [t for t, w in query.items() if w]
    if not terms or not tfs:
        return np.zeros(len(tfs))
    tf = np.array([[c.get(t, 0) for t in terms] for c in tfs], dtype=np.float64)
    dfs = np.array([df(t) for t in terms], dtype=np.float64)
    idf = np.log1p((n_docs - dfs + 0.5) / (dfs + 0.5))
    norm = K1 * (1 - B + B * lengths[:, None] / max(avgdl, 1e-9))
    weights = np.array([query[t] for t in terms], dtype=np.float64)
    return np.asarray(((tf * (K1 + 1) / (tf + norm)) * idf * weights).sum(axis=1), dtype=np.float64)


def min_cover(tokens: Sequence[str], terms: set[str]) -> int:
    """Length of the shortest span of ``tokens`` holding every term of ``terms`` found in them (0: none)."""
    present = terms.intersection(tokens)
    if not present:
        return 0
    need, have, best, left = len(present), Counter[str](), len(tokens), 0
    covered = 0
    for right, tok in enumerate(tokens):
        if tok in present:
            have[tok] += 1
            if have[tok] == 1:
                covered += 1
        while covered == need:
            best = min(best, right - left + 1)
            t = tokens[left]
            if t in present:
                have[t] -= 1
                if have[t] == 0:
                    covered -= 1
            left += 1
    return best


def ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each value, 1 for the highest (ties: first come first)."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values), dtype=np.float64)
    out[order] = np.arange(1, len(values) + 1)
    return out


@dataclass
class Encoded:
    """One encoder's name (the feature suffix), its query encoder and the article vectors it reads."""

    name: str
    encode_query: Callable[[str], np.ndarray]
    documents: Callable[[Sequence[Article]], np.ndarray]


@dataclass
class FeatureSources:
    """What the features read: the sparse index (``search``, ``doc_freq``, ``len``), its analyser, the store's
    average field lengths, the feedback expanders, the encoders and the document store's ``get_many``."""

    analyzer: Analyzer
    doc_freq: Callable[[str], int]
    n_docs: int
    avg_title: float
    avg_abstract: float
    search: Callable[[str, int], list[Hit]] | None = None
    get_many: Callable[[Sequence[str]], Mapping[str, Article]] | None = None
    expanders: Sequence[Expander] = ()
    encoders: Sequence[Encoded] = ()
    bm25_depth: int = 300
    avg_sentence: float = 25.0
    fb_docs: int = 10
    _df: dict[str, int] = field(default_factory=dict)

    def df(self, term: str) -> int:
        got = self._df.get(term)
        if got is None:
            got = self._df[term] = int(self.doc_freq(term))
        return got


class Features:
    """The feature matrix of a question's candidates: one row per hit, columns :func:`feature_names`."""

    def __init__(self, sources: FeatureSources, groups: Sequence[str] = DEFAULT_GROUPS) -> None:
        unknown = [g for g in groups if g not in GROUPS]
        if unknown:
            raise ValueError(f"unknown feature group(s) {unknown}; groups: {', '.join(GROUPS)}")
        self.src = sources
        self.groups = tuple(g for g in GROUPS if g in groups)
        self.names = feature_names(self.groups, [e.name for e in sources.encoders])
        self._counted: tuple[tuple[int, int], _Counts] | None = None
        self._tokens: dict[tuple[str, str], tuple[list[str], list[str], list[list[str]]]] = {}

    def tokens(self, article: Article) -> tuple[list[str], list[str], list[list[str]]]:
        """The analysed title, abstract and abstract sentences of ``article`` (kept for the next queries, up to
        50,000 articles)."""
        key = (article.pmid, article.title[:40] + article.abstract[-40:])
        got = self._tokens.get(key)
        if got is None:
            if len(self._tokens) >= 50_000:
                self._tokens.clear()
            sentences = [self.src.analyzer(x) for x in _SENTENCE.split(article.abstract) if x.strip()]
            got = self._tokens[key] = (self.src.analyzer(article.title), [t for x in sentences for t in x], sentences)
        return got

    def __call__(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article]) -> np.ndarray:
        if not hits:
            return np.zeros((0, len(self.names)))
        cols: list[np.ndarray] = []
        arts = [articles[h.pmid] for h in hits]
        need_text = any(g in self.groups for g in ("bm25", "prf", "terms", "passage"))
        analysed = [self.tokens(a) for a in arts] if need_text else []
        titles = [t for t, _, _ in analysed]
        abstracts = [a for _, a, _ in analysed]
        qterms = self.src.analyzer(query)
        qweights = {t: float(c) for t, c in Counter(qterms).items()}
        for g in self.groups:
            if g == "first_stage":
                cols += self._first_stage(hits)
            elif g == "bm25":
                cols += self._bm25(query, hits, qweights, titles, abstracts)
            elif g == "prf":
                cols += self._prf(query, titles, abstracts)
            elif g == "dense":
                cols += self._dense(query, arts)
            elif g == "terms":
                cols += self._terms(qterms, titles, abstracts)
            elif g == "passage":
                cols += self._passage(qweights, [x for _, _, x in analysed])
            elif g == "document":
                cols += self._document(arts)
        self._counted = None
        return np.column_stack(cols).astype(np.float64)

    # -- groups --------------------------------------------------------------------------------------
    @staticmethod
    def _first_stage(hits: Sequence[Hit]) -> list[np.ndarray]:
        rank = np.array([h.rank or i + 1 for i, h in enumerate(hits)], dtype=np.float64)

        def found(prefix: str) -> np.ndarray:
            return np.array([any(b.split("/", 1)[0] == prefix for b in h.branches) for h in hits], dtype=np.float64)

        return [np.array([h.score for h in hits], dtype=np.float64), rank, 1.0 / rank, found("bm25"), found("dense"),
                np.array([len({b.split("/", 1)[0] for b in h.branches}) for h in hits], dtype=np.float64)]

    def _text_bm25(self, weights: Mapping[str, float], titles: Sequence[list[str]],
                   abstracts: Sequence[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.src
        ct, ca, cx, lt, la = self._counts(titles, abstracts)
        return (bm25_many(weights, ct, lt, s.avg_title, s.df, s.n_docs),
                bm25_many(weights, ca, la, s.avg_abstract, s.df, s.n_docs),
                bm25_many(weights, cx, lt + la, s.avg_title + s.avg_abstract, s.df, s.n_docs))

    def _counts(self, titles: Sequence[list[str]], abstracts: Sequence[list[str]]) -> _Counts:
        """Term counts of the titles, abstracts and both, and their lengths (made once per call)."""
        key = (id(titles), id(abstracts))
        if self._counted is None or self._counted[0] != key:
            ct = [Counter(t) for t in titles]
            ca = [Counter(a) for a in abstracts]
            both = [a + b for a, b in zip(ct, ca, strict=True)]
            lt = np.array([len(t) for t in titles], dtype=np.float64)
            la = np.array([len(a) for a in abstracts], dtype=np.float64)
            self._counted = (key, (ct, ca, both, lt, la))
        return self._counted[1]

    def _bm25(self, query: str, hits: Sequence[Hit], weights: Mapping[str, float], titles: Sequence[list[str]],
              abstracts: Sequence[list[str]]) -> list[np.ndarray]:
        title, abstract, text = self._text_bm25(weights, titles, abstracts)
        index_score = np.zeros(len(hits))
        index_rank = np.full(len(hits), float(self.src.bm25_depth + 1))
        if self.src.search is not None:
            found = {h.pmid: (h.score, r) for r, h in enumerate(self.src.search(query, self.src.bm25_depth), 1)}
            for i, h in enumerate(hits):
                if h.pmid in found:
                    index_score[i], index_rank[i] = found[h.pmid]
        gap = text - (text.max() if len(text) else 0.0)
        return [title, abstract, text, gap, index_score, np.log1p(index_rank)]

    def _prf(self, query: str, titles: Sequence[list[str]], abstracts: Sequence[list[str]]) -> list[np.ndarray]:
        s = self.src
        out = []
        docs: list[tuple[str, float]] = []
        if s.search is not None and s.get_many is not None and s.expanders:
            first = s.search(query, s.fb_docs)
            fb = s.get_many([h.pmid for h in first])
            docs = [(fb[h.pmid].text, h.score) for h in first if h.pmid in fb]
        one = getattr(s.analyzer, "one", None)
        for expander in s.expanders:
            weighted = expander.expand(query, docs).weights if docs else {}
            terms: dict[str, float] = {}
            for word, w in weighted.items():
                term = one(word) if one is not None else next(iter(s.analyzer(word)), None)
                if term:
                    terms[term] = terms.get(term, 0.0) + w
            out.append(self._text_bm25(terms, titles, abstracts)[2])
        while len(out) < 2:
            out.append(np.zeros(len(titles)))
        return out[:2]

    def _dense(self, query: str, arts: Sequence[Article]) -> list[np.ndarray]:
        from .embedding import cosine

        out = []
        for enc in self.src.encoders:
            sims = cosine(np.asarray(enc.encode_query(query)).reshape(-1), enc.documents(arts))
            out += [sims, ranks(sims), sims - sims.max()]
        return out

    def _terms(self, qterms: Sequence[str], titles: Sequence[list[str]],
               abstracts: Sequence[list[str]]) -> list[np.ndarray]:
        unique = set(qterms)
        n = len(titles)
        cover_t, cover_a, cover_idf, bigrams, prox = (np.zeros(n) for _ in range(5))
        idf = {t: math.log(1 + (self.src.n_docs - self.src.df(t) + 0.5) / (self.src.df(t) + 0.5)) for t in unique}
        total_idf = sum(idf.values()) or 1.0
        qbigrams = set(zip(qterms, qterms[1:], strict=False))
        for i, (t, a) in enumerate(zip(titles, abstracts, strict=True)):
            st, sa = set(t), set(a)
            if unique:
                cover_t[i] = len(unique & st) / len(unique)
                cover_a[i] = len(unique & sa) / len(unique)
                cover_idf[i] = sum(idf[x] for x in unique & (st | sa)) / total_idf
            tokens = t + a
            if qbigrams:
                bigrams[i] = len(qbigrams & set(zip(tokens, tokens[1:], strict=False))) / len(qbigrams)
            span = min_cover(tokens, unique)
            if span:
                prox[i] = len(unique.intersection(tokens)) / span
        return [cover_t, cover_a, cover_idf, bigrams, prox, np.full(n, float(len(unique)))]

    def _passage(self, weights: Mapping[str, float], sentences: Sequence[list[list[str]]]) -> list[np.ndarray]:
        s = self.src
        flat = [x for doc in sentences for x in doc]
        owner = np.array([i for i, doc in enumerate(sentences) for _ in doc], dtype=np.int64)
        best_bm25, best_cover = np.zeros(len(sentences)), np.zeros(len(sentences))
        if not flat or not weights:
            return [best_bm25, best_cover]
        counts = [Counter(x) for x in flat]
        lengths = np.array([len(x) for x in flat], dtype=np.float64)
        scores = bm25_many(weights, counts, lengths, s.avg_sentence, s.df, s.n_docs)
        unique = set(weights)
        cover = np.array([len(unique.intersection(c)) / len(unique) for c in counts])
        np.maximum.at(best_bm25, owner, scores)
        np.maximum.at(best_cover, owner, cover)
        return [best_bm25, best_cover]

    @staticmethod
    def _document(arts: Sequence[Article]) -> list[np.ndarray]:
        return [np.array([len(a.title.split()) for a in arts], dtype=np.float64),
                np.array([len(a.abstract.split()) for a in arts], dtype=np.float64),
                np.array([a.year or 0 for a in arts], dtype=np.float64),
                np.array([len(a.publication_types) for a in arts], dtype=np.float64),
                np.array([any("review" in p.lower() for p in a.publication_types) for a in arts], dtype=np.float64)]
