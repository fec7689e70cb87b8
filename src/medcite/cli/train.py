"""`medcite train`: fine-tune medcite's own reranker (cross-encoder) and bi-encoder on BioASQ data, and train
the stance classifier on HealthVer-style claims."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..io import JSONObject
from .numbers import MAX_SEED, Count, Finite
from .options import Decorated

if TYPE_CHECKING:
    from ..workflows.train import TrainOptions


DEVICE_HELP = ("Torch device to train on: auto (a CUDA GPU when there is one, then Apple MPS, else the CPU), cpu, "
               "cuda, cuda:N or mps.")


def _common(f: Decorated) -> Decorated:
    options = [
        click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
                     help="BioASQ training JSON (.json or .json.gz) with questions and gold documents."),
        click.option("--corpus", "corpus", required=True, type=click.Path(exists=True, file_okay=False),
                     help="Document store (folder) holding the gold and candidate articles."),
        click.option("--base", default="minilm", show_default=True,
                     help="Base model: 'minilm' (packaged, offline) or a model folder / hub name."),
        click.option("--out", required=True, type=click.Path(file_okay=False),
                     help="New or empty folder for the trained model and training.json."),
        click.option("--index", default=None, type=click.Path(exists=True, file_okay=False),
                     help="BM25 index of the store (default: a temporary one is built)."),
        click.option("--epochs", default=1, show_default=True, type=Count(1)),
        click.option("--batch-size", default=16, show_default=True, type=Count(1)),
        click.option("--lr", default=2e-5, show_default=True, type=Finite(0, min_open=True),
                     help="Peak learning rate (AdamW, linear warm-up and decay)."),
        click.option("--max-length", default=256, show_default=True, type=Count(8),
                     help="Token limit of a training input."),
        click.option("--max-pairs", default=None, type=Count(1),
                     help="Cap on training pairs (whole questions at a time)."),
        click.option("--min-pairs", default=100, show_default=True, type=Count(1),
                     help="Stop with an error (naming how many gold documents the store holds) when there are "
                          "fewer positive training pairs than this."),
        click.option("--min-questions", default=20, show_default=True, type=Count(1),
                     help="Refuse a store that holds the gold articles of fewer training questions than this "
                          "(or of fewer than 5 held-back ones), as `medcite models build` does."),
        click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED)),
        click.option("--dev-fraction", default=0.2, show_default=True,
                     type=Finite(0, 1, min_open=True, max_open=True),
                     help="Share of questions held back (the most recent batches when known)."),
        click.option("--max-dev", default=None, type=Count(1),
                     help="Evaluate on at most this many held-back questions."),
        click.option("--threads", default=None, type=Count(1), help="Torch CPU threads."),
        click.option("--device", default="auto", show_default=True, help=DEVICE_HELP),
        click.option("--negatives-from", default="bm25", show_default=True, type=click.Choice(["bm25", "dense"]),
                     help="Hard negatives from the store's BM25 hits, or from its nearest documents by a "
                          "bi-encoder (sentence-transformers' mine_hard_negatives; embeds the whole store once)."),
        click.option("--dense-miner", default=None,
                     help="Bi-encoder that mines dense negatives: 'minilm' or a folder (default: the encoder "
                          "being trained; the packaged MiniLM for the reranker)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _options(kw: dict[str, Any], negatives: int) -> TrainOptions:
    from ..workflows.train import TrainOptions

    return TrainOptions(
        epochs=kw["epochs"], batch_size=kw["batch_size"], lr=kw["lr"], max_length=kw["max_length"],
        max_pairs=kw["max_pairs"], min_pairs=kw["min_pairs"], min_questions=kw["min_questions"], seed=kw["seed"],
        dev_fraction=kw["dev_fraction"],
        max_dev=kw["max_dev"],
        threads=kw["threads"], negatives_from=kw["negatives_from"], dense_miner=kw["dense_miner"], negatives=negatives,
        device=kw["device"],
    )


def _show(report: JSONObject) -> None:
    click.echo(json.dumps({"metrics": report["metrics"], "seconds": report["seconds"],
                           "pairs": report["pairs"], "questions": report["questions"]}, indent=2))


@click.group("train")
def train() -> None:
    """Fine-tune a reranker or adapt the bi-encoder on BioASQ questions (split by question); train the stance
    classifier on claims (split by claim)."""


#: the options ``--recipe dsgt`` sets itself (paper 004's, or medcite's stated choices; medcite.train.dsgt)
_RECIPE_SETS = ("base", "epochs", "batch_size", "lr", "max_length", "negatives", "negatives_from", "dense_miner",
                "dev_fraction", "max_dev", "seed")


@train.command("reranker")
@_common
@click.option("--negatives", default=3, show_default=True, type=Count(0),
              help="BM25 hard negatives per gold document (gold removed).")
@click.option("--recipe", type=click.Choice(["dsgt"]), default=None,
              help="Train a published model as its paper says: 'dsgt' is DS@GT's cross-encoder (BioASQ 13b, paper "
                   "004: ms-marco-MiniLM-L-12-v2 fine-tuned 3 epochs, dense hard negatives by bge-large-en; the "
                   "packaged MiniLM stands in for either where the hub cannot be reached). It sets the base and the "
                   "training options itself; `medcite models build dsgt-b1` runs the same into the models folder.")
@click.pass_context
def reranker(ctx: click.Context, **kw: Any) -> None:
    """Fine-tune a cross-encoder with BCE on gold and BM25 hard-negative pairs; report MAP@10 before/after."""
    if kw["recipe"] == "dsgt":
        from click.core import ParameterSource

        from ..workflows.train import train_dsgt

        given = [f"--{n.replace('_', '-')}" for n in _RECIPE_SETS
                 if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"--recipe dsgt sets {', '.join(given)} itself: leave them out (or train without "
                                   "--recipe, with the options its training.json records as train_command)")
        # what the recipe leaves open: the cap on pairs, the run's machine (threads, device), the BM25 index
        own = {k: kw[k] for k in ("max_pairs", "threads") if kw[k] is not None}
        own |= {k: kw[k] for k in ("min_pairs", "device") if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}
        report = train_dsgt(kw["data"], kw["corpus"], kw["out"], min_questions=kw["min_questions"],
                            overrides=own or None, index=kw["index"])
    else:
        from ..workflows.train import train_reranker

        report = train_reranker(kw["data"], kw["corpus"], kw["out"], base=kw["base"], index=kw["index"],
                                opts=_options(kw, negatives=kw["negatives"]))
    _show(report)
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("encoder")
@_common
@click.option("--negatives", default=1, show_default=True, type=Count(0),
              help="BM25 hard negatives added to each gold pair (gold removed); 0: in-batch negatives only "
                   "(about 2.8x faster, lower MAP@10: docs/BENCHMARKS.md).")
def encoder(**kw: Any) -> None:
    """Adapt the bi-encoder with in-batch negatives (MultipleNegativesRankingLoss); report MAP@10 before/after."""
    from ..workflows.train import train_encoder

    report = train_encoder(kw["data"], kw["corpus"], kw["out"], base=kw["base"], index=kw["index"],
                           opts=_options(kw, negatives=kw["negatives"]))
    _show(report)
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("ltr")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ training JSON (.json or .json.gz) with questions and gold documents.")
@click.option("--corpus", "corpus", required=True, type=click.Path(exists=True, file_okay=False),
              help="Document store (folder) holding the gold and candidate articles; its indexes are built or "
                   "synced on first use, as by `medcite search`.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New or empty folder for the model (models:medcite-ltr-bioasq is "
                   "~/.cache/medcite/models/medcite-ltr-bioasq); written atomically.")
@click.option("--first-stage", default="hybrid", show_default=True,
              help="Preset whose first stage (its reranker switched off) the model reorders; use the same at "
                   "search time.")
@click.option("--top-n", default=100, show_default=True, type=Count(2), help="Candidates per question.")
@click.option("--features", default="first_stage,bm25,prf,dense,terms,passage", show_default=True,
              help="Feature groups (comma-separated) of first_stage, bm25, prf, dense, terms, passage, document.")
@click.option("--encoders", default="minilm", show_default=True,
              help="Encoders (comma-separated) whose cosine the dense features read, e.g. "
                   "minilm,models:medcite-minilm-bi-bioasq.")
@click.option("--dev-fraction", default=0.2, show_default=True,
              type=Finite(0, 1, min_open=True, max_open=True),
              help="Share of questions held back for the report (the most recent batches when known).")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
@click.option("--max-train", default=None, type=Count(1), help="Use at most this many training questions.")
@click.option("--max-dev", default=None, type=Count(1), help="Evaluate on at most this many held-back ones.")
@click.option("--trees", default=1000, show_default=True, type=Count(1),
              help="Most boosting rounds (early stopping on a slice of the training questions picks fewer).")
@click.option("--learning-rate", default=0.05, show_default=True, type=Finite(0, min_open=True))
@click.option("--leaves", default=15, show_default=True, type=Count(2), help="Leaves per tree.")
@click.option("--threads", default=1, show_default=True, type=Count(1), help="LightGBM threads.")
@click.option("--min-questions", default=20, show_default=True, type=Count(1),
              help="Stop with an error when fewer training questions have a gold document in the store.")
def ltr(**kw: Any) -> None:
    """Train the learning-to-rank reranker (LightGBM LambdaMART over cheap features); report MAP@10 before/after."""
    from ..workflows.train import LTROptions, train_ltr

    opts = LTROptions(
        first_stage=kw["first_stage"], top_n=kw["top_n"],
        groups=tuple(g.strip() for g in kw["features"].split(",") if g.strip()),
        encoders=tuple(e.strip() for e in kw["encoders"].split(",") if e.strip()),
        dev_fraction=kw["dev_fraction"], seed=kw["seed"], max_train=kw["max_train"], max_dev=kw["max_dev"],
        trees=kw["trees"], learning_rate=kw["learning_rate"], leaves=kw["leaves"], threads=kw["threads"],
        min_questions=kw["min_questions"])
    report = train_ltr(kw["data"], kw["corpus"], kw["out"], opts)
    click.echo(json.dumps({"metrics": report["metrics"], "seconds": report["seconds"],
                           "questions": report["questions"], "duplicates": report["duplicates"]}, indent=2))
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("stance")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="HealthVer-style CSV: claim, evidence, label (Supports / Refutes / Neutral).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New or empty folder for the model and training.json.")
@click.option("--base", default="minilm", show_default=True,
              help="Encoder: 'minilm' (packaged, offline) or a model folder / hub name.")
@click.option("--epochs", default=0, show_default=True, type=Count(0),
              help="0: linear head on the frozen encoder's features (the measured best on the packaged "
                   "MiniLM); N: fine-tune the whole encoder for N epochs.")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
@click.option("--dev-fraction", default=0.25, show_default=True,
              type=Finite(0, 1, min_open=True, max_open=True),
              help="Share of the distinct claims held back for the report (never rows).")
@click.option("--c", "c", default=None, type=Finite(0, min_open=True),
              help="Regularisation of the linear head (default: chosen by cross-validation over claims).")
@click.option("--negations", is_flag=True, help="Add negation-rewritten training claims (label flipped).")
@click.option("--bioasq", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Add BioASQ yes/no questions with their gold snippets (BioASQ JSON, .gz allowed).")
@click.option("--bioasq-exclude", default=None, type=click.Path(exists=True, dir_okay=False),
              help="File of BioASQ question ids (whitespace-separated) kept out of training.")
@click.option("--pubmedqa", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Add PubMedQA labelled questions with their contexts (ori_pqal-style JSON).")
@click.option("--max-length", default=128, show_default=True, type=Count(16),
              help="Token limit of a (evidence, claim) pair.")
@click.option("--layers", default="1,2,3,4", show_default=True,
              help="Hidden-state layers (0: embeddings; negative: from the top) whose [CLS] and mean vectors of "
                   "the pair the linear head reads (epochs 0).")
@click.option("--batch-size", default=16, show_default=True, type=Count(1), help="Fine-tuning only.")
@click.option("--lr", default=3e-5, show_default=True, type=Finite(0, min_open=True),
              help="Peak learning rate (fine-tuning only).")
@click.option("--threads", default=None, type=Count(1), help="Torch CPU threads.")
@click.option("--device", default="auto", show_default=True, help=DEVICE_HELP)
def stance(**kw: Any) -> None:
    """Train the stance classifier (supports / contradicts / neutral) on claims, holding some claims back."""
    from pathlib import Path

    from ..workflows.train import StanceTrainOptions, train_stance

    exclude = Path(kw["bioasq_exclude"]).read_text(encoding="utf-8").split() if kw["bioasq_exclude"] else ()
    try:
        layers = tuple(int(x) for x in kw["layers"].split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{kw['layers']!r} is not a comma-separated list of integers",
                                 param_hint="--layers") from None
    opts = StanceTrainOptions(
        epochs=kw["epochs"], dev_fraction=kw["dev_fraction"], seed=kw["seed"], c=kw["c"], negations=kw["negations"],
        bioasq=kw["bioasq"], bioasq_exclude=tuple(exclude), pubmedqa=kw["pubmedqa"], max_length=kw["max_length"],
        layers=layers, batch_size=kw["batch_size"], lr=kw["lr"], threads=kw["threads"], device=kw["device"])
    report = train_stance(kw["data"], kw["out"], base=kw["base"], opts=opts)
    click.echo(json.dumps({"metrics": report["metrics"], "seconds": report["seconds"], "pairs": report["pairs"],
                           "claims": report["claims"]}, indent=2))
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("yesno")
@click.option("--data", required=True, multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ Task b JSON (.json/.json.gz; its yes/no questions and snippets) and/or PubMedQA "
                   "ori_pqal.json-style files (question + contexts -> yes/no/maybe); repeat for several.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New or empty folder for yesno_head.json and training.json (models:medcite-yesno is "
                   "~/.cache/medcite/models/medcite-yesno).")
@click.option("--base", default="minilm", show_default=True, help="Frozen encoder: 'minilm' (packaged) or a folder.")
@click.option("--max-length", default=256, show_default=True, type=Count(16), help="Tokens per pair.")
@click.option("--layers", default="1,2,3,4", show_default=True, help="Hidden-state layers pooled into features.")
@click.option("--c", "c", default=None, type=Finite(0, min_open=True),
              help="Logistic-regression C (default: chosen by cross-validation grouped by question).")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
@click.option("--threads", default=None, type=Count(1), help="Torch CPU threads.")
def yesno(**kw: Any) -> None:
    """Train the yes/no head of the offline BioASQ answerer (held-back questions: the benchmark's split)."""
    from ..workflows.train import YesNoTrainOptions, train_yesno

    try:
        layers = tuple(int(x) for x in kw["layers"].split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{kw['layers']!r} is not a comma-separated list of integers",
                                 param_hint="--layers") from None
    opts = YesNoTrainOptions(max_length=kw["max_length"], layers=layers, c=kw["c"], seed=kw["seed"],
                             threads=kw["threads"])
    report = train_yesno(kw["data"], kw["out"], base=kw["base"], opts=opts)
    click.echo(json.dumps({"metrics": report["metrics"], "c": report["c"], "threshold": report["threshold"],
                           "questions": report["questions"]}, indent=2))
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("ideal")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ Task b JSON (.json/.json.gz) with snippets and ideal answers.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New or empty folder for the scorer (models:medcite-ideal is ~/.cache/medcite/models/"
                   "medcite-ideal).")
@click.option("--unit", default="snippet", show_default=True, type=click.Choice(["snippet", "sentence"]),
              help="Candidate unit: whole snippets (measured better) or their sentences.")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
def ideal(**kw: Any) -> None:
    """Train the ideal-answer scorer (LightGBM over cheap features; labels: ROUGE-2 F1 to gold ideal answers)."""
    from ..workflows.train import train_ideal

    report = train_ideal(kw["data"], kw["out"], unit=kw["unit"], seed=kw["seed"])
    click.echo(json.dumps({"metrics": report["metrics"], "questions": report["questions"],
                           "seconds": report["seconds"]}, indent=2))
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("answer")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ Task b JSON (.json/.json.gz) with snippets and ideal answers.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New or empty folder for the scorer (models:medcite-answer is ~/.cache/medcite/models/"
                   "medcite-answer).")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
def answer(**kw: Any) -> None:
    """Train the answer-sentence scorer of the offline preset (LightGBM; labels: ROUGE-2 F1 to ideal answers)."""
    from ..workflows.train import train_answer

    report = train_answer(kw["data"], kw["out"], seed=kw["seed"])
    click.echo(json.dumps({"metrics": report["metrics"], "questions": report["questions"],
                           "seconds": report["seconds"]}, indent=2))
    click.echo(f"model written to {kw['out']}", err=True)


@train.command("reader")
@click.option("--bioasq", default=None, type=click.Path(exists=True, dir_okay=False),
              help="BioASQ Task b JSON (.json/.json.gz): relevance, yes/no and span examples from its questions and "
                   "gold snippets (held back: the benchmarks' 30 %% split).")
@click.option("--bioasq-extra", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="More BioASQ Task b files, training only (repeatable; questions that nearly repeat a held-back "
                   "one are dropped).")
@click.option("--pubmedqa", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PubMedQA ori_pqal.json-style file: yes/no/maybe examples (question + conclusion and sections).")
@click.option("--healthver", default=None, type=click.Path(exists=True, dir_okay=False),
              help="HealthVer-style CSV (claim, evidence, label): stance examples, split by claim.")
@click.option("--stance-sets", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder of the other stance sets (check_covid/, citation_integrity/, covidfact/ as in "
                   "../shared/data/stance), each split by claim and measured on its own.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for reader.json, reader.safetensors and training.json (models:medcite-reader is "
                   "~/.cache/medcite/models/medcite-reader).")
@click.option("--heads", default="relevance,yesno,stance,span", show_default=True,
              help="Comma-separated heads.")
@click.option("--branches", multiple=True, metavar="NAME=HEAD,HEAD",
              help="A branch of its own top layers for these heads (repeatable; every head in one branch; none: "
                   "one shared branch for all heads), e.g. --branches qa=relevance,span --branches verdict=yesno "
                   "--branches stance=stance.")
@click.option("--base", default="minilm", show_default=True,
              help="Base model: 'mpnet' (all-mpnet-base-v2, installed by `medcite models build mpnet`), 'minilm' "
                   "(the packaged all-MiniLM-L6-v2, the fast base) or a local model folder.")
@click.option("--trained-from", default=0, show_default=True, type=Count(0),
              help="The first layer each branch trains (below it the base stays frozen and runs once per example, "
                   "cached); 0 trains every layer.")
@click.option("--lora-rank", default=0, show_default=True, type=Count(0),
              help="Train low-rank adapters of this rank on the branch layers instead of the layers themselves "
                   "(0: the layers).")
@click.option("--epochs", default=2, show_default=True, type=Count(1))
@click.option("--batch-size", default=16, show_default=True, type=Count(1))
@click.option("--lr", default=8e-5, show_default=True, type=Finite(0, min_open=True),
              help="Peak learning rate (AdamW, linear warm-up and decay).")
@click.option("--seed", default=13, show_default=True, type=Count(0, MAX_SEED))
@click.option("--slice", "slice_", default=None, type=Count(1),
              help="At most this many questions, items or claims per side and type (a quick rebuild).")
@click.option("--pubmedqa-test", default=300, show_default=True, type=Count(1), help="PubMedQA items held back.")
@click.option("--healthver-test", default=100, show_default=True, type=Count(1), help="HealthVer claims held back.")
@click.option("--threads", default=None, type=Count(1), help="Torch CPU threads.")
@click.option("--device", default="auto", show_default=True, help=DEVICE_HELP)
def reader(**kw: Any) -> None:
    """Train medcite's reader: a base encoder whose top layers each branch trains for itself, with heads for
    relevance, yes/no (read sentence by sentence, with counterfactual sentences), stance and answer spans."""
    from ..workflows.train import DataOptions, ReaderTrainOptions, train_reader

    heads = tuple(h.strip() for h in kw["heads"].split(",") if h.strip())
    branches: dict[str, tuple[str, ...]] = {}
    for item in kw["branches"]:
        name, sep, listed = item.partition("=")
        if not sep or not name.strip() or not listed.strip():
            raise click.BadParameter(f"{item!r}: expected NAME=HEAD,HEAD", param_hint="--branches")
        branches[name.strip()] = tuple(h.strip() for h in listed.split(",") if h.strip())
    data = DataOptions(seed=kw["seed"], slice=kw["slice_"], pubmedqa_test=kw["pubmedqa_test"],
                       healthver_test=kw["healthver_test"])
    opts = ReaderTrainOptions(heads=heads, base=kw["base"], trained_from=kw["trained_from"], branches=branches,
                              lora_rank=kw["lora_rank"], epochs=kw["epochs"], batch_size=kw["batch_size"],
                              lr=kw["lr"], seed=kw["seed"], threads=kw["threads"], device=kw["device"], data=data)
    report = train_reader(kw["out"], bioasq=kw["bioasq"], pubmedqa=kw["pubmedqa"], healthver=kw["healthver"],
                          opts=opts, bioasq_extra=kw["bioasq_extra"], stance_dir=kw["stance_sets"])
    click.echo(json.dumps({"metrics": report["metrics"], "seconds": report["seconds"]}, indent=2, default=str))
    click.echo(f"reader written to {kw['out']}", err=True)
