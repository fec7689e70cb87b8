"""``medcite train answer``: the answer-sentence scorer of the offline preset (evidence ``answer-sentences``).

Split by question with :func:`medcite.train.qa_data.held_out_ids` (the split every medcite trainer and
``benchmarks/bench_offline_answer.py`` use): trained on the other questions only, reported on the held-back
ones in ``training.json``.

The documents of a question are its gold articles rebuilt from the gold snippets
(:func:`medcite.train.bioasq_docs.snippet_articles`, the documents of medcite's BioASQ snippet store), in gold
order, with :data:`DISTRACTORS` gold articles of other questions put among them at seeded places, as a
retrieval run would (so retrieval rank and key-concept features see off-topic documents). Every candidate
sentence (:func:`medcite.evidence.answer_features.answer_candidates`) gets its features and as label its
ROUGE-2 F1 (rouge-score, stemmer) to the best of the question's ideal answers; a LightGBM regressor learns
the label. Held-back report: ROUGE-2 F1 of the top-scored sentence, of the first candidate and of the one
most TF-IDF-similar to the question, and the best candidate (oracle).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io import read_bioasq_questions
from ..registry import require
from ..types import Article, Hit, Question
from .common import out_folder, write_report
from .qa_data import held_out_ids, read_qa, split_qa

log = logging.getLogger(__name__)

DISTRACTORS = 4
DOCS = 10
LGBM_PARAMS = {"n_estimators": 500, "learning_rate": 0.03, "num_leaves": 15, "min_child_samples": 30,
               "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8}


def question_hits(q: Question, pool: Sequence[str], articles: dict[str, Article], rng: random.Random
                  ) -> list[Hit]:
    """Gold articles of ``q`` in gold order with distractors from ``pool`` put among them (scores descending)."""
    gold = [p for p in dict.fromkeys(q.documents) if p in articles][: DOCS - DISTRACTORS]
    others = [p for p in rng.sample(list(pool), min(len(pool), DISTRACTORS * 3)) if p not in gold][:DISTRACTORS]
    order = list(gold)
    for p in others:
        order.insert(rng.randint(1, len(order)) if order else 0, p)
    return [Hit(p, float(len(order) - i), i + 1) for i, p in enumerate(order)]


def answer_rows(questions: Sequence[Question], articles: dict[str, Article], seed: int = 13
                ) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(question id, features, labels, TF-IDF similarity to the question) per question with candidates."""
    from ..evidence.answer_features import ANSWER_FEATURES, answer_candidates, answer_features
    from ..evidence.concepts import key_concepts, question_type

    rouge = require("rouge_score.rouge_scorer", "eval", "labelling answer-sentence candidates")
    scorer = rouge.RougeScorer(["rouge2"], use_stemmer=True)
    rng = random.Random(seed)
    pool = sorted(articles)
    out = []
    for q in questions:
        if not q.ideal_answers:
            continue
        cands = answer_candidates(question_hits(q, pool, articles, rng), articles, DOCS)
        if not cands:
            continue
        x, _ = answer_features(q.body, question_type(q.body), cands, key_concepts(q.body))
        y = np.array([max(scorer.score(r, c.text)["rouge2"].fmeasure for r in q.ideal_answers) for c in cands])
        out.append((q.id, x, y, x[:, ANSWER_FEATURES.index("tfidf_question")]))
    return out


def train_answer(data: str | Path, out: str | Path, *, seed: int = 13, limit: int | None = None) -> dict[str, object]:
    """Train the answer-sentence scorer on the training questions of a BioASQ file; write it to ``out``."""
    from ..evidence.answer_features import ANSWER_FEATURE_VERSION, ANSWER_FEATURES
    from ..evidence.answer_scorer import AnswerScorer
    from .bioasq_docs import snippet_articles

    lgb = require("lightgbm", "train", "training the answer-sentence scorer")
    t0 = time.perf_counter()
    raw = read_bioasq_questions(Path(data))
    articles = {a.pmid: a for a in snippet_articles(raw)}
    train, held = split_qa(read_qa(data), held_out_ids(data))
    if limit is not None:
        train, held = train[:limit], held[: max(1, limit // 4)]
    rows = answer_rows(train, articles, seed)
    held_rows = answer_rows(held, articles, seed + 1)
    if not rows:
        raise InputError("no training question has gold snippets and an ideal answer", path=str(data))
    x = np.vstack([r[1] for r in rows])
    y = np.concatenate([r[2] for r in rows])
    model = lgb.LGBMRegressor(**LGBM_PARAMS, random_state=seed, n_jobs=1, verbose=-1).fit(x, y)
    folder = out_folder(out)
    scorer = AnswerScorer(model.booster_, ANSWER_FEATURES, {"trained_questions": len(rows)})
    scorer.save(folder)

    def mean(values: list[float]) -> float:
        return round(float(np.mean(values)), 4) if values else 0.0

    top = [float(r[2][int(np.argmax(scorer.score(r[1])))]) for r in held_rows]
    first = [float(r[2][0]) for r in held_rows]
    tfidf = [float(r[2][int(np.argmax(r[3]))]) for r in held_rows]
    report = {"kind": "answer", "data": str(data), "split": "medcite.train.qa_data.held_out_ids (held-back "
              "questions never trained on)", "documents": f"gold snippet articles + {DISTRACTORS} distractors",
              "params": LGBM_PARAMS, "seed": seed, "feature_version": ANSWER_FEATURE_VERSION,
              "questions": {"train": len(rows), "held_back": len(held_rows)}, "candidates": int(len(y)),
              "seconds": round(time.perf_counter() - t0, 1),
              "metrics": {"held_back": {"rouge2_f1_top_sentence": mean(top),
                                        "rouge2_f1_first_sentence": mean(first),
                                        "rouge2_f1_tfidf_top_sentence": mean(tfidf),
                                        "oracle_best_sentence": mean([float(r[2].max()) for r in held_rows])}},
              "feature_importance": dict(sorted(((f, int(v)) for f, v in zip(ANSWER_FEATURES,
                                                                              model.feature_importances_,
                                                                              strict=True)),
                                                key=lambda kv: -kv[1])[:15])}
    write_report(folder, report)
    return report
