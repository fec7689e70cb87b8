"""Near-duplicate questions: found by text, by words, by words + gold; kept out of negatives and splits."""

from __future__ import annotations

from pathlib import Path

from medcite.corpus.store import DocumentStore
from medcite.train.data import Question, bm25_searcher, mine_questions, read_bioasq, split_questions, training_split
from medcite.train.dedup import content_words, duplicate_groups, duplicate_pairs, normalise

QS = [
    Question("a", "Is semagacestat effective for Alzheimer's disease?", ("1", "2"), "11B1"),
    Question("b", "Is Semagacestat effective for Alzheimer's Disease ?", ("3",), "7B1"),
    Question("c", "Is semagacestat effective for treatment of Alzheimer's disease?", ("9",), "7B1"),
    Question("d", "What is the mechanism of action of pitolisant?", ("20", "21"), "7B1"),
    Question("e", "Which receptor does pitolisant target?", ("21", "22"), "7B1"),
    Question("f", "Describe the mechanism of action of pitolisant.", ("20",), "7B1"),
    Question("g", "Which drug treats gout?", ("30",), "7B1"),
    Question("h", "Which drug treats gout in elderly patients?", ("30", "31"), "7B1"),
    Question("i", "Which drug treats asthma?", ("40",), "7B1"),
]


def test_normalise_and_content_words() -> None:
    assert normalise("Is  Semagacestat effective?") == "is semagacestat effective"
    assert content_words("Which drugs treat gout?") == {"drug", "treat", "gout"}


def test_pairs_by_rule() -> None:
    ids = {(QS[i].id, QS[j].id): rule for i, j, rule in duplicate_pairs(QS)}
    assert ids == {("a", "b"): "text", ("a", "c"): "words", ("b", "c"): "words", ("d", "f"): "words",
                   ("g", "h"): "words+gold"}
    # shared gold alone (d / e: one word in common) and shared words alone (g / i: no gold in common) are not enough


def test_groups_gold_and_summary() -> None:
    groups = duplicate_groups(QS)
    members = sorted(sorted(m) for m in groups.members().values())
    assert members == [["a", "b", "c"], ["d", "f"], ["e"], ["g", "h"], ["i"]]
    assert groups.gold("b") == {"1", "2", "3", "9"} and groups.gold("e") == {"21", "22"}
    assert groups.summary()["duplicate_groups"] == 3 and groups.summary()["duplicate_questions"] == 4


def test_split_keeps_a_group_on_one_side() -> None:
    plain = split_questions(QS, 0.1, seed=1)
    assert [q.id for q in plain.dev] == ["a"]  # the most recent batch
    grouped = split_questions(QS, 0.1, seed=1, groups=duplicate_groups(QS))
    assert {q.id for q in grouped.dev} == {"a", "b", "c"}
    assert not {q.id for q in grouped.train} & {"a", "b", "c"}
    split, _ = training_split(QS, 0.1, seed=1)
    # one question per group on the training side, carrying its group's gold
    assert sorted(q.id for q in split.train) in (["d", "e", "g", "i"], ["e", "f", "g", "i"], ["d", "e", "h", "i"],
                                                 ["e", "f", "h", "i"])
    mech = next(q for q in split.train if q.id in ("d", "f"))
    assert set(mech.gold) == {"20", "21"}


def test_gold_of_a_duplicate_is_never_a_negative(tiny_corpus: tuple[Path, Path]) -> None:
    data, store_dir = tiny_corpus
    asthma = next(q for q in read_bioasq(data) if q.body == "Which drug treats asthma?")
    # a near-duplicate whose gold is the asthma look-alike documents (1003, 1004)
    twin = Question("twin", "Which drug treats asthma ?", ("1003", "1004"))
    groups = duplicate_groups([asthma, twin])
    with DocumentStore.open(store_dir) as store, bm25_searcher(store) as searcher:
        plain = mine_questions([asthma], store, searcher, negatives=2)
        clean = mine_questions([asthma], store, searcher, negatives=2, groups=groups)
    assert {p.pmid for p in plain[0].negatives} & {"1003", "1004"}  # the harm: a twin's gold as a negative
    assert not {p.pmid for p in clean[0].negatives} & {"1003", "1004"}
    assert clean[0].negatives and {p.pmid for p in clean[0].positives} == {"1001", "1002"}
