"""DS@GT's fine-tuned cross-encoder (paper 004 §3.2.2, §4.2.1, Table 2), trained by medcite as the paper says:
every option quoted or medcite's choice, the same options as the `medcite train reranker` command it records,
rebuilt on a slice of the shared BioASQ data by `medcite models build`'s code path and loaded as the dsgt-b*
presets' reranker; without it those presets stop with the build command."""

from __future__ import annotations

import gzip
import json
import logging
import shlex
from pathlib import Path

import pytest

from medcite import trained_models as tm
from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.pipeline import Context
from medcite.presets import provenance
from medcite.train import dsgt
from medcite.types import Article, Hit
from medcite.workflows.model_builds import BuildData, build_models, plan

DSGT = [f"dsgt-b{i}" for i in range(1, 6)]
#: a quick rebuild: 1 epoch, a few dozen pairs, short inputs, a handful of held-back questions
SLICE = {"epochs": 1, "max_pairs": 36, "max_length": 64, "max_dev": 3, "min_pairs": 5}


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(folder))
    return folder


def test_every_option_says_where_it_comes_from_and_each_quote_is_the_papers() -> None:
    paper = (provenance.papers_dir() / provenance.PAPERS["004"][0]).read_text(encoding="utf-8")
    assert set(dsgt.OPTIONS) - {"mine_depth", "warmup"} <= set(dsgt.SOURCES)  # (under negatives' and lr's choices)
    assert {"base", "loss", "dense_miner", "questions"} <= set(dsgt.SOURCES)
    for key, source in dsgt.SOURCES.items():
        if "quote" in source:
            assert source["paper"] == "004" and source["where"], key
            assert provenance.quote_found(source["quote"], paper), f"{key}: {source['quote']!r} is not in 004"
        else:
            assert source["choice"].startswith(("the paper", "medcite")) or "paper" in source["choice"], key
    assert dsgt.OPTIONS["epochs"] == 3 and "3 epochs" in dsgt.SOURCES["epochs"]["quote"]
    assert dsgt.OPTIONS["negatives_from"] == "dense" and "querying the index" in dsgt.SOURCES["negatives_from"]["quote"]
    assert dsgt.BASE == "cross-encoder/ms-marco-MiniLM-L-12-v2" and dsgt.INDEX_ENCODER == "BAAI/bge-large-en"


def test_the_recorded_train_reranker_command_is_the_recipe(tiny_corpus: tuple[Path, Path]) -> None:
    """The `medcite train reranker` command in training.json parses (real CLI) to exactly the recipe's options."""
    import click

    from medcite.cli.main import cli
    from medcite.cli.train import _options

    def parse(command: str) -> click.Context:  # the real CLI's parse, down to the leaf command (nothing runs)
        args = shlex.split(command)[1:]
        ctx = cli.make_context("medcite", args)
        while isinstance(ctx.command, click.Group):
            name, sub, rest = ctx.command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
            assert sub is not None
            ctx = sub.make_context(name, rest, parent=ctx)
        return ctx

    for miner, overrides in (("minilm", None), ("BAAI/bge-large-en", SLICE)):
        opts = dsgt.recipe_options(miner, 7, overrides)
        command = dsgt.train_command(tiny_corpus[0], tiny_corpus[1], "OUT", dsgt.BASE, opts)
        ctx = parse(command)
        assert ctx.command.name == "reranker" and ctx.params["base"] == dsgt.BASE
        assert _options(ctx.params, negatives=ctx.params["negatives"]) == opts
        assert shlex.split(command)[:3] == ["medcite", "train", "reranker"]


def _slice(src: Path, out: Path, n: int = 30) -> Path:
    """The ``n`` most recent questions of the shared BioASQ file with at most 4 gold documents (whole: snippets,
    gold documents), so a question brings at most 16 pairs and the cap of a few dozen holds a few questions."""
    from medcite.train.data import batch_order

    with gzip.open(src, "rt", encoding="utf-8") as fh:
        questions = [q for q in json.load(fh)["questions"] if len(q.get("documents") or []) <= 4]
    recent = sorted(questions, key=lambda q: (batch_order(q.get("source_batch")), q["id"]), reverse=True)[:n]
    out.write_text(json.dumps({"questions": recent}), encoding="utf-8")
    return out


