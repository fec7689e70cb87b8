"""The store reads articles in bounded batches (keyset paging by PMID): every article once, in PMID order, for
any batch size, a shard, or the changes after a sequence number."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import InputError
from medcite.types import Article


def _store(path: Path) -> DocumentStore:
    store = DocumentStore.create(path)
    with store.transaction() as tx:
        tx.upsert([Article(str(p), f"title {p}", f"abstract {p}") for p in (9, 2, 14, 5, 11, 3, 7)], FileStats("a"))
    return store


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 100])
def test_every_article_once_in_pmid_order_for_any_batch(tmp_path: Path, batch: int) -> None:
    store = _store(tmp_path / "s")
    try:
        assert [a.pmid for a in store.iter_articles(batch=batch)] == ["2", "3", "5", "7", "9", "11", "14"]
        # shard i of 3: pmid % 3 == i - 1
        assert [a.pmid for a in store.iter_articles(batch=batch, shard=(1, 3))] == ["3", "9"]
        assert [a.pmid for a in store.iter_articles(batch=batch, shard=(2, 3))] == ["7"]
        assert [a.pmid for a in store.iter_articles(batch=batch, shard=(3, 3))] == ["2", "5", "11", "14"]
    finally:
        store.close()


@pytest.mark.parametrize("batch", [1, 2, 100])
def test_changes_after_a_sequence_number_in_pmid_order(tmp_path: Path, batch: int) -> None:
    store = _store(tmp_path / "s")
    try:
        since = store.seq
        assert list(store.iter_changes(since, batch=batch)) == []
        with store.transaction() as tx:
            tx.upsert([Article("11", "title 11 v2", "replaced"), Article("4", "title 4", "new")], FileStats("b"))
        changed = list(store.iter_changes(since, batch=batch))
        assert [(a.pmid, a.title) for a in changed] == [("4", "title 4"), ("11", "title 11 v2")]
        assert len(list(store.iter_changes(0, batch=batch))) == 8
    finally:
        store.close()


def test_a_shard_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path / "s")
    try:
        with pytest.raises(InputError, match="shard 4/3 does not exist"):
            list(store.iter_articles(shard=(4, 3)))
    finally:
        store.close()
