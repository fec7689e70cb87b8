"""BM25 with bm25s (Lù, "BM25S: Orders of magnitude faster lexical search via eager sparse scoring", 2024).

bm25s precomputes every (term, document) score into a sparse matrix, so k1, b and the BM25 variant
(``method``: lucene, robertson, atire, bm25l, bm25+) are free settings, and queries are fast. It builds
wholly in memory, so **an update rebuilds the whole index** from the store (the log says so); use the
tantivy backend for large or often-updated corpora.

Analysis matches the tantivy backend: split on non-alphanumeric characters, lowercase, drop tokens over
100 characters, Lucene's English stop words (and the lone "s" of possessives), then PyStemmer's Snowball
'english' or Porter (1980) 'porter' stemmer. Queries are bags of terms; a repeated term counts again.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from ...errors import CorruptIndexError, MissingExtraError
from ...io import JSONObject
from ...progress import progress
from ...registry import require
from ...types import Hit
from .base import (
    MAX_TOKEN_CHARS,
    Applied,
    SparseBackendMixin,
    SparseConfig,
    backend_settings,
    stopword_list,
    to_hits,
)

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore

log = logging.getLogger(__name__)

SUBDIR = "bm25s"
PMIDS = "pmids.npy"
FILES = (
    "params.index.json",
    "data.csc.index.npy",
    "indices.csc.index.npy",
    "indptr.csc.index.npy",
    "vocab.index.json",
    PMIDS,
)
_TOKEN = re.compile(r"[^\W_]+")


class BM25SConfig(SparseConfig):
    """bm25s BM25 in memory: any k1, b and BM25 variant."""

    backend: Literal["bm25s"] = "bm25s"
    k1: float = Field(1.2, gt=0, description="BM25 k1.")
    b: float = Field(0.75, ge=0, le=1, description="BM25 b.")
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant (Lucene's is what Anserini and tantivy score)."
    )


def _bm25s() -> ModuleType:
    return require("bm25s", "bm25s", "the bm25s index backend")


def _stemmer_module(settings: SparseConfig) -> ModuleType:
    """PyStemmer (imported as ``Stemmer``), or MissingExtraError naming the package to install."""
    try:
        return importlib.import_module("Stemmer")
    except ImportError:
        raise MissingExtraError(
            "PyStemmer", "bm25s", f"the {settings.stemmer!r} stemmer of the bm25s backend"
        ) from None


class Analyzer:
    """Text -> index terms, the same chain as the tantivy backend's analyzer."""

    def __init__(self, settings: SparseConfig) -> None:
        self.stop = frozenset(stopword_list(settings))
        self.stemmer: Any = None
        if settings.stemmer != "none":
            self.stemmer = _stemmer_module(settings).Stemmer(settings.stemmer)

    def __call__(self, text: str) -> list[str]:
        tokens = [t for t in _TOKEN.findall(text.lower()) if len(t) <= MAX_TOKEN_CHARS and t not in self.stop]
        if self.stemmer is not None:
            return list(self.stemmer.stemWords(tokens))
        return tokens


