from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.train.data import Mined, Pair, Question
from medcite.train.encoder import Example, make_examples, unique_batches

st = pytest.importorskip("sentence_transformers")


def test_unique_batches_never_repeat_a_question_or_document() -> None:
    examples = [Example(Pair(f"q{i % 5}", f"p{i % 7}", "q", "t", 1.0)) for i in range(35)]
    batches = unique_batches(examples, 4, seed=0)
    for batch in batches:
        assert len({ex.pair.qid for ex in batch}) == len(batch) == len({ex.pair.pmid for ex in batch})
        assert 2 <= len(batch) <= 4
    assert sum(len(b) for b in batches) >= 33  # at most a few leftovers of one
    assert unique_batches(examples, 4, seed=0) == batches


def test_unique_batches_keep_other_questions_gold_out() -> None:
    """g is gold for q0 and q1's row brings it: those rows never meet, nor does q2's, whose hard negative is g."""
    rows = [
        Example(Pair("q0", "a", "q", "t", 1.0), gold=frozenset({"a", "g"})),
        Example(Pair("q1", "g", "q", "t", 1.0), gold=frozenset({"b", "g"})),
        Example(Pair("q2", "c", "q", "t", 1.0), (Pair("q2", "g", "q", "t", 0.0),), frozenset({"c"})),
        *[Example(Pair(f"x{i}", f"d{i}", "q", "t", 1.0), gold=frozenset({f"d{i}"})) for i in range(20)],
    ]
    for seed in range(20):
        for batch in unique_batches(rows, 8, seed=seed):
            qids = {ex.pair.qid for ex in batch}
            assert len(qids & {"q0", "q1", "q2"}) <= 1
            docs = [p for ex in batch for p in ex.pmids]
            assert len(docs) == len(set(docs))
            for ex in batch:
                others = {p for other in batch if other is not ex for p in other.pmids}
                assert not ex.gold & others


def test_make_examples_cycle_hard_negatives_and_keep_whole_questions() -> None:
    def mined(qid: str, n_pos: int, n_neg: int) -> Mined:
        pos = [Pair(qid, f"{qid}-g{i}", "q", "t", 1.0) for i in range(n_pos)]
        neg = [Pair(qid, f"{qid}-n{i}", "q", "t", 0.0) for i in range(n_neg)]
        return Mined(Question(qid, "q", tuple(p.pmid for p in pos)), pos, neg)

    material = [mined("a", 2, 3), mined("b", 3, 1), mined("c", 1, 0)]
    rows = make_examples(material, negatives=1, max_pairs=None, seed=0)
    assert {ex.pair.qid for ex in rows} == {"a", "b"}  # c has no hard negative
    a = sorted((ex for ex in rows if ex.pair.qid == "a"), key=lambda ex: ex.pair.pmid)
    assert [ex.negatives[0].pmid for ex in a] == ["a-n0", "a-n1"]  # different negatives per gold
    assert all(ex.negatives[0].pmid == "b-n0" for ex in rows if ex.pair.qid == "b")
    assert all(ex.gold == {f"{ex.pair.qid}-g{i}" for i in range(3 if ex.pair.qid == "b" else 2)} for ex in rows)
    in_batch = make_examples(material, negatives=0, max_pairs=None, seed=0)
    assert len(in_batch) == 6 and all(not ex.negatives for ex in in_batch)
    capped = make_examples(material, negatives=0, max_pairs=4, seed=0)
    for qid in {ex.pair.qid for ex in capped}:  # whole questions only
        assert sum(ex.pair.qid == qid for ex in capped) == {"a": 2, "b": 3, "c": 1}[qid]


