"""`medcite train ltr`, the ltr reranker built from settings, `medcite models build` and the missing-model error,
on the tiny synthetic BioASQ corpus (12 questions, 48 documents)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.corpus.store import DocumentStore
from medcite.errors import ConfigError
from medcite.pipeline.retrieval import RetrievalPipeline
from medcite.types import Topic

pytest.importorskip("lightgbm")

FAST = ["--first-stage", "bm25", "--encoders", "", "--features", "first_stage,bm25,prf,terms",
        "--min-questions", "3", "--trees", "30"]


@pytest.fixture(scope="session")
def ltr_model(tiny_corpus: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An LTR model trained (once per session, seconds) over the bm25 first stage of the tiny store."""
    data, store = tiny_corpus
    out = tmp_path_factory.mktemp("ltr") / "model"
    result = CliRunner().invoke(cli, ["--quiet", "train", "ltr", "--data", str(data), "--corpus", str(store),
                                      "--out", str(out), *FAST], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def test_train_ltr_writes_model_head_and_report(ltr_model: Path) -> None:
    assert sorted(p.name for p in ltr_model.iterdir()) == ["config.json", "model.txt", "training.json"]
    assert not [p for p in ltr_model.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    head = json.loads((ltr_model / "config.json").read_text())
    report = json.loads((ltr_model / "training.json").read_text())
    assert head["groups"] == ["first_stage", "bm25", "prf", "terms"] and head["encoders"] == []
    assert len(head["features"]) == len(report["feature_importance_gain"]) == 20
    assert set(report["metrics"]["ltr"]) == {"MAP@10", "nDCG@10", "R@100"}
    assert report["questions"]["dev_evaluated"] >= 1 and report["duplicates"]["questions"] == 12
    # the held-back questions are never trained on
    train_ids = set(report["dev_ids"])
    assert train_ids and report["questions"]["train"] + report["questions"]["early_stopping"] <= 12 - len(train_ids)


def test_train_ltr_refuses_a_used_folder_and_too_few_questions(tiny_corpus: tuple[Path, Path], ltr_model: Path,
                                                               tmp_path: Path) -> None:
    data, store = tiny_corpus
    runner = CliRunner()
    used = runner.invoke(cli, ["train", "ltr", "--data", str(data), "--corpus", str(store), "--out", str(ltr_model),
                               *FAST])
    assert used.exit_code != 0 and "not empty" in used.output
    few = runner.invoke(cli, ["train", "ltr", "--data", str(data), "--corpus", str(store), "--out",
                              str(tmp_path / "m"), *FAST[:-4], "--min-questions", "50"])
    assert few.exit_code != 0 and "would rest on too few questions" in few.output
    assert "medcite models build medcite-ltr-bioasq --bioasq" in few.output  # the snippet store's command
    assert not (tmp_path / "m").exists()


def test_ltr_reranker_from_settings_reorders_the_first_stage(tiny_corpus: tuple[Path, Path], ltr_model: Path) -> None:
    _, store_dir = tiny_corpus
    settings = load_settings("bm25", [f'rerank={json.dumps({"backend": "ltr", "model": str(ltr_model), "k": 5})}'])
    with DocumentStore.open(store_dir) as store:
        pipeline = RetrievalPipeline.from_settings(settings, store=store)
        try:
            got = pipeline.retrieve(Topic("t", "Which drug treats gout?"))
        finally:
            pipeline.close()
    first = [h.pmid for h in got.rankings["retrieval"]]
    reranked = got.rankings["rerank"]
    assert len(reranked) == 5 and {h.pmid for h in reranked} <= set(first)
    assert [h.rank for h in reranked] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in zip(reranked, reranked[1:], strict=False))
    # the gout trial documents (gold) come first
    assert {h.pmid for h in reranked[:2]} == {"1009", "1010"}


def test_a_model_trained_on_other_features_is_refused(tiny_corpus: tuple[Path, Path], ltr_model: Path,
                                                      tmp_path: Path) -> None:
    _, store_dir = tiny_corpus
    other = tmp_path / "other"
    other.mkdir()
    for f in ("model.txt", "training.json"):
        (other / f).write_bytes((ltr_model / f).read_bytes())
    head = json.loads((ltr_model / "config.json").read_text())
    (other / "config.json").write_text(json.dumps(head | {"features": head["features"][:-1]}))
    settings = load_settings("bm25", [f'rerank={json.dumps({"backend": "ltr", "model": str(other)})}'])
    with DocumentStore.open(store_dir) as store, pytest.raises(ConfigError, match="trained on features"):
        RetrievalPipeline.from_settings(settings, store=store)


def status_line(listing: str, preset: str) -> str:
    """``preset``'s line in `medcite config presets`."""
    return next(line for line in listing.splitlines() if line.startswith(f"{preset} "))


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "models"
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(folder))
    yield folder


def test_best_without_its_model_fails_before_any_work_with_the_command(tiny_corpus: tuple[Path, Path],
                                                                        models_dir: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite import trained_models

    monkeypatch.setattr(trained_models, "SHIPPED_DIR", tmp_path / "nothing-shipped")
    _, store_dir = tiny_corpus
    result = CliRunner().invoke(cli, ["search", "--preset", "best", "--corpus", str(store_dir), "gout"])
    assert result.exit_code != 0
    assert "medcite models build medcite-ltr-bioasq --bioasq" in result.output
    # nothing was built: no dense index of the store was made for a search that cannot run
    assert not list((store_dir / "indexes").glob("faiss-*")) if (store_dir / "indexes").exists() else True
    presets = CliRunner().invoke(cli, ["config", "presets"])
    line = status_line(presets.output, "best")
    assert line.endswith("[needs: medcite models build best, ~7 min]") and len(line) <= 120


@pytest.mark.slow  # a MiniLM index of the tiny store and the MiniLM features: ~15 s quiet, a minute on a busy machine
def test_models_build_best_trains_once_then_skips(tiny_corpus: tuple[Path, Path], models_dir: Path,
                                                  tmp_path: Path) -> None:
    data, store_dir = tiny_corpus
    runner = CliRunner()
    args = ["models", "build", "best", "--corpus", str(store_dir), "--data", str(data), "--min-questions", "3"]
    first = runner.invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    records = json.loads(first.stdout)
    assert [(r["model"], r["status"]) for r in records] == [("medcite-ltr-bioasq", "built")]
    model = models_dir / "medcite-ltr-bioasq"
    head = json.loads((model / "config.json").read_text())
    assert head["encoders"] == ["minilm"] and "cos_minilm" in head["features"] and head["first_stage"] == "best"
    assert not [p for p in models_dir.iterdir() if p.name.startswith(".")]
    again = runner.invoke(cli, args, catch_exceptions=False)
    assert json.loads(again.stdout)[0]["status"] == "present" and "skipped" in again.stderr
    presets = runner.invoke(cli, ["config", "presets"])
    assert status_line(presets.output, "best").endswith("[models trained here]")
    found = runner.invoke(cli, ["search", "--preset", "best", "--corpus", str(store_dir), "-k", "3",
                                "Which drug treats gout?"])
    assert found.exit_code == 0, found.output
    assert "1009" in found.output or "1010" in found.output