class BM25SIndex(SparseBackendMixin):
    """A bm25s BM25 index folder (memory-mapped on load)."""

    name = "bm25s"
    Config = BM25SConfig
    #: documents indexed per second, roughly (59,890 PubMed abstracts in 55 s: docs/BENCHMARKS.md)
    docs_per_s = 1_000.0
    #: it builds in memory: any change re-indexes the whole store
    rebuilds_on_update = True

    def __init__(
        self,
        folder: Path,
        manifest: JSONObject,
        settings: BM25SConfig,
        model: Any,
        pmids: np.ndarray,
    ) -> None:
        self.folder = folder
        self.manifest = manifest
        self.settings = settings
        self._model = model
        self._pmids = pmids
        self._vocab: dict[str, int] = model.vocab_dict
        self._analyzer = Analyzer(settings)

    # -- class side ----------------------------------------------------------------------------------
    @classmethod
    def check_settings(cls, settings: BM25SConfig) -> None:
        _bm25s()
        if settings.stemmer != "none":
            _stemmer_module(settings)

    @classmethod
    def sync(cls, folder: Path, store: DocumentStore, settings: BM25SConfig, since: int | None) -> Applied:
        """Rebuild from the whole store; with ``since``, count what changed against the old index."""
        path = folder / SUBDIR
        added = replaced = deleted = 0
        if since is not None:
            old = set(cls._read_pmids(path).tolist())
            changed = [int(a.pmid) for a in store.iter_changes(since)]
            replaced = sum(1 for p in changed if p in old)
            added = len(changed) - replaced
            deleted = sum(1 for p in store.deleted_since(since) if int(p) in old)
            log.info(
                "bm25s builds in memory: applying %d changes rebuilds all %d documents",
                len(changed) + deleted,
                len(store),
            )
        analyzer = Analyzer(settings)
        vocab: dict[str, int] = {}
        ids: list[list[int]] = []
        pmids: list[int] = []
        for article in progress(store.iter_articles(), total=len(store), desc="bm25s index", unit="doc"):
            ids.append([vocab.setdefault(t, len(vocab)) for t in analyzer(article.text)])
            pmids.append(int(article.pmid))
        if since is None:
            added = len(pmids)
        model = _bm25s().BM25(k1=settings.k1, b=settings.b, method=settings.method)
        if pmids:
            tokenized = require("bm25s.tokenization", "bm25s", "the bm25s index backend").Tokenized
            model.index(tokenized(ids=ids, vocab=vocab), show_progress=False)
        # write beside the old files and swap, so a crash leaves the old index readable
        tmp = folder / f"{SUBDIR}.new"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        if pmids:
            model.save(str(tmp), show_progress=False)
        else:
            (tmp / "params.index.json").write_text(json.dumps({"empty": True}), encoding="utf-8")
        np.save(tmp / PMIDS, np.asarray(pmids, dtype=np.int64))
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
        return Applied(added, replaced, deleted, len(pmids), True)

    @staticmethod
    def _read_pmids(path: Path) -> np.ndarray:
        try:
            return np.load(path / PMIDS, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise CorruptIndexError(
                f"cannot read {path / PMIDS} ({exc})", hint="rebuild the index (medcite index bm25 --rebuild)"
            ) from None

    @classmethod
    def load(cls, folder: Path, manifest: JSONObject) -> BM25SIndex:
        settings = backend_settings(folder, manifest, cls.name)
        assert isinstance(settings, BM25SConfig)
        bm25s = _bm25s()
        path = folder / SUBDIR
        pmids = cls._read_pmids(path)
        if len(pmids) == 0:
            return cls(folder, manifest, settings, bm25s.BM25(k1=settings.k1, b=settings.b), pmids)
        missing = [f for f in FILES if not (path / f).exists()]
        if missing:
            raise CorruptIndexError(
                f"the bm25s index at {path} lacks {', '.join(missing)}",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            )
        try:
            model = bm25s.BM25.load(str(path), mmap=True, load_corpus=False, show_progress=False)
        except Exception as exc:  # bm25s raises whatever numpy/json raise on damaged files
            raise CorruptIndexError(
                f"cannot load the bm25s index at {path} ({exc})",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            ) from None
        if int(model.scores.get("num_docs", -1)) != len(pmids):
            raise CorruptIndexError(
                f"the bm25s index at {path} has {model.scores.get('num_docs')} documents but {len(pmids)} PMIDs",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            )
        return cls(folder, manifest, settings, model, pmids)

    # -- searching -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._pmids)

    def doc_freq(self, term: str) -> int:
        """Documents holding the index term ``term`` (already analysed): its column length in the score matrix."""
        tid = self._vocab.get(term)
        if tid is None or len(self._pmids) == 0:
            return 0
        indptr = self._model.scores["indptr"]
        return int(indptr[tid + 1] - indptr[tid])

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = [[] for _ in queries]
        k = min(k, len(self._pmids))
        todo: list[int] = []
        token_ids: list[list[int]] = []
        for i, text in enumerate(queries):
            ids = [self._vocab[t] for t in self._analyzer(text) if t in self._vocab]
            if ids:
                todo.append(i)
                token_ids.append(ids)
        if not todo or k <= 0:
            return out
        docs, scores = self._model.retrieve(token_ids, k=k, show_progress=False, n_threads=0)
        for row, i in enumerate(todo):
            keep = scores[row] > 0  # bm25s pads the top k with zero-score documents
            out[i] = to_hits(self._pmids[docs[row][keep]].tolist(), scores[row][keep].tolist())
        return out
