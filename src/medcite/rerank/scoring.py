"""Shared code of the pointwise rerankers: pick the candidates, score them in batches, rank, cut to ``k``.

A backend implements only :meth:`PointwiseReranker.score` (a query and the candidates' articles in, one
score per article out); dropping unknown PMIDs, the ``top_n`` input cap, ordering, ``k`` and a score
cache live here. The cache holds (query, article) scores, so a pair seen before (the same sub-query over
overlapping candidates, an ensemble's repeated member) is never scored twice.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError
from ..set_option import set_line
from ..types import Article, Hit, ranked

if TYPE_CHECKING:
    from ..devices import Placement

V = TypeVar("V")


def candidates(hits: Sequence[Hit], articles: Mapping[str, Article], top_n: int | None) -> list[Hit]:
    """The best ``top_n`` input hits (by input score) whose article is known, one per PMID."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in ranked(hits):
        if hit.pmid in seen or hit.pmid not in articles:
            continue
        seen.add(hit.pmid)
        out.append(hit)
        if top_n is not None and len(out) >= top_n:
            break
    return out


def rescored(hits: Sequence[Hit], scores: Sequence[float], k: int) -> list[Hit]:
    """Give ``hits`` new ``scores`` (same order), keep their branches, rank and cut to ``k``."""
    if len(hits) != len(scores):
        raise ValueError(f"got {len(scores)} scores for {len(hits)} hits")
    out = []
    for hit, score in zip(hits, scores, strict=True):
        value = float(score)
        if math.isnan(value):
            value = float("-inf")  # a NaN would make the order depend on the input order
        out.append(Hit(hit.pmid, value, 0, hit.branches))
    return ranked(out)[: max(k, 0)]


def document_text(article: Article) -> str:
    """What a pointwise reranker reads: title and abstract as one passage."""
    return article.text


def check_top_n(top_n: int | None) -> int | None:
    if top_n is not None and top_n < 1:
        raise ConfigError(f"rerank top_n must be at least 1, got {top_n}", hint=f"e.g. {set_line('rerank.top_n', 100)}")
    return top_n


def local_model_dir(name_or_path: str, heads: tuple[str, ...] = ()) -> Path | None:
    """The folder ``name_or_path`` points at, None for a hub name; a path that is not a folder is an error.

    ``models:NAME`` is a model medcite trained or ships (:func:`medcite.trained_models.resolve`). A folder is a
    model when it holds ``config.json`` or one of ``heads`` (a medcite head that names its encoder).
    """
    from ..trained_models import resolve

    name_or_path = resolve(name_or_path, "medcite train reranker")
    path = Path(name_or_path).expanduser()
    looks_like_path = name_or_path.startswith((".", "/", "~")) or path.exists()
    if not looks_like_path:
        return None
    if not path.is_dir():
        raise ConfigError(
            f"model folder {name_or_path!r} does not exist",
            hint="give the folder of a Hugging Face model (it holds config.json), or a model name",
        )
    if not any((path / f).exists() for f in ("config.json", *heads)):
        raise ConfigError(
            f"{name_or_path!r} is not a Hugging Face model folder (no config.json)",
            hint="give the folder written by `save_pretrained`, `medcite train` or `hf download --local-dir`",
        )
    return path


def not_available(name: str, what: str, exc: BaseException) -> ConfigError:
    """The error for a hub model that cannot be loaded (normally: no internet and not in the HF cache)."""
    return ConfigError(
        f"the {what} model {name!r} is not available offline and could not be loaded ({type(exc).__name__}: "
        f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})",
        hint=(
            f"on a machine with internet run `hf download {name} --local-dir DIR`, copy DIR here and give "
            f"its path instead of the name (e.g. {set_line('rerank.model', 'DIR')}); or train one offline with "
            "`medcite train reranker`"
        ),
    )


def load_t5(name_or_path: str, placement: Placement, what: str, purpose: str) -> tuple[Any, Any]:
    """(tokenizer, T5ForConditionalGeneration) from a folder or a hub name (offline: the HF cache), moved to the
    ``placement``'s device and dtype; ``what`` names the model in a not-available error, ``purpose`` in a
    missing-extra one."""
    from ..registry import require

    transformers = require("transformers", "rerank", purpose)
    folder = local_model_dir(name_or_path)
    source = str(folder) if folder else name_or_path
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=folder is not None)
        model = transformers.T5ForConditionalGeneration.from_pretrained(source, local_files_only=folder is not None)
    except OSError as exc:
        raise not_available(name_or_path, what, exc) from exc
    model.eval()
    placement.to(model)
    return tokenizer, model


def article_key(article: Article) -> tuple[str, int]:
    """Identity of an article's text (a changed abstract under the same PMID is another article)."""
    return article.pmid, hash(article.text)


class LRU(OrderedDict[Hashable, V]):
    """A small least-recently-used map of at most ``size`` entries."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: Hashable) -> V | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: Hashable, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class PointwiseReranker(ABC):
    """Base of rerankers that score each (query, article) pair independently."""

    name: str = "pointwise"
    cache_size: int = 50_000

    def __init__(self, top_n: int | None = None) -> None:
        self.top_n = check_top_n(top_n)
        self._scores: LRU[float] = LRU(self.cache_size)

    @abstractmethod
    def score(self, query: str, articles: Sequence[Article]) -> list[float]:
        """One relevance score per article, higher is better."""

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, Article], k: int) -> list[Hit]:
        """Rescore the best ``top_n`` known hits for ``query`` and return the best ``k``."""
        pool = candidates(hits, articles, self.top_n)
        if not pool or k <= 0:
            return []
        return rescored(pool, self.cached_scores(query, [articles[h.pmid] for h in pool]), k)

    def cached_scores(self, query: str, docs: Sequence[Article]) -> list[float]:
        """:meth:`score` for the pairs not scored before; the others come from the cache."""
        keys = [(query, *article_key(a)) for a in docs]
        found = [self._scores.lookup(key) for key in keys]
        todo = [i for i, f in enumerate(found) if f is None]
        if todo:
            fresh = self.score(query, [docs[i] for i in todo])
            if len(fresh) != len(todo):
                raise ValueError(f"{type(self).__name__}.score gave {len(fresh)} scores for {len(todo)} articles")
            for i, value in zip(todo, fresh, strict=True):
                found[i] = float(value)
                self._scores.store(keys[i], float(value))
        scores = [f for f in found if f is not None]  # every one by now
        if len(scores) != len(found):
            raise ValueError(f"{type(self).__name__}: {len(found) - len(scores)} scores missing after scoring")
        return scores
