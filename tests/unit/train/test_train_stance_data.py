"""The stance classifier's training data: split by claim, negation pairs, extra supervision, balance."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from medcite.errors import InputError
from medcite.train.stance_data import (
    StancePair,
    balanced,
    bioasq_yesno,
    negated,
    pubmedqa,
    read_stance_csv,
    split_by_claim,
)


def test_csv_rows_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "hv.csv"
    good.write_text("id,evidence,claim,label\n1,Masks work.,Masks reduce spread,Supports\n"
                    "2,Masks fail.,Masks reduce spread,Refutes\n3,Other.,Masks reduce spread,Neutral\n")
    assert [p.label for p in read_stance_csv(good)] == [0, 1, 2]
    for text, message in (("claim,label\nx,Supports\n", "no column 'evidence'"),
                          ("claim,evidence,label\nx,y,Maybe\n", "row 2 has the label 'Maybe'"),
                          ("claim,evidence,label\n,y,Supports\n", "row 2 has an empty claim")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(InputError, match=message):
            read_stance_csv(bad)


def test_claims_never_straddle_the_split() -> None:
    pairs = [StancePair(f"claim {i % 10}", f"evidence {i}", i % 3) for i in range(100)]
    train, dev = split_by_claim(pairs, 0.3, seed=7)
    assert not {p.claim for p in train} & {p.claim for p in dev}
    assert len({p.claim for p in dev}) == 3 and len(train) + len(dev) == 100
    assert split_by_claim(pairs, 0.3, seed=7) == (train, dev)


def test_negated_pairs_flip_support_and_contradiction() -> None:
    out = negated([StancePair("Masks reduce spread.", "e", 0), StancePair("Masks reduce spread.", "e", 1),
                   StancePair("Masks reduce spread.", "e", 2)])
    assert [p.label for p in out] == [1, 0, 2]
    assert out[0].claim == "Masks increase spread." and out[0].source == "negation"


def test_extra_supervision_and_balance(tmp_path: Path) -> None:
    q = {"questions": [{"id": "a", "type": "yesno", "body": "Is X safe?", "exact_answer": "yes",
                        "snippets": [{"text": "X was safe."}, {"text": "X caused no harm."}]},
                       {"id": "b", "type": "yesno", "body": "Does Y work?", "exact_answer": ["no"],
                        "snippets": [{"text": "Y failed."}]},
                       {"id": "c", "type": "factoid", "body": "What is Z?", "exact_answer": [["z"]]}]}
    path = tmp_path / "bioasq.json"
    path.write_text(json.dumps(q))
    assert [(p.claim, p.label) for p in bioasq_yesno(path)] == [("Is X safe?", 0), ("Is X safe?", 0),
                                                                ("Does Y work?", 1)]
    assert [p.claim for p in bioasq_yesno(path, exclude={"a"})] == ["Does Y work?"]
    pqa = tmp_path / "pqa.json"
    pqa.write_text(json.dumps({"1": {"QUESTION": "Q?", "CONTEXTS": ["c1", "c2"], "final_decision": "maybe"}}))
    assert pubmedqa(pqa) == [StancePair("Q?", "c1 c2", 2, "pubmedqa")]
    pairs = [StancePair(str(i), "e", 0) for i in range(6)] + [StancePair("x", "e", 1)]
    counts = collections.Counter(p.label for p in balanced(pairs, seed=1))
    assert counts == {0: 6, 1: 6}