def test_cli_train_encoder_end_to_end(tiny_corpus: tuple[Path, Path], tiny_body: Path, tmp_path: Path) -> None:
    data, store = tiny_corpus
    out = tmp_path / "enc"
    args = ["-q", "train", "encoder", "--data", str(data), "--corpus", str(store), "--base", str(tiny_body),
            "--out", str(out), "--epochs", "1", "--batch-size", "4", "--seed", "2", "--dev-fraction", "0.25",
            "--max-length", "64", "--threads", "1", "--lr", "1e-3", "--min-pairs", "1", "--min-questions", "3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "training.json").read_text())
    assert report["kind"] == "bi-encoder" and report["pairs"]["positive"] == 18
    assert 0 <= report["metrics"]["map@10_after"] <= 1
    # a sentence-transformers folder that loads by path, and the training changed the weights
    trained = st.SentenceTransformer(str(out), device="cpu")
    base = st.SentenceTransformer(str(tiny_body), device="cpu")
    a, b = trained.encode(["metformin treats diabetes"]), base.encode(["metformin treats diabetes"])
    assert a.shape == b.shape and not (a == b).all()
    again = CliRunner().invoke(cli, [*args[:10], str(tmp_path / "enc2"), *args[11:]])
    assert again.exit_code == 0
    assert json.loads((tmp_path / "enc2" / "training.json").read_text())["loss"] == report["loss"]
    assert report["pairs"]["hard_negatives"] == 18 and report["options"]["negatives"] == 1  # the default
    in_batch = CliRunner().invoke(cli, [*args[:10], str(tmp_path / "enc3"), *args[11:], "--negatives", "0"])
    assert in_batch.exit_code == 0, in_batch.output
    in_batch_report = json.loads((tmp_path / "enc3" / "training.json").read_text())
    assert in_batch_report["pairs"]["positive"] == 18 and in_batch_report["pairs"]["hard_negatives"] == 0
    assert in_batch_report["options"]["negatives"] == 0 and in_batch_report["loss"] != report["loss"]
    dense = CliRunner().invoke(cli, [*args[:10], str(tmp_path / "enc4"), *args[11:], "--negatives-from", "dense",
                                     "--dense-miner", str(tiny_body)])
    assert dense.exit_code == 0, dense.output
    dense_report = json.loads((tmp_path / "enc4" / "training.json").read_text())
    assert dense_report["options"]["negatives_from"] == "dense"
    assert dense_report["options"]["dense_miner"] == str(tiny_body)


def _decoded(tokenizer: object, batch: dict[str, object], column: str) -> list[str]:
    return [t.replace(" ", "") for t in tokenizer.batch_decode(batch[f"{column}_input_ids"],  # type: ignore[attr-defined]
                                                               skip_special_tokens=True)]


def test_the_trainer_batches_are_the_unique_batches(tiny_body: Path, tmp_path: Path) -> None:
    """The trainer draws exactly medcite's batches (every epoch's, in order), so the batching rule holds in
    training: a default or no-duplicates sampler would put q0, q1 and q2 (g is gold for q0 and q1, and q2's
    hard negative) together."""
    from medcite.train.common import TrainOptions
    from medcite.train.encoder import bi_encoder_trainer

    def row(qid: str, pmid: str, neg: str, gold: set[str]) -> Example:
        # texts are the ids spelled out, so the decoded batches name their rows
        return Example(Pair(qid, pmid, f"q{qid}", f"d{pmid}", 1.0), (Pair(qid, neg, f"q{qid}", f"d{neg}", 0.0),),
                       frozenset(gold))

    rows = [row("q0", "a", "n0", {"a", "g"}), row("q1", "g", "n1", {"b", "g"}), row("q2", "c", "g", {"c"}),
            *[row(f"x{i}", f"d{i}", f"m{i}", {f"d{i}"}) for i in range(13)]]
    by_text = {ex.pair.question: ex for ex in rows}
    model = st.SentenceTransformer(str(tiny_body), device="cpu")
    opts = TrainOptions(epochs=2, batch_size=8, seed=5, negatives=1, min_pairs=1, min_questions=3)
    trainer = bi_encoder_trainer(model, rows, opts, str(tmp_path))
    drawn = []
    for batch in trainer.get_train_dataloader():
        questions = _decoded(model.tokenizer, batch, "anchor")
        assert _decoded(model.tokenizer, batch, "positive") == [by_text[q].pair.text for q in questions]
        assert _decoded(model.tokenizer, batch, "negative_1") == [by_text[q].negatives[0].text for q in questions]
        drawn.append([by_text[q] for q in questions])
    assert drawn == unique_batches(rows, 8, seed=5) + unique_batches(rows, 8, seed=6)
    for batch in drawn:
        assert len({ex.pair.qid for ex in batch} & {"q0", "q1", "q2"}) <= 1
        for ex in batch:
            assert not ex.gold & {p for other in batch if other is not ex for p in other.pmids}


def test_dense_negatives_are_the_nearest_non_gold_documents(tiny_corpus: tuple[Path, Path], tiny_body: Path) -> None:
    """mine_hard_negatives against a direct cosine ranking of the whole store with the same model."""
    import numpy as np

    from medcite.corpus.store import DocumentStore
    from medcite.train.data import mine_questions_dense, read_bioasq

    data, store_dir = tiny_corpus
    questions = read_bioasq(data)[:4]
    model = st.SentenceTransformer(str(tiny_body), device="cpu")
    with DocumentStore.open(store_dir) as store:
        mined = mine_questions_dense(questions, store, model, negatives=2, depth=10)
        articles = list(store.iter_articles())
    docs = model.encode([a.text for a in articles], normalize_embeddings=True)
    assert [m.question.id for m in mined] == [q.id for q in questions]
    for m in mined:
        assert len(m.positives) == 2 and len(m.negatives) == 4  # negatives x gold in store
        assert not {p.pmid for p in m.negatives} & set(m.question.gold)
        query = model.encode([m.question.body], normalize_embeddings=True)[0]
        score = dict(zip([a.pmid for a in articles], docs @ query, strict=True))
        best = sorted((v for p, v in score.items() if p not in m.question.gold), reverse=True)[:4]
        np.testing.assert_allclose([score[p.pmid] for p in m.negatives], best, atol=1e-5)  # nearest first
    with DocumentStore.open(store_dir) as store:
        assert all(not m.negatives for m in mine_questions_dense(questions, store, model, negatives=0))


def test_train_encoder_with_dense_negatives(tiny_corpus: tuple[Path, Path], tiny_body: Path, tmp_path: Path) -> None:
    from medcite.errors import ConfigError
    from medcite.train.common import TrainOptions
    from medcite.train.encoder import train_encoder

    data, store = tiny_corpus
    opts = TrainOptions(epochs=1, batch_size=4, seed=2, dev_fraction=0.25, max_length=64, threads=1, lr=1e-3,
                        min_pairs=1, min_questions=3, negatives=1, negatives_from="dense")
    report = train_encoder(data, store, tmp_path / "dense", base=str(tiny_body), opts=opts)
    assert report["options"]["negatives_from"] == "dense"
    assert report["pairs"]["positive"] == 18 and report["pairs"]["hard_negatives"] == 18
    assert report["trainer"]["class"] == "SentenceTransformerTrainer"
    # the saved model card carries no training rows (BioASQ text is not ours to republish)
    card = (tmp_path / "dense" / "README.md").read_text()
    assert "Which drug treats" not in card and "salbutamol" not in card
    with pytest.raises(ConfigError, match="bm25 or dense"):
        train_encoder(data, store, tmp_path / "x", base=str(tiny_body),
                      opts=TrainOptions(negatives_from="colbert"))
