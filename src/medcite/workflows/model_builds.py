"""``medcite models build``: train the models a preset needs, or named models, into the models folder.

It is a workflow (above ``pipeline`` and ``train``) because it joins layers that otherwise never meet: the
retrieval pipeline (the first stage an LTR model reorders) and the trainers (which import reranker backends).

Every model of :data:`medcite.trained_models.CATALOGUE` has a recipe here: the options of the measured (and, for
the small ones, shipped) model. A model built here lands in the models folder, where it takes precedence over
the shipped one; one already trained here is skipped unless ``force``. Each model is trained into a temporary
sibling folder and renamed into place when done, so a stopped run leaves no folder that a later run (or a
preset) would take for a finished model. ``training.json`` records the exact command.

The training store of the retrieval models (LTR, bi-encoders, cross-encoder): the user's store when it holds the
BioASQ gold articles of at least ``min_questions`` training questions; otherwise (or with no store given)
medcite's own store of documents rebuilt from the training file's gold snippets
(:mod:`medcite.train.bioasq_docs`), kept at ``<models dir>/../training/bioasq-<hash of the file>`` and reused.
The LTR features are query-document features, so a model trained there is applied to any store;
``training.json`` names the store it was trained on.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..bases import install as install_base
from ..config import load_settings, preset_names
from ..corpus.store import DocumentStore
from ..errors import ConfigError, InputError
from ..io import JSONObject
from ..paths import models_dir
from ..pipeline.context import Context
from ..pipeline.retrieval import RetrievalPipeline
from ..train.bioasq_docs import data_hash, is_complete, snippet_store
from ..train.data import read_bioasq
from ..trained_models import (
    CATALOGUE,
    DATA,
    OPTIONAL_DATA,
    TrainedModel,
    build_order,
    folder,
    is_trained_here,
    refs,
    retrieval_models,
    strip_prefix,
)
from ..types import Hit, Topic

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

Echo = Callable[[str], None]


@dataclass
class BuildData:
    """What the recipes read: the data files (by kind, see :data:`medcite.trained_models.DATA`), the user's store
    and the rule that decides whether it is trained on."""

    files: dict[str, Path] = field(default_factory=dict)
    corpus: Path | None = None
    min_questions: int = 20
    ltr_options: JSONObject = field(default_factory=dict)
    #: changes to the DS@GT cross-encoder recipe's TrainOptions (a quick rebuild on a slice: epochs, max_pairs,
    #: max_dev, min_pairs); recorded in its training.json as ``recipe.overrides``
    reranker_options: JSONObject = field(default_factory=dict)

    def file(self, kind: str, model: str) -> Path:
        path = self.files.get(kind)
        if path is None or not Path(path).exists():
            raise InputError(f"{model} is trained on {kind.replace('_', ' ')} data, and none was given"
                             + (f" ({path} does not exist)" if path else ""),
                             hint=f"give it with --{kind.replace('_', '-')} {DATA[kind][1]}")
        return Path(path)

    def optional(self, kind: str, model: str) -> Path | None:
        return self.file(kind, model) if kind in self.files else None


@contextmanager
def first_stage_pipeline(preset: str, store: DocumentStore
                         ) -> Iterator[tuple[Callable[[str], list[Hit]], BuildContext, str]]:
    """The first stage of ``preset`` (its reranker switched off) over ``store``: (question -> fused hits, the
    build context the LTR features share, the first stage's settings hash)."""
    settings = load_settings(preset, ["rerank.backend=none"])
    with Context(settings, store) as ctx:
        pipeline = RetrievalPipeline.from_settings(settings, store=store, context=ctx)
        try:
            def run(text: str) -> list[Hit]:
                return pipeline.retrieve(Topic("q", text)).rankings["retrieval"]

            yield run, ctx, settings.hash()
        finally:
            pipeline.close()


def _train_stance(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    from ..train.stance import StanceTrainOptions, train_stance

    return train_stance(data.file("healthver", spec.name), out, base="minilm", opts=StanceTrainOptions())


def _train_yesno(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    from ..train.qa import YesNoTrainOptions, train_yesno

    files = [data.file("bioasq", spec.name)] + ([data.file("pubmedqa", spec.name)] if "pubmedqa" in data.files
                                                 else [])
    return train_yesno(files, out, base="minilm", opts=YesNoTrainOptions())


def _train_reader(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    from ..train.reader import shipped_options, train_reader

    extra = data.optional("bioasq_extra", spec.name)
    # the checkpoint lives beside the models folder (not in the temporary build folder), so a stopped build
    # resumes after its last finished epoch; the bottom states are cached under the cache folder
    return train_reader(out, bioasq=data.file("bioasq", spec.name),
                        pubmedqa=data.optional("pubmedqa", spec.name),
                        healthver=data.file("healthver", spec.name), opts=shipped_options(),
                        checkpoint=folder(spec.name).parent / f".{spec.name}.checkpoint.pt",
                        bioasq_extra=[extra] if extra else [], stance_dir=data.optional("stance_sets", spec.name))


def _train_ideal(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    from ..train.qa import train_ideal

    return train_ideal(data.file("bioasq", spec.name), out)


def _train_answer(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path
                  ) -> JSONObject:
    """The answer-sentence scorer, on the gold snippet articles (the documents of the snippet store)."""
    from ..train.answer import train_answer

    return train_answer(data.file("bioasq", spec.name), out)


def _train_ltr(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    """An LTR model reordering ``preset``'s own first stage (for ``best``: hybrid BM25 + packaged MiniLM)."""
    from ..train.ltr import LTROptions, train_ltr

    assert store is not None  # chosen by build_models for every model that reads a store
    top_n = load_settings(preset).rerank.top_n  # the candidates the preset's reranker will read
    options = {"top_n": top_n, "min_questions": data.min_questions} | data.ltr_options
    with DocumentStore.open(store) as opened, first_stage_pipeline(preset, opened) as (run, ctx, h):
        opts = LTROptions(first_stage=preset, **options)
        return train_ltr(data.file("bioasq", spec.name), opened, out, run, ctx, opts, first_stage_hash=h)


def _train_encoder(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    from ..train.common import TrainOptions
    from ..train.encoder import train_encoder

    assert store is not None
    negatives, max_pairs = (1, None) if spec.name == "medcite-minilm-bi-bioasq" else (0, 4000)  # else: the CE base
    opts = TrainOptions(epochs=1, batch_size=32, lr=3e-5, negatives=negatives, max_pairs=max_pairs, max_dev=20,
                        max_length=128, seed=13, min_questions=data.min_questions)
    return train_encoder(data.file("bioasq", spec.name), store, out, base="minilm", opts=opts)


def _train_reranker(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path
                    ) -> JSONObject:
    from ..train.common import TrainOptions
    from ..train.reranker import train_reranker

    assert store is not None
    opts = TrainOptions(epochs=1, batch_size=16, lr=5e-5, negatives=3, max_pairs=10000, max_dev=20, max_length=128,
                        seed=13, min_questions=data.min_questions)
    return train_reranker(data.file("bioasq", spec.name), store, out,
                          base=str(folder("medcite-minilm-bi-bioasq-ce-base")), opts=opts)


def _train_dsgt(spec: TrainedModel, preset: str, data: BuildData, store: Path | None, out: Path) -> JSONObject:
    """DS@GT's fine-tuned cross-encoder (paper 004), the recipe of :mod:`medcite.train.dsgt`: the hub's
    ms-marco-MiniLM-L-12-v2 where reachable, else the packaged MiniLM as its stand-in (said before it starts and in
    ``training.json``)."""
    from ..train.dsgt import train_dsgt

    assert store is not None
    return train_dsgt(data.file("bioasq", spec.name), store, out, min_questions=data.min_questions,
                      overrides=data.reranker_options or None)


RECIPES: dict[str, Callable[[TrainedModel, str, BuildData, Path | None, Path], JSONObject]] = {
    "reader": _train_reader, "stance": _train_stance, "yesno": _train_yesno, "ideal": _train_ideal,
    "answer": _train_answer,
    "ltr": _train_ltr,
    "bi-encoder": _train_encoder, "cross-encoder": _train_reranker, "dsgt-cross-encoder": _train_dsgt,
}
#: the preset whose first stage a model named on its own is trained for
DEFAULT_PRESET = {"ltr": "best", "dsgt-cross-encoder": "dsgt-b1"}


def preset_models(preset: str) -> list[str]:
    """The ``models:`` models a preset needs: those its retrieval loads, its stance model when it judges stance
    or sets the stance stage (a Task A preset), its BioASQ answerer's when it sets the qa stage."""
    from ..config import preset_sections
    from ..presets.offline import uses_stance

    settings = load_settings(preset)
    names = retrieval_models(settings)
    sections = preset_sections(preset)
    if uses_stance(settings) or "stance" in sections:
        names += list(refs(settings.stance.model_dump(mode="json")))
    if "qa" in sections:
        names += list(refs(settings.qa.model_dump(mode="json")))
    return list(dict.fromkeys(names))


def plan(targets: list[str]) -> list[tuple[str, str]]:
    """(model, the preset it is trained for) in build order, each model once. A target is a preset (name or
    file) or a model medcite trains (``NAME`` or ``models:NAME``)."""
    out: dict[str, str] = {}
    known = set(preset_names())
    for target in targets:
        name = strip_prefix(target)
        if name in CATALOGUE and target not in known:
            for dep in build_order([name]):
                out.setdefault(dep, DEFAULT_PRESET.get(CATALOGUE[dep].kind, "best"))
            continue
        if target not in known and not Path(target).is_file():
            raise ConfigError(f"{target!r} is neither a preset nor a model medcite trains",
                              hint="`medcite config presets` lists the presets, `medcite models list` the models")
        for dep in build_order(preset_models(target)):
            out.setdefault(dep, target)
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


def command_of(name: str, data: BuildData, store: Path | None) -> str:
    """The command that builds ``name`` with these data (recorded in its ``training.json``)."""
    spec = CATALOGUE[name]
    parts = ["medcite models build", name, *(f"--{k} {data.files[k]}" for k in spec.data if k in data.files)]
    if spec.corpus and data.corpus is not None:
        parts.append(f"--corpus {data.corpus}")
    if spec.corpus and data.min_questions != 20:
        parts.append(f"--min-questions {data.min_questions}")
    return " ".join(parts)


def build_models(targets: list[str], data: BuildData, *, echo: Echo = log.info, force: bool = False
                 ) -> list[JSONObject]:
    """Train the models of ``targets`` (presets or model names) that are not already trained here (all of them
    with ``force``), and install the packaged base models named among them (``mpnet``); returns one record per
    model (skipped, built, installed)."""
    from ..bases import PACKAGED, installed_folder

    records: list[JSONObject] = []
    for base in [t for t in targets if t in PACKAGED]:
        before = (installed_folder(base) / "installed.json").is_file()
        folder_ = install_base(base, force=force, echo=echo)
        records.append({"model": base, "status": "present" if before and not force else "installed",
                        "folder": str(folder_)})
    targets = [t for t in targets if t not in PACKAGED]
    if not targets:
        return records
    todo = plan(targets)
    if data.corpus is not None:
        DocumentStore.open(data.corpus).close()  # a missing store fails here, before any training
    missing = [(n, p) for n, p in todo if force or not is_trained_here(n)]
    for name, _ in missing:  # every data file a recipe will read, before hours of training
        for kind in CATALOGUE[name].data:
            if kind not in OPTIONAL_DATA or kind in data.files:
                data.file(kind, name)
    for base in dict.fromkeys(b for n, _ in missing for b in CATALOGUE[n].bases):  # the base models, once
        install_base(base, echo=echo)
    store: Path | None = None
    if any(CATALOGUE[n].corpus for n, _ in missing):
        store = training_store(data.file("bioasq", "the retrieval models"), data.corpus, data.min_questions, echo)
    total = sum(CATALOGUE[n].minutes for n, _ in missing)
    if missing:
        echo(f"{len(missing)} model(s) to train, about {total} min on 2 cores: {', '.join(n for n, _ in missing)}")
    left = total
    for i, (name, preset) in enumerate(todo, start=1):
        spec, out = CATALOGUE[name], folder(name)
        if (name, preset) not in missing:
            echo(f"[{i}/{len(todo)}] {name}: trained here at {out}, skipped (--force trains it again)")
            records.append({"model": name, "status": "present", "folder": str(out)})
            continue
        echo(f"[{i}/{len(todo)}] {name} ({spec.kind}: {spec.description}), about {spec.minutes} min; "
             f"about {left} min left in all")
        started = time.perf_counter()
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=out.parent))
        try:
            report = RECIPES[spec.kind](spec, preset, data, store if spec.corpus else None, tmp / "model")
            _record_command(tmp / "model", command_of(name, data, data.corpus))
            if out.exists():  # an earlier or unfinished model of this name: replaced only now, when done
                shutil.rmtree(out)
            os.replace(tmp / "model", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        left -= spec.minutes
        seconds = round(time.perf_counter() - started, 1)
        echo(f"[{i}/{len(todo)}] {name}: done in {seconds} s, at {out}")
        records.append({"model": name, "status": "built", "folder": str(out), "seconds": seconds,
                        **({"store": str(store)} if spec.corpus else {}), "metrics": report.get("metrics")})
    return records


def _record_command(model: Path, command: str) -> None:
    from ..io import write_json

    path = model / "training.json"
    report = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    write_json(path, {"command": command, **{k: v for k, v in report.items() if k != "command" or v}})
