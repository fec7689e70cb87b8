"""A fast, deterministic stand-in encoder for dense index tests (feature hashing of words)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article


class HashEncoder:
    """Bag of hashed words -> L2-normalised vector. Counts the documents it encodes."""

    def __init__(self, dim: int = 16, name: str = "hash", fail_after_calls: int | None = None) -> None:
        self.dim = dim
        self.name = name
        self.fingerprint = f"{name}-{dim}"
        self.documents_encoded = 0
        self.calls = 0
        self.fail_after_calls = fail_after_calls

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            v[h % self.dim] += 1.0 if (h >> 8) % 2 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else v + 1.0 / np.sqrt(self.dim)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        self.documents_encoded += len(articles)
        return np.stack([self._vec(a.text) for a in articles])


WORDS = ("insulin diabetes statin cholesterol aspirin stroke tumour chemotherapy asthma inhaler "
         "vaccine influenza sleep apnea kidney dialysis malaria parasite").split()


def make_articles(n: int, start: int = 1) -> list[Article]:
    """Articles whose titles use distinct word pairs, so each is findable by its title."""
    out = []
    for i in range(n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        pmid = start + i
        out.append(Article(pmid=str(pmid), title=f"{a} {b} study {pmid}", abstract=f"we studied {a} and {b}."))
    return out


def fill_store(path, articles: list[Article]) -> DocumentStore:
    store = DocumentStore.create(path)
    with store.transaction() as tx:
        tx.upsert(articles, FileStats(path="test"))
    return store


def make_tiny_bert(folder, seed: int = 0):  # type: ignore[no-untyped-def]
    """A tiny random BertModel (hidden 32, 2 layers) + the packaged MiniLM tokenizer, saved to ``folder``."""
    from tiny_models import build_tiny_bert

    return build_tiny_bert(folder, seed)


def make_tiny_st(folder, bert_folder):  # type: ignore[no-untyped-def]
    """A sentence-transformers folder (transformer + mean pooling + normalise) around a tiny BERT."""
    from tiny_models import build_tiny_st

    return build_tiny_st(folder, bert_folder)
