"""The workflows behind `medcite search`, `ingest` and `corpus`: typed results, no printing, no mutation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.config import load_settings
from medcite.errors import InputError
from medcite.workflows.corpus import ingest_files, store_article, store_stats
from medcite.workflows.search import search_index, search_preset

TOPICS = [{"id": "1", "question": "Do statins lower LDL cholesterol?", "narrative": "", "topic": "statins"},
          {"id": "2", "question": "Does vitamin D prevent fractures?", "narrative": "", "topic": "vitamin d"}]


def test_search_preset_ranks_from_the_store_and_fetches_articles_only_when_asked(store: Path) -> None:
    shown = search_preset(preset="bm25", corpus=store, overrides=(), query="statin myopathy muscle pain", topics=None,
                          k=2, query_from="question", qid="q", index_dir=None, articles=True)
    assert shown.tag == "medcite-bm25"
    assert [h.pmid for h in shown.run["q"]][:1] == ["12"]
    assert len(shown.run["q"]) <= 2
    assert set(shown.articles) == {h.pmid for h in shown.run["q"]}
    quiet = search_preset(preset="bm25", corpus=store, overrides=(), query="statin myopathy", topics=None, k=2,
                          query_from="question", qid="q", index_dir=None)
    assert quiet.articles == {}


def test_search_preset_raises_k_on_a_copy_of_the_settings(store: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps(TOPICS))
    k = load_settings("bm25").retrieve.k + 50
    ranking = search_preset(preset="bm25", corpus=store, overrides=(), query=None, topics=topics, k=k,
                            query_from="question", qid="1", index_dir=None)
    assert sorted(ranking.run) == ["1", "2"]
    assert load_settings("bm25").retrieve.k == k - 50


@pytest.mark.parametrize("kwargs, message", [
    ({"corpus": None}, "give --corpus STORE"),
    ({"index_dir": Path("idx")}, "not both"),
    ({"query_from": "topic"}, "--query-from does not apply"),
    ({"topics": Path("t.json")}, "either a QUERY or --topics"),
])
def test_search_preset_refuses_what_does_not_apply(store: Path, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"preset": "bm25", "corpus": store, "overrides": (), "query": "statins",
                               "topics": None, "k": 5, "query_from": "question", "qid": "1", "index_dir": None}
    with pytest.raises(InputError, match=message):
        search_preset(**{**args, **kwargs})  # type: ignore[arg-type]


def test_search_index_needs_an_index_and_one_source() -> None:
    with pytest.raises(InputError, match="give --index DIR"):
        search_index(None, query="statins", topics=None, k=5, query_from="question", qid="1")
    with pytest.raises(InputError, match="either a QUERY or --topics"):
        search_index(None, query=None, topics=None, k=5, query_from="question", qid="1")


def test_store_stats_and_article(store: Path) -> None:
    info, files = store_stats(store)
    assert info["articles"] == 8
    assert files == []  # filled by a transaction, not by ingesting a file
    assert store_article(store, "13").title == "Vitamin D"
    with pytest.raises(InputError, match="PMID 999 is not in the store"):
        store_article(store, "999")


def test_ingest_files_leaves_no_store_behind_when_it_creates_one_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(Exception):  # noqa: B017 - whichever error the reader raises, the store must go
        ingest_files([str(bad)], tmp_path / "new-store", on_error="raise", batch_size=10)
    assert not (tmp_path / "new-store").exists()
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"pmid": "1", "title": "T", "abstract": "A."}) + "\n")
    done = ingest_files([str(good)], tmp_path / "store", on_error="raise", batch_size=10)
    assert done.total == 1 and [r.added for r in done.results] == [1]
