from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore
from medcite.errors import InputError
from medcite.train.data import (
    Question,
    batch_order,
    bm25_searcher,
    eval_pools,
    mine_pairs,
    read_bioasq,
    split_questions,
)


def test_read_bioasq_pmids_from_urls(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"questions": [
        {"id": "a", "body": " Q1? ", "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/123",
                                                 "http://www.ncbi.nlm.nih.gov/pubmed/123/", "456"],
         "source_batch": "9B3"},
        {"id": "b", "body": "Q2?", "documents": []},
    ]}))
    assert read_bioasq(path) == [Question("a", "Q1?", ("123", "456"), "9B3")]
    path.write_text(json.dumps({"questions": [{"id": "c", "body": "x", "documents": ["http://x/pubmed/abc"]}]}))
    with pytest.raises(InputError, match="no PMID"):
        read_bioasq(path)
    path.write_text("[]")
    with pytest.raises(InputError, match="questions"):
        read_bioasq(path)


def test_batch_order() -> None:
    assert batch_order("11B4") > batch_order("9B5") > batch_order("9B1") > batch_order(None)


def test_split_by_question_recent_batches_to_dev() -> None:
    qs = [Question(f"q{i}", f"b{i}", ("1",), f"{7 + i % 3}B1") for i in range(9)]
    split = split_questions(qs, 1 / 3, seed=1)
    assert {q.batch for q in split.dev} == {"9B1"} and len(split.dev) == 3
    assert not {q.id for q in split.dev} & {q.id for q in split.train}
    assert len(split.train) + len(split.dev) == 9
    # no batch information: a seeded shuffle, the same for the same seed
    plain = [Question(f"q{i}", f"b{i}", ("1",)) for i in range(20)]
    one, two = split_questions(plain, 0.25, seed=7), split_questions(plain, 0.25, seed=7)
    assert [q.id for q in one.dev] == [q.id for q in two.dev] and len(one.dev) == 5
    assert [q.id for q in split_questions(plain, 0.25, seed=8).dev] != [q.id for q in one.dev]
    with pytest.raises(InputError):
        split_questions(plain, 1.0, seed=1)


def test_mined_negatives_never_gold(tiny_corpus: tuple[Path, Path]) -> None:
    data, store_dir = tiny_corpus
    questions = read_bioasq(data)
    with DocumentStore.open(store_dir) as store, bm25_searcher(store) as searcher:
        pairs = mine_pairs(questions, store, searcher, negatives=1, seed=0)
        capped = mine_pairs(questions, store, searcher, negatives=1, max_pairs=9, seed=0)
        # a question whose gold is not in the store gives nothing
        missing = mine_pairs([Question("z", "Which drug treats gout?", ("999999",))], store, searcher)
        pools = eval_pools(questions[:2], store, searcher, depth=5)
    gold = {q.id: set(q.gold) for q in questions}
    assert sum(p.label == 1 for p in pairs) == 24 and sum(p.label == 0 for p in pairs) == 24
    assert all((p.pmid in gold[p.qid]) == (p.label == 1) for p in pairs)
    # whole questions (4 pairs each) up to the cap
    assert len(capped) == 8 and len({p.qid for p in capped}) == 2
    assert missing == []
    assert len(pools) == 2 and all(len(item.hits) == 5 and item.relevant == gold[item.question.id]
                                   for item in pools)
    # the hardest negative of "Which drug treats asthma?" comes from BM25, not at random
    asthma = [p for p in pairs if p.qid == "q00" and p.label == 0]
    assert all("asthma" in p.text or "treats" in p.text for p in asthma)
