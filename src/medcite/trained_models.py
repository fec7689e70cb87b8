"""The models medcite trains itself, which presets name as ``models:NAME``: what each is, where it comes from,
the one command that makes it, and whether it is here.

A ``models:NAME`` reference resolves, in order, to

1. ``$MEDCITE_MODELS_DIR/NAME`` (default ``~/.cache/medcite/models/NAME``) when it holds a finished model:
   *trained here* by ``medcite models build`` or a ``medcite train`` command, so a user's own model always
   takes precedence;
2. ``medcite/shipped_models/NAME`` inside the installed package: the small models (heads over the packaged
   MiniLM, LightGBM boosters; kilobytes to a few MB) are *shipped* with medcite, each with the
   ``training.json`` of the run that made it, so every offline preset works on a fresh machine with no
   training step;
3. otherwise it is *missing*: :func:`resolve` raises a ConfigError naming the one command that makes it, with
   the data paths of this checkout (:func:`make_command`).

``medcite models build NAME|PRESET`` trains into the models folder; ``medcite models list`` shows every model a
preset or command names (:mod:`medcite.presets.inventory`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError
from .paths import MODELS_PREFIX, models_dir, shared_data_dir

if TYPE_CHECKING:
    from .config import Settings

#: where the shipped models live inside the package
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped_models"

#: the data sets a build reads: the build option, its file under the shared data folder, and a placeholder
#: for a checkout that has no shared data
DATA: dict[str, tuple[str, str]] = {
    "bioasq": ("bioasq/bioasq_taskb_golden_7b-11b_dev.json.gz", "BIOASQ.json.gz"),
    "pubmedqa": ("pubmedqa/pqal_dev.json", "ori_pqal.json"),
    "healthver": ("healthver/healthver_dev.csv", "healthver.csv"),
    # training only: more BioASQ questions (12B) and the other stance sets (a folder; see train/stance_sets.py)
    "bioasq_extra": ("bioasq/bioasq_taskb_golden_12b.json.gz", "BIOASQ12B.json.gz"),
    "stance_sets": ("stance", "STANCE_FOLDER"),
}
#: data kinds a build reads when they are given, and does without otherwise
OPTIONAL_DATA = ("pubmedqa", "bioasq_extra", "stance_sets")

TRAINED_HERE, SHIPPED, MISSING = "trained here", "shipped", "missing"


@dataclass(frozen=True)
class TrainedModel:
    """A model ``medcite models build`` can train: its kind, the files a finished one holds, the data sets its
    build reads, the other trained models it starts from, its training time on 2 CPU cores (minutes,
    measured; an estimate), and whether medcite ships it."""

    name: str
    kind: str
    minutes: int
    files: tuple[str, ...]
    data: tuple[str, ...] = ("bioasq",)
    needs: tuple[str, ...] = ()
    shipped: bool = False
    corpus: bool = False  # its build can train over the user's store (--corpus)
    description: str = ""
    bases: tuple[str, ...] = ()  # packaged base models its build installs first (medcite.bases)


CATALOGUE: dict[str, TrainedModel] = {m.name: m for m in (
    TrainedModel("medcite-reader", "reader", 240, ("reader.json", "reader.safetensors"),
                 ("bioasq", "pubmedqa", "healthver", "bioasq_extra", "stance_sets"), shipped=True, bases=("mpnet",),
                 description="the readers: all-mpnet-base-v2 (from PyPI) with the layers above a frozen bottom "
                             "trained per job (qa: relevance and answer spans; verdict: the sentence reader's "
                             "yes/no; stance), low-rank adapters and heads"),
    # the frozen-feature heads the reader replaced: kept as baselines to build and measure, no longer shipped
    # (their held-back figures were at or below trivial baselines: docs/MODELS.md)
    TrainedModel("medcite-stance-healthver", "stance", 8, ("stance_head.json",), ("healthver",),
                 description="baseline: stance of (claim, evidence) by a linear head over frozen packaged-MiniLM "
                             "features, trained on HealthVer claims (replaced by medcite-reader)"),
    TrainedModel("medcite-yesno", "yesno", 10, ("yesno_head.json",), ("bioasq", "pubmedqa"),
                 description="baseline: yes/no by a linear head over frozen packaged-MiniLM features of "
                             "(question, snippet) pairs (replaced by medcite-reader)"),
    TrainedModel("medcite-ideal", "ideal", 1, ("ideal_head.json", "ideal_lgbm.txt"), shipped=True,
                 description="ideal-answer sentence scorer: LightGBM over cheap features, labels ROUGE-2 F1 to "
                             "the BioASQ ideal answers"),
    TrainedModel("medcite-answer", "answer", 1, ("answer_head.json", "answer_lgbm.txt"), shipped=True,
                 description="answer-sentence scorer of the offline preset: LightGBM over abstract-sentence "
                             "features, labels ROUGE-2 F1 to the BioASQ ideal answers"),
    TrainedModel("medcite-ltr-bioasq", "ltr", 7, ("config.json", "model.txt"), shipped=True, corpus=True,
                 description="LightGBM LambdaMART over cheap features of the hybrid first stage's top 100"),
    TrainedModel("medcite-minilm-bi-bioasq", "bi-encoder", 50, ("config.json",), corpus=True,
                 description="the packaged MiniLM bi-encoder adapted to BioASQ (in-batch + 1 BM25 negative)"),
    TrainedModel("medcite-minilm-bi-bioasq-ce-base", "bi-encoder", 25, ("config.json",), corpus=True,
                 description="an adapted MiniLM (in-batch negatives only) that the cross-encoder starts from"),
    TrainedModel("medcite-minilm-ce-bioasq", "cross-encoder", 60, ("config.json",),
                 needs=("medcite-minilm-bi-bioasq-ce-base",), corpus=True,
                 description="a MiniLM cross-encoder fine-tuned on BioASQ with BM25 hard negatives"),
    # an estimate, never run whole on 2 cores: ~24,900 pairs (6,223 gold + 3 dense negatives each, training side
    # of the shared 7b-11b file) x 3 epochs at ~4 pairs/s (MiniLM-L12: half the ~8 pairs/s measured for MiniLM-L6)
    # = ~5.2 h, bge-large-en embedding the 8,462-document store ~40 min, two held-back evaluations ~20 min
    TrainedModel("dsgt-minilm-l12-ce-bioasq", "dsgt-cross-encoder", 380, ("config.json",), corpus=True,
                 description="DS@GT's cross-encoder (paper 004): cross-encoder/ms-marco-MiniLM-L-12-v2 fine-tuned "
                             "3 epochs on BioASQ questions, gold documents against hard negatives mined with "
                             "BAAI/bge-large-en (offline, the packaged MiniLM stands in for each, said in "
                             "training.json)"),
)}


def data_path(kind: str) -> str:
    """The shared data file a build of ``kind`` data reads in this checkout, or its placeholder."""
    rel, placeholder = DATA[kind]
    path = shared_data_dir() / rel
    return str(path) if path.exists() else placeholder


def make_command(name: str, train_command: str | None = None) -> str:
    """The one command that makes the model ``name`` (``models:`` prefix optional), with this checkout's data
    paths; for a name medcite has no recipe for, ``train_command --out FOLDER``."""
    name = strip_prefix(name)
    spec = CATALOGUE.get(name)
    if spec is None:
        return f"{train_command or 'medcite train ...'} --out {models_dir() / name}"
    return " ".join(["medcite models build", name, *(f"--{d.replace('_', '-')} {data_path(d)}" for d in spec.data)])


def strip_prefix(name: str) -> str:
    return name[len(MODELS_PREFIX):].strip() if name.startswith(MODELS_PREFIX) else name


def _complete(folder: Path, name: str) -> bool:
    spec = CATALOGUE.get(name)
    if spec is None:  # a model medcite has no recipe for: any folder medcite's trainers write
        return folder.is_dir() and any((folder / f).is_file() for f in ("config.json", "stance_head.json",
                                                                        "reader.json",
                                                                        "yesno_head.json", "ideal_head.json",
                                                                        "answer_head.json"))
    return all((folder / f).is_file() for f in spec.files)


def locate(name: str) -> tuple[Path | None, str]:
    """(folder, source) of the model ``name``: trained here, shipped, or (None, missing)."""
    name = strip_prefix(name)
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        return None, MISSING
    here = models_dir() / name
    if _complete(here, name):
        return here, TRAINED_HERE
    shipped = SHIPPED_DIR / name
    if _complete(shipped, name):
        return shipped, SHIPPED
    return None, MISSING


def resolve(name: str, train_command: str | None = None) -> str:
    """``models:NAME`` -> the folder it resolves to (see the module doc); any other name is returned unchanged.

    A missing model is a ConfigError naming the one command that makes it (``train_command`` for a name
    medcite has no recipe for)."""
    if not name.startswith(MODELS_PREFIX):
        return name
    folder, _ = locate(name)
    if folder is None:
        rel = strip_prefix(name)
        raise ConfigError(
            f"the trained model {name!r} is not at {models_dir() / rel}"
            + ("" if rel in CATALOGUE and CATALOGUE[rel].shipped else " and medcite ships no model of that name"),
            hint=f"make it with `{make_command(rel, train_command)}`, or set MEDCITE_MODELS_DIR to the folder "
                 "that holds it",
        )
    return str(folder)


def is_present(name: str) -> bool:
    """Whether the model ``name`` is here, trained or shipped."""
    return locate(name)[0] is not None


def is_trained_here(name: str) -> bool:
    return locate(name)[1] == TRAINED_HERE


def folder(name: str) -> Path:
    """Where ``medcite models build`` writes ``name``: the models folder."""
    return models_dir() / strip_prefix(name)


def refs(value: object) -> Iterator[str]:
    """Every ``models:NAME`` in a settings dump, as NAME."""
    if isinstance(value, str):
        if value.startswith(MODELS_PREFIX):
            yield strip_prefix(value)
        elif MODELS_PREFIX in value:  # a shorthand such as "embedding:models:NAME"
            yield strip_prefix(value[value.index(MODELS_PREFIX):])
    elif isinstance(value, dict):
        for v in value.values():
            yield from refs(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from refs(v)


def retrieval_models(settings: Settings) -> list[str]:
    """Names of the ``models:`` a retrieval run of ``settings`` loads: those of the indexes its branches
    search and of its reranker."""
    used = {getattr(b, "index", None) for b in settings.retrieve.branches}
    data = [settings.indexes[n].model_dump(mode="json") for n in settings.indexes if n in used]
    data.append(settings.rerank.model_dump(mode="json"))
    if settings.retrieve.branch_rerank is not None:
        data.append(settings.retrieve.branch_rerank.model_dump(mode="json"))
    return list(dict.fromkeys(refs(data)))


def build_order(names: list[str]) -> list[str]:
    """``names`` with the trained models each starts from (``needs``) put before it."""
    out: list[str] = []
    for name in names:
        for dep in (*CATALOGUE[name].needs, name) if name in CATALOGUE else (name,):
            if dep not in out:
                out.append(dep)
    return out


def missing(settings: Settings) -> list[str]:
    return [n for n in retrieval_models(settings) if not is_present(n)]


def minutes(names: list[str]) -> int:
    return sum(CATALOGUE[n].minutes for n in names if n in CATALOGUE)


def check_present(settings: Settings) -> None:
    """ConfigError, before any work, when a ``models:`` model the retrieval settings load is missing: it names
    the command that makes it (never falls back to another model)."""
    absent = build_order(missing(settings))
    absent = [n for n in absent if not is_present(n)]
    if not absent:
        return
    where = ", ".join(str(folder(n)) for n in absent)
    commands = "; then ".join(f"`{make_command(n)}`" for n in absent)
    raise ConfigError(
        f"preset {settings.preset!r} needs the trained model(s) {', '.join(absent)}, which are not at {where}",
        hint=f"make them with {commands} (~{minutes(absent)} min on 2 cores; add --corpus STORE to train over "
             "your own store), or set MEDCITE_MODELS_DIR to the folder that holds them",
    )
