"""`medcite train stance` on a tiny encoder: claims held back, the report, the saved head loads as a backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from medcite.errors import ConfigError  # noqa: E402
from medcite.train.stance import StanceTrainOptions, stance_metrics, train_stance  # noqa: E402

CLAIMS = ["statins lower ldl", "malaria kills children", "cpap treats sleep apnea", "masks reduce spread",
          "vitamin d prevents fractures", "zinc shortens colds", "aspirin prevents strokes", "coffee harms hearts"]


def _csv(path: Path) -> Path:
    rows = ["id,claim,evidence,label,extra"]
    n = 0
    for claim in CLAIMS:
        for evidence, label in ((f"Trials show {claim}.", "Supports"), (f"Trials show it is not true that {claim}.",
                                "Refutes"), ("Filler text about something else entirely.", "Neutral")):
            rows.append(f'{n},"{claim}","{evidence}",{label},x')
            n += 1
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from tiny_models import build_tiny_bert

    tmp = tmp_path_factory.mktemp("stance")
    base = build_tiny_bert(tmp / "bert")
    report = train_stance(_csv(tmp / "hv.csv"), tmp / "model", base=str(base),
                          opts=StanceTrainOptions(dev_fraction=0.25, seed=3, folds=2, threads=1,
                                                        layers=(1, 2)))
    return tmp / "model", report


def test_report_holds_back_claims_and_scores_them(trained: tuple[Path, dict]) -> None:
    folder, report = trained
    on_disk = json.loads((folder / "training.json").read_text())
    assert on_disk["claims"] == {"train": 6, "held_back": 2} == report["claims"]
    held = on_disk["metrics"]["held_back"]
    assert held["pairs"] == 6 and set(held["per_class_f1"]) == {"supports", "contradicts", "neutral"}
    matrix = held["confusion_matrix"]["rows_gold_columns_predicted"]
    assert np.array(matrix).sum() == 6 and [sum(r) for r in matrix] == [2, 2, 2]
    assert held["macro_f1"] == pytest.approx(np.mean(list(held["per_class_f1"].values())), abs=1e-4)
    assert on_disk["metrics"]["majority_baseline"]["macro_f1"] == pytest.approx(1 / 6, abs=1e-3)
    assert set(on_disk["cv_macro_f1_by_c"]) and on_disk["c"] > 0
    assert (folder / "config.json").is_file() and (folder / "stance_head.json").is_file()


def test_saved_head_scores_like_the_fitted_model(trained: tuple[Path, dict]) -> None:
    """The numpy head reproduces the classifier it was exported from: same features -> same probabilities."""
    from sklearn.linear_model import LogisticRegression
    from transformers import AutoModel, AutoTokenizer

    from medcite.attribute.probe import Featurizer, LinearHead

    folder, _ = trained
    head = LinearHead.load(folder)
    feats = Featurizer(AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval(), head.spec)
    x = feats(["statins lower ldl", "zinc shortens colds"], ["Trials show statins lower ldl.", "Filler text."])
    probs = head.probabilities(x)
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1.0)
    clf = LogisticRegression()
    clf.classes_ = np.array([0, 1, 2])
    clf.coef_, clf.intercept_ = head.coef, head.intercept
    assert np.allclose(probs, clf.predict_proba((x - head.mean) / head.scale), atol=1e-9)


def test_trained_folder_is_the_classifier_backend(trained: tuple[Path, dict]) -> None:
    from medcite.pipeline import build_stage
    from medcite.types import Article

    folder, _ = trained
    clf = build_stage("stance", {"backend": "classifier", "model": str(folder)})
    text = "Trials show statins lower ldl. Filler text about something else entirely."
    (v,) = clf.classify([("statins lower ldl", text)])
    assert sum(dict(v.scores).values()) == pytest.approx(1.0, abs=1e-6)
    assert text[v.start:v.end] in (text, "Trials show statins lower ldl.", "Filler text about something else entirely.")
    (a,) = clf.classify_articles([("statins lower ldl", Article("1", "Statins", text))])
    assert a.section in ("title", "abstract")


def test_a_damaged_head_is_refused(trained: tuple[Path, dict], tmp_path: Path) -> None:
    import shutil

    from medcite.attribute.probe import LinearHead

    copy = Path(shutil.copytree(trained[0], tmp_path / "copy"))
    data = json.loads((copy / "stance_head.json").read_text())
    data["coef"] = data["coef"][:2]
    (copy / "stance_head.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="not a readable stance head"):
        LinearHead.load(copy)


def test_metrics_by_hand() -> None:
    m = stance_metrics([0, 0, 1, 2], [0, 1, 1, 2])
    # supports: P 1, R .5 -> .6667; contradicts: P .5, R 1 -> .6667; neutral 1
    assert m["per_class_f1"] == {"supports": 0.6667, "contradicts": 0.6667, "neutral": 1.0}
    assert m["macro_f1"] == pytest.approx(0.7778, abs=1e-4) and m["accuracy"] == 0.75
    assert m["confusion_matrix"]["rows_gold_columns_predicted"] == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="epochs"):
        StanceTrainOptions(epochs=-1).check()
    with pytest.raises(ConfigError, match="dev fraction"):
        StanceTrainOptions(dev_fraction=1.0).check()


def test_cli_trains_and_reports(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from medcite.cli.main import cli
    from tiny_models import build_tiny_bert

    base = build_tiny_bert(tmp_path / "bert")
    res = CliRunner().invoke(cli, ["train", "stance", "--data", str(_csv(tmp_path / "hv.csv")), "--out",
                                   str(tmp_path / "m"), "--base", str(base), "--c", "0.01", "--threads", "1",
                                   "--layers", "1,2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["claims"]["held_back"] == 2 and "macro_f1" in out["metrics"]["held_back"]
    again = CliRunner().invoke(cli, ["train", "stance", "--data", str(tmp_path / "hv.csv"), "--out",
                                     str(tmp_path / "m"), "--base", str(base), "--layers", "1,2"])
    assert again.exit_code != 0 and "not empty" in again.output


def test_fine_tuning_writes_a_labelled_sequence_classifier(tmp_path: Path) -> None:
    """--epochs 1: the whole encoder is trained; the folder is an ordinary 3-way model the nli/classifier
    backend loads by its label names."""
    from transformers import AutoConfig

    from medcite.pipeline import build_stage
    from tiny_models import build_tiny_bert

    base = build_tiny_bert(tmp_path / "bert")
    report = train_stance(_csv(tmp_path / "hv.csv"), tmp_path / "ft", base=str(base),
                          opts=StanceTrainOptions(epochs=1, batch_size=4, lr=1e-3, seed=3, threads=1))
    assert report["recipe"].startswith("fine-tuned") and report["steps"] > 0 and report["loss"]
    assert not (tmp_path / "ft" / "stance_head.json").exists()
    config = AutoConfig.from_pretrained(tmp_path / "ft")
    assert [config.id2label[i] for i in range(3)] == ["supports", "contradicts", "neutral"]
    assert report["metrics"]["held_back"]["pairs"] == 6
    clf = build_stage("stance", {"backend": "classifier", "model": str(tmp_path / "ft")})
    (v,) = clf.classify([("statins lower ldl", "Trials show statins lower ldl.")])
    assert sum(dict(v.scores).values()) == pytest.approx(1.0, abs=1e-6)
