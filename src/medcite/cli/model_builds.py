"""``medcite models build``: train every model a preset needs, in need order, skipping those present.

It sits in ``cli`` because it joins two layers that otherwise never meet: the retrieval pipeline (the first
stage an LTR model reorders) and the trainers (which import reranker backends).

Each model is trained into a temporary sibling folder and renamed into place when done, so a run that is
stopped leaves no folder that a later run (or a preset) would take for a finished model: building again
resumes with the models still missing. The recipes are the options of the measured models
(docs/BENCHMARKS.md); every run's options are in its ``training.json``.

The training store: the user's store when it holds the BioASQ gold articles of at least ``min_questions``
training questions; otherwise (or with no store given) medcite's own store of documents rebuilt from the
training file's gold snippets (:mod:`medcite.train.bioasq_docs`), kept at
``<models dir>/../training/bioasq-<hash of the file>`` and reused. The LTR features are query-document features,
so a model trained there is applied to any store; ``training.json`` names the store it was trained on.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import load_settings
from ..corpus.store import DocumentStore
from ..errors import ConfigError, InputError
from ..paths import models_dir
from ..pipeline.retrieval import RetrievalPipeline
from ..train.bioasq_docs import data_hash, is_complete, snippet_store
from ..train.data import read_bioasq
from ..trained_models import CATALOGUE, build_order, folder, is_present, retrieval_models
from ..types import Hit, Topic

log = logging.getLogger(__name__)

Echo = Callable[[str], None]


@contextmanager
def first_stage_pipeline(preset: str, store: DocumentStore) -> Iterator[tuple[Callable[[str], list[Hit]], Any, str]]:
    """The first stage of ``preset`` (its reranker switched off) over ``store``: (question -> fused hits, the
    build context the LTR features share, the first stage's settings hash)."""
    settings = load_settings(preset, ["rerank.backend=none"])
    pipeline = RetrievalPipeline.from_settings(settings, store=store)
    try:
        def run(text: str) -> list[Hit]:
            return pipeline.retrieve(Topic("q", text)).rankings["retrieval"]

        yield run, pipeline.context, settings.hash()
    finally:
        pipeline.close()


def _train_ltr(name: str, preset: str, data: Path, store_path: Path, out: Path, **options: Any) -> dict[str, Any]:
    """An LTR model reordering ``preset``'s own first stage (for ``best``: hybrid BM25 + packaged MiniLM)."""
    from ..train.ltr import LTROptions, train_ltr

    top_n = load_settings(preset).rerank.top_n  # the candidates the preset's reranker will read
    with DocumentStore.open(store_path) as store, first_stage_pipeline(preset, store) as (run, ctx, h):
        opts = LTROptions(first_stage=preset, **({"top_n": top_n} | options))
        return train_ltr(data, store, out, run, ctx, opts, first_stage_hash=h)


def _train_encoder(name: str, preset: str, data: Path, store_path: Path, out: Path, **options: Any) -> dict[str, Any]:
    from ..train.common import TrainOptions
    from ..train.encoder import train_encoder

    if name == "medcite-minilm-bi-bioasq":
        opts = TrainOptions(epochs=1, batch_size=32, lr=3e-5, negatives=1, max_dev=20, max_length=128, seed=13)
    else:  # the cross-encoder's base
        opts = TrainOptions(epochs=1, batch_size=32, lr=3e-5, negatives=0, max_pairs=4000, max_dev=20,
                            max_length=128, seed=13)
    return train_encoder(data, store_path, out, base="minilm", opts=opts)


def _train_reranker(name: str, preset: str, data: Path, store_path: Path, out: Path, **options: Any
                    ) -> dict[str, Any]:
    from ..train.common import TrainOptions
    from ..train.reranker import train_reranker

    opts = TrainOptions(epochs=1, batch_size=16, lr=5e-5, negatives=3, max_pairs=10000, max_dev=20, max_length=128,
                        seed=13)
    return train_reranker(data, store_path, out, base=str(folder("medcite-minilm-bi-bioasq-ce-base")), opts=opts)


RECIPES: dict[str, Callable[..., dict[str, Any]]] = {
    "ltr": _train_ltr, "bi-encoder": _train_encoder, "cross-encoder": _train_reranker,
}


def plan(presets: list[str]) -> list[tuple[str, str]]:
    """(model, preset that needs it) in build order, each model once."""
    out: dict[str, str] = {}
    for preset in presets:
        settings = load_settings(preset)
        for name in build_order(retrieval_models(settings)):
            out.setdefault(name, preset)
    return list(out.items())


def training_store_folder(data: Path) -> Path:
    """Where the snippet store of the training file ``data`` lives: beside the models folder."""
    return models_dir().parent / "training" / f"bioasq-{data_hash(data)}"


def training_store(data: Path, store_path: Path | None, min_questions: int, echo: Echo = log.info) -> Path:
    """The store to train on: ``store_path`` when it holds gold for ``min_questions`` training questions, else
    the snippet store of ``data`` (built once, see the module doc)."""
    questions = read_bioasq(data)
    if store_path is not None:
        with DocumentStore.open(store_path) as store:  # a missing store fails here, before any training
            found = sum(1 for q in questions if store.existing(q.gold))
        if found >= min_questions:
            return store_path
        where = f"the store {store_path} holds gold for {found:,} of {len(questions):,} training questions"
    else:
        where = "no store given"
    target = training_store_folder(data)
    if not is_complete(target):
        echo(f"{where}: building medcite's BioASQ snippet store at {target}")
    folder_, n = snippet_store(data, target)
    echo(f"{where}: training on medcite's BioASQ snippet store {folder_} ({n:,} documents; the model is then "
         "applied to your store)")
    return folder_


def build_models(presets: list[str], data: Path, store_path: Path | None, *, echo: Echo = log.info,
                 ltr_options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Train the missing models of ``presets``; returns one record per model (skipped, built).

    ``store_path``: the user's store, trained on when it holds enough BioASQ gold articles (else, or when None,
    the snippet store of ``data``: :func:`training_store`). ``ltr_options``: fields of
    :class:`medcite.train.ltr.LTROptions` for the LTR models (tests, benchmarks)."""
    todo = plan(presets)
    unknown = [n for n, _ in todo if n not in CATALOGUE]
    if unknown:
        raise ConfigError(f"no recipe to build {', '.join(unknown)}",
                          hint="train it with its `medcite train` command (docs/MODELS.md)")
    if not Path(data).is_file():
        raise InputError(f"no BioASQ training file at {data}", hint="give one with --data BIOASQ.json.gz")
    records: list[dict[str, Any]] = []
    missing = [(n, p) for n, p in todo if not is_present(n)]
    if store_path is not None:
        DocumentStore.open(store_path).close()  # a missing store fails here, before any training
    if missing:
        min_questions = int((ltr_options or {}).get("min_questions", 20))
        store_path = training_store(Path(data), None if store_path is None else Path(store_path), min_questions,
                                    echo)
    total = sum(CATALOGUE[n].minutes for n, _ in missing)
    if missing:
        echo(f"{len(missing)} model(s) to train, about {total} min on 2 cores: {', '.join(n for n, _ in missing)}")
    left = total
    for i, (name, preset) in enumerate(todo, start=1):
        spec = CATALOGUE[name]
        out = folder(name)
        if is_present(name):
            echo(f"[{i}/{len(todo)}] {name}: present at {out}, skipped")
            records.append({"model": name, "status": "present", "folder": str(out)})
            continue
        if out.exists():  # an unfinished folder (files missing): trained again from scratch
            echo(f"[{i}/{len(todo)}] {name}: {out} is incomplete, training it again")
            shutil.rmtree(out)
        echo(f"[{i}/{len(todo)}] {name} ({spec.kind}: {spec.description}), about {spec.minutes} min; "
             f"about {left} min left in all")
        started = time.perf_counter()
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=out.parent))
        try:
            options = (ltr_options or {}) if spec.kind == "ltr" else {}
            assert store_path is not None  # chosen above whenever a model is missing
            report = RECIPES[spec.kind](name, preset, Path(data), Path(store_path), tmp / "model", **options)
            os.replace(tmp / "model", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        left -= spec.minutes
        seconds = round(time.perf_counter() - started, 1)
        echo(f"[{i}/{len(todo)}] {name}: done in {seconds} s, at {out}")
        records.append({"model": name, "status": "built", "folder": str(out), "seconds": seconds,
                        "store": str(store_path), "metrics": report.get("metrics")})
    return records