@pytest.mark.slow  # trains a small model: about half a minute on 2 busy cores
def test_rebuilt_on_a_slice_it_trains_and_loads_as_the_presets_reranker(
        shared_data: Path, models: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _slice(shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz", tmp_path / "slice.json")
    caplog.set_level(logging.INFO, logger="medcite")
    said: list[str] = []
    records = build_models(["dsgt-b1"], BuildData({"bioasq": data}, None, min_questions=3, reranker_options=SLICE),
                           echo=said.append)
    assert [r["model"] for r in records] == [dsgt.MODEL] and records[0]["status"] == "built"
    folder, source = tm.locate(dsgt.MODEL)
    assert source == tm.TRAINED_HERE and folder == models / dsgt.MODEL
    # announced before it starts: the estimate of the catalogue, the stand-in, then the measured time
    assert any(f"{dsgt.MODEL} (dsgt-cross-encoder" in m and "about 380 min" in m for m in said)
    logged = caplog.text
    assert "the packaged all-MiniLM-L6-v2 stands in for it" in logged and "not the paper's" in logged
    assert "pairs/s (measured here on a few batches" in logged
    report = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    recipe = report["recipe"]
    assert recipe["base"]["wanted"] == dsgt.BASE
    assert "not in this machine's Hugging Face cache" in recipe["base"]["stand_in"]
    assert recipe["negatives_miner"]["wanted"] == dsgt.INDEX_ENCODER and recipe["negatives_miner"]["stand_in"]
    assert recipe["overrides"] == SLICE and recipe["sources"] == dsgt.SOURCES
    assert "--base minilm" in recipe["train_command"] and "--dense-miner minilm" in recipe["train_command"]
    assert report["command"] == f"medcite models build {dsgt.MODEL} --bioasq {data} --min-questions 3"
    assert report["options"]["epochs"] == 1 and report["options"]["negatives_from"] == "dense"
    assert 0 < report["pairs"]["total"] <= SLICE["max_pairs"] and report["seconds"]["pairs_per_second_measured"] > 0
    # the dsgt presets load it as their cross-encoder (no stand-in, no fallback) and it reranks
    settings = load_settings("dsgt-b1")
    tm.check_present(settings)
    articles = {"1": Article("1", "BRCA1 in ovarian cancer", "BRCA1 mutations cause ovarian cancer."),
                "2": Article("2", "Zebrafish fins", "Zebrafish fins regenerate in days.")}
    with Context(settings) as ctx:
        reranker = ctx.build("rerank", settings.rerank)
        assert reranker is not None
        ranked = reranker.rerank("Which genes are mutated in ovarian cancer?", [Hit("2", 1.0), Hit("1", 0.5)],
                                 articles, 2)
    assert sorted(h.pmid for h in ranked) == ["1", "2"] and ranked[0].score != ranked[1].score
    # built once: a second build skips it
    again = build_models(["dsgt-b3"], BuildData({"bioasq": data}, None, min_questions=3), echo=said.append)
    assert again[0]["status"] == "present"


def test_where_the_hub_answers_its_models_are_used_and_no_stand_in_is_recorded(
        tiny_corpus: tuple[Path, Path], tiny_body: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fetched: list[str] = []

    def hub(name: str, what: str) -> str:
        fetched.append(name)
        return str(tiny_body)  # a tiny local model stands for what the hub would hand over

    monkeypatch.setattr(dsgt, "hub_folder", hub)
    data, store = tiny_corpus
    report = dsgt.train_dsgt(data, store, tmp_path / "ce", min_questions=3,
                             overrides={**SLICE, "max_pairs": 24, "min_pairs": 1, "dev_fraction": 0.25})
    assert fetched == [dsgt.BASE, dsgt.INDEX_ENCODER]
    recipe = report["recipe"]
    assert recipe["base"] == {"wanted": dsgt.BASE, "used": dsgt.BASE, "stand_in": None}
    assert recipe["negatives_miner"]["stand_in"] is None
    assert f"--base {dsgt.BASE}" in recipe["train_command"]
    assert f"--dense-miner {dsgt.INDEX_ENCODER}" in recipe["train_command"]
    assert report["base"] == str(tiny_body) and report["options"]["dense_miner"] == str(tiny_body)
    assert json.loads((tmp_path / "ce" / "training.json").read_text())["recipe"] == recipe


def test_the_presets_need_it_and_stop_with_the_build_command_without_it(models: Path) -> None:
    for name in DSGT:
        assert plan([name]) == [(dsgt.MODEL, name)]
        with pytest.raises(ConfigError) as err:
            tm.check_present(load_settings(name))
        assert f"medcite models build {dsgt.MODEL} --bioasq" in (err.value.hint or "")
    settings = load_settings("dsgt-b1")
    with pytest.raises(ConfigError) as err, Context(settings) as ctx:
        ctx.build("rerank", settings.rerank)  # never the hub's base model in its place
    assert f"medcite models build {dsgt.MODEL}" in (err.value.hint or "")
    assert plan([dsgt.MODEL]) == [(dsgt.MODEL, "dsgt-b1")]


def test_medcite_train_reranker_recipe_dsgt(tiny_corpus: tuple[Path, Path], tiny_body: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from medcite.cli.main import cli

    monkeypatch.setattr(dsgt, "hub_folder", lambda name, what: str(tiny_body))
    data, store = tiny_corpus
    base = ["-q", "train", "reranker", "--recipe", "dsgt", "--data", str(data), "--corpus", str(store)]
    clash = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "x"), "--epochs", "1", "--lr", "1e-4"])
    assert clash.exit_code == 2 and "--recipe dsgt sets --epochs, --lr itself" in clash.output
    out = tmp_path / "cli"
    done = CliRunner().invoke(cli, [*base, "--out", str(out), "--max-pairs", "24", "--min-pairs", "1",
                                    "--min-questions", "3", "--threads", "1"])
    assert done.exit_code == 0, done.output
    report = json.loads((out / "training.json").read_text())
    assert report["options"]["epochs"] == 3 and report["options"]["negatives_from"] == "dense"
    assert report["recipe"]["overrides"] == {"max_pairs": 24, "threads": 1, "min_pairs": 1}
    assert report["recipe"]["train_command"].endswith("--max-pairs 24 --threads 1")


def test_the_recipe_reads_its_hub_models_from_the_cache_and_never_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43: the build reaches no network; a model the cache lacks is said with the command that fetches it on a
    machine with internet (as `medcite models list` says it), and the packaged MiniLM stands in."""
    import huggingface_hub

    calls: list[dict[str, object]] = []

    def offline(name: str, **kw: object) -> str:
        calls.append({"name": name, **kw})
        raise huggingface_hub.errors.LocalEntryNotFoundError("not in the cache")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    got = dsgt.resolve(dsgt.BASE, "base cross-encoder")
    assert got.use == dsgt.STAND_IN and got.stand_in is not None
    assert f"hf download {dsgt.BASE}" in got.stand_in and "on a machine with internet" in got.stand_in
    assert calls and all(c["local_files_only"] is True for c in calls)


def test_models_list_names_the_recipes_hub_models() -> None:
    from medcite.presets.inventory import inventory

    found = {e.name: e for e in inventory(["dsgt-b1"])}
    for name in (dsgt.BASE, dsgt.INDEX_ENCODER):
        assert "medcite models build dsgt-b1" in found[name].used_by
        assert "on a machine with internet" in found[name].command or found[name].source == "hub cache"
