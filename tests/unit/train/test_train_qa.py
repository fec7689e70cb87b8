"""`medcite train ideal` and `medcite train yesno` on tiny inline data: held-back questions are never
trained on, the reports say so, and the saved models load as the qa backend reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("lightgbm")
pytest.importorskip("rouge_score")

from medcite.qa.ideal import IdealScorer  # noqa: E402
from medcite.train.qa import YesNoTrainOptions, train_ideal, train_yesno  # noqa: E402
from medcite.train.qa_data import held_out_ids  # noqa: E402

DRUGS = ["imatinib", "aspirin", "metformin", "statins", "insulin", "warfarin", "heparin", "lithium",
         "digoxin", "morphine", "codeine", "penicillin", "tamoxifen", "cisplatin", "rituximab", "caffeine"]


def _bioasq(path: Path) -> Path:
    qs = []
    for i, drug in enumerate(DRUGS):
        yes = i % 3 != 0
        answer = f"{drug} treats the disease" if yes else f"{drug} does not treat the disease"
        qs.append({
            "id": f"q{i:02d}", "type": "yesno", "body": f"Does {drug} treat the disease?",
            "source_batch": f"9B{i % 4 + 1}",
            "documents": [f"http://www.ncbi.nlm.nih.gov/pubmed/{1000 + i}"],
            "snippets": [{"document": f"http://www.ncbi.nlm.nih.gov/pubmed/{1000 + i}", "text": t,
                          "beginSection": "abstract", "endSection": "abstract",
                          "offsetInBeginSection": 0, "offsetInEndSection": len(t)}
                         for t in (f"Background noise about {drug} and unrelated cohorts.",
                                   f"In conclusion, {answer} in adults.")],
            "ideal_answer": [f"{'Yes' if yes else 'No'}, {answer} in adults."],
            "exact_answer": "yes" if yes else "no"})
    path.write_text(json.dumps({"questions": qs}))
    return path


def _pubmedqa(path: Path) -> Path:
    data = {str(2000 + i): {"QUESTION": f"Is {d} useful?", "CONTEXTS": [f"{d} was {'useful' if i % 2 else 'useless'}."],
                            "final_decision": "yes" if i % 2 else "no"} for i, d in enumerate(DRUGS[:8])}
    path.write_text(json.dumps(data))
    return path


def test_train_ideal_holds_back_the_shared_split_and_saves_a_loadable_scorer(tmp_path: Path) -> None:
    data = _bioasq(tmp_path / "b.json")
    held = held_out_ids(data)
    assert 0 < len(held) < len(DRUGS)
    report = train_ideal(data, tmp_path / "ideal")
    assert report["questions"] == {"train": len(DRUGS) - len(held), "held_back": len(held)}
    on_disk = json.loads((tmp_path / "ideal" / "training.json").read_text())
    m = on_disk["metrics"]["held_back"]
    assert m["oracle_best_candidate"] >= m["rouge2_f1_top_candidate"] and m["oracle_best_candidate"] > 0.3
    scorer = IdealScorer.load(tmp_path / "ideal")
    assert scorer.unit == "snippet"


def test_train_yesno_on_a_tiny_encoder_reports_held_back_questions(tmp_path: Path) -> None:
    from medcite.train.yesno_baseline import load_yesno
    from tiny_models import build_tiny_bert

    base = build_tiny_bert(tmp_path / "bert")
    data = _bioasq(tmp_path / "b.json")
    report = train_yesno([data, _pubmedqa(tmp_path / "pq.json")], tmp_path / "yn", base=str(base),
                         opts=YesNoTrainOptions(max_length=32, layers=(1, 2), folds=2, threads=1))
    held = held_out_ids(data)
    assert report["questions"]["bioasq_held_back"] == len(held)
    assert report["questions"]["bioasq_train"] == len(DRUGS) - len(held)
    assert report["questions"]["pubmedqa_train"] + report["questions"]["pubmedqa_held_back"] == 8
    bio = report["metrics"]["held_back"]["bioasq"]
    assert bio["questions"] == len(held) and 0 <= bio["macro_f1"] <= 1 and "always_yes" in bio
    model = load_yesno(tmp_path / "yn")
    assert model.answer("Does imatinib treat the disease?", ["imatinib treats the disease"]) in ("yes", "no")
    assert model.head.threshold == report["threshold"]
