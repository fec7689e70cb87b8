"""`medcite eval`: score outputs against gold data (one sub-command per kind of output)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from .numbers import Finite
from .options import resolve, settings_options

if TYPE_CHECKING:
    from ..workflows.evaluate import RetrievalReport


@click.group("eval")
def eval_group() -> None:
    """Evaluate runs and answers against gold data."""


@eval_group.command("retrieval")
@click.option("--run", "run_path", required=True, type=click.Path(path_type=Path), help="TREC run file.")
@click.option(
    "--gold",
    required=True,
    type=click.Path(path_type=Path),
    help="Relevance judgements: TREC qrels, or BioASQ golden JSON(.gz) (documents become relevant PMIDs).",
)
@click.option(
    "--metrics",
    default=None,
    help="Comma-separated metrics (default: MAP@10,GMAP@10,P@10,R@10,R@100,nDCG@10,MRR). MAP@k and GMAP@k "
    "are BioASQ's (denominator min(|R|,k)); others are ir_measures names (P@k, R@k, nDCG@k, RR, AP, ...).",
)
@click.option(
    "--missing",
    type=click.Choice(["zero", "skip"]),
    default="zero",
    show_default=True,
    help="Gold questions absent from the run: 'zero' scores them 0 in every metric (trec_eval -c); 'skip' "
    "leaves them out of every mean, as BioASQ's official evaluator (EvaluatorTask1b) does. The report "
    "names the convention and lists the missing questions.",
)
@click.option("--corpus", type=click.Path(exists=True, path_type=Path), default=None,
              help="The document store the run searched: report how many gold documents it holds and warn when "
              "more than 10% are missing (the figures are then not comparable with runs over all of PubMed).")
@click.option("--per-query", is_flag=True, help="Also print every query's values.")
@click.option(
    "--json",
    "json_out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the report (aggregate and per-query values) to this JSON file.",
)
def retrieval(
    run_path: Path, gold: Path, metrics: str | None, missing: str, corpus: Path | None, per_query: bool,
    json_out: Path | None
) -> None:
    """Score a ranked run: BioASQ MAP@10/GMAP@10, P@k, R@k, nDCG@10, MRR."""
    from ..io import write_json
    from ..workflows.evaluate import evaluate_retrieval_run

    done = evaluate_retrieval_run(run_path, gold, metrics, missing)
    report, qrels = done.report, done.qrels
    if not done.shared:
        click.echo("warning: no query id of the run is in the gold file", err=True)
    if per_query:
        click.echo("query\t" + "\t".join(report.metrics))
        for qid, values in report.per_query.items():
            click.echo(qid + "\t" + "\t".join(f"{values.get(m, 0.0):.4f}" for m in report.metrics))
        click.echo("")
    width = max(len(m) for m in report.metrics)
    for name, value in report.aggregate.items():
        click.echo(f"{name:<{width}}  {value:.4f}")
    click.echo(f"{'queries':<{width}}  {_queries_line(report)}")
    if report.missing:
        click.echo(f"{'missing':<{width}}  {_listed(report.missing)}")
    coverage = _coverage(qrels, corpus)
    if json_out is not None:
        write_json(json_out, {"run": str(run_path), "gold": str(gold), **report.as_dict(), **coverage})


def _coverage(qrels: dict[str, dict[str, int]], corpus: Path | None) -> dict[str, object]:
    """Print (and return for --json) how much of the gold standard the store holds; warn when much is missing."""
    if corpus is None:
        return {}
    from dataclasses import asdict

    from ..workflows.evaluate import store_coverage

    cov = store_coverage(qrels, corpus)
    click.echo(f"gold in corpus: {cov.line()}")
    warning = cov.warning(str(corpus))
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return {"gold_coverage": {**asdict(cov), "missing_share": round(cov.missing_share, 4), "corpus": str(corpus)}}


_SHOWN = 10


def _queries_line(report: RetrievalReport) -> str:
    n = len(report.missing)
    if n == 0:
        return f"{report.queries} (none missing from the run; --missing {report.missing_policy})"
    if report.missing_policy == "skip":
        return (
            f"{report.queries} of {report.gold_queries} ({n} missing from the run, left out: "
            "--missing skip, as BioASQ's official evaluator)"
        )
    return f"{report.queries} ({n} missing from the run, scored 0: --missing zero, as trec_eval -c)"


def _listed(qids: list[str]) -> str:
    shown = ", ".join(qids[:_SHOWN])
    more = len(qids) - _SHOWN
    return shown + (f", and {more} more (all in --json)" if more > 0 else "")


@eval_group.command("biogen-a")
@click.option(
    "--run",
    "run_path",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="TREC BioGen 2025 Task A submission (JSONL or JSON list), or a run directory holding submission.jsonl.",
)
@click.option(
    "--qrels",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judgements: the official CSV (qid, answer_sentence, citation, judgement), the official automatic-label "
    "JSON, or TSV/JSONL qa_id, sentence_index (from 0), pmid, label.",
)
@click.option(
    "--average",
    type=click.Choice(["question", "sentence"]),
    default="question",
    show_default=True,
    help="Macro average: over each question's sentences then over questions (the official scorer's expert "
    "path), or over all sentences (its automatic-label path).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report here (default for a run directory: DIR/metrics_task_a.json).",
)
def biogen_a(run_path: Path, qrels: Path, average: str, json_out: Path | None) -> None:
    """Score Task A grounding: support/contradict x strict/relaxed precision, recall, F1 (docs/TASK_A.md)."""
    from ..io import write_json
    from ..workflows.evaluate import KINDS, MODES, evaluate_task_a

    submission = run_path / "submission.jsonl" if run_path.is_dir() else run_path
    if json_out is None and run_path.is_dir():
        json_out = run_path / "metrics_task_a.json"
    report = evaluate_task_a(submission, qrels, average)
    if report.questions == 0:
        click.echo("warning: no qa_id of the run has judgements", err=True)
    click.echo(f"{'':<20}{'precision':>10}{'recall':>10}{'f1':>10}{'soft_recall':>13}")
    for kind in KINDS:
        for mode in MODES:
            v = report.aggregate[kind][mode]
            click.echo(f"{kind + ' ' + mode:<20}{v['precision']:>10.4f}{v['recall']:>10.4f}{v['f1']:>10.4f}"
                       f"{v['soft_recall']:>13.4f}")
    click.echo(f"questions {report.questions}, sentences {report.sentences} (macro average by {average})")
    if report.unjudged_questions:
        click.echo(f"not scored, no judgements: {_listed(report.unjudged_questions)}")
    if report.missing_from_run:
        click.echo(f"judged but not in the run (not scored): {_listed(report.missing_from_run)}")
    if report.unmatched_judgements:
        click.echo(f"warning: {report.unmatched_judgements} judgements name a sentence not in the run", err=True)
    if json_out is not None:
        write_json(json_out, {"run": str(submission), "qrels": str(qrels), **report.as_dict()})


@eval_group.command("biogen-b")
@click.option("--run", "run_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A Task B run directory (answers.jsonl, topics.jsonl and the cited articles in articles.jsonl).")
@click.option("--judge", "--stance", "judge", default="classifier",
              help="Who judges each citation: 'llm' or 'llm:NAME' (BioACE's four labels: supports, contradicts, "
              "neutral, not relevant; the default LLM or llms.NAME), a stance backend name (classifier, nli), "
              "'backend:MODEL', or a classifier model folder / models:NAME (offline: "
              "models:medcite-reader). Default: the settings' stance classifier.")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Reference answers (BioASQ JSON with ideal_answer, or JSON/JSONL {topic_id, reference}): "
              "adds nugget precision and recall.")
@click.option("--threshold", type=Finite(-1.0, 1.0), default=None,
              help="Cosine at or above which a system and a reference sentence match (default: "
              "medcite.evaluate.nuggets.DEFAULT_THRESHOLD, for MiniLM; docs/TASK_B.md).")
@click.option("--encoder", default="minilm", show_default=True,
              help="Sentence encoder aligning nuggets: a shorthand (minilm = the packaged all-MiniLM-L6-v2, a "
              "model folder) or an encoder config as a JSON object with a 'backend' key.")
@click.option("--completeness/--no-completeness", default=True, show_default=True,
              help="Ask an LLM to label each answer sentence Required / Unnecessary / Borderline / Inappropriate "
              "(needs an LLM: without one the report says it was not measured).")
@click.option("--completeness-llm", default=None,
              help="The LLM of the completeness judge: an entry of `llms` (default: `llm`).")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None,
              help="Where to write the JSON report (default: RUN/metrics_task_b.json).")
@settings_options
def biogen_b(run_dir: Path, judge: str, reference: Path | None, threshold: float | None, encoder: str,
             completeness: bool, completeness_llm: str | None, json_path: Path | None, preset: str,
             overrides: tuple[str, ...]) -> None:
    """Score a Task B run the way the track does (BioACE): citation coverage and support / contradiction /
    neutral / not-relevant rates, nugget precision and recall against reference answers, answer completeness."""
    from ..io import write_json
    from ..workflows.evaluate import NoJudgeError, evaluate_biogen_b

    settings = resolve(preset, overrides)
    try:
        result = evaluate_biogen_b(settings, run_dir, judge=judge, reference=reference, threshold=threshold,
                                   encoder=_encoder_spec(encoder) if reference is not None else encoder,
                                   encoder_name=encoder, completeness=completeness,
                                   completeness_llm=completeness_llm)
    except NoJudgeError as exc:
        raise click.UsageError(exc.message) from None
    cites, nuggets, done = result.citations, result.nuggets, result.completeness
    out = json_path or run_dir / "metrics_task_b.json"
    write_json(out, result.report)
    c = cites.counts
    click.echo(f"{result.topics} topics, {c.sentences} sentences, {c.citations} citations ({c.judged} judged)")
    for name in ("coverage", "support_rate", "contradiction_rate", "neutral_rate", "not_relevant_rate"):
        click.echo(f"  {name:<20} micro {cites.micro[name]:.4f}   macro {cites.macro[name]:.4f}")
    if reference is not None and nuggets is not None:
        click.echo(f"nuggets vs {reference.name} (cosine >= {nuggets.threshold}, {len(nuggets.per_topic)} topics"
                   + (f"; {len(nuggets.unreferenced)} without a reference, not scored" if nuggets.unreferenced
                      else "") + ")")
        for name in ("precision", "recall", "f1"):
            click.echo(f"  {'nugget_' + name:<20} micro {nuggets.micro[name]:.4f}   macro {nuggets.macro[name]:.4f}")
    if completeness and done is not None:
        if isinstance(done, str):
            click.echo(f"completeness: {done}")
        else:
            click.echo(f"completeness ({done.counts['sentences']} sentences, {done.counts['unjudged']} unjudged)")
            for name in ("required_rate", "acceptable_rate", "inappropriate_rate", "answered"):
                click.echo(f"  {name:<20} micro {done.micro[name]:.4f}   macro {done.macro[name]:.4f}")
    click.echo(f"report: {out}")


def _encoder_spec(text: str) -> str | dict[str, object]:
    import json

    if not text.lstrip().startswith("{"):
        return text
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as e:
        raise click.BadParameter(f"not a JSON object: {e}", param_hint="--encoder") from None
    if not isinstance(spec, dict):
        raise click.BadParameter("give a JSON object with a 'backend' key", param_hint="--encoder")
    return spec


@eval_group.command("bioasq")
@click.option("--phase", required=True, type=click.Choice(["A", "B"]),
              help="A: documents and snippets; B: exact and ideal answers (an A+ file: B for its answers, A for its "
              "documents and snippets).")
@click.option("--gold", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="BioASQ golden JSON(.gz).")
@click.option("--system", "system_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The system's BioASQ JSON (a submission).")
@click.option("--missing", type=click.Choice(["skip", "zero"]), default="skip", show_default=True,
              help="Gold questions absent from the system file: 'skip' leaves them out of every mean, as BioASQ's "
              "official evaluator does; 'zero' scores them 0.")
@click.option("--corpus", type=click.Path(exists=True, path_type=Path), default=None,
              help="The document store phase A searched: report how many gold documents it holds and warn when "
              "more than 10% are missing (the figures are then not comparable with runs over all of PubMed).")
@click.option("--rouge/--no-rouge", default=True, show_default=True,
              help="Phase B: score ideal answers with ROUGE-2 and ROUGE-SU4 (needs rouge-score: the eval extra).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report (means, counts, per-question values) to this JSON file.")
def bioasq(phase: str, gold: Path, system_path: Path, missing: str, corpus: Path | None, rouge: bool,
           json_out: Path | None) -> None:
    """Score a BioASQ Task b submission with the official measures (docs/BIOASQ.md)."""
    from ..io import write_json
    from ..workflows.evaluate import evaluate_bioasq

    report = evaluate_bioasq(phase, gold, system_path, missing=missing, rouge=rouge)
    for group, values in report.measures.items():
        cells = "  ".join(f"{name} {value:.4f}" for name, value in values.items())
        click.echo(f"{group:<10} {cells}  ({report.counts.get(group, 0)} questions)")
    n = len(report.missing)
    click.echo(f"{'questions':<10} {report.counts['gold']} gold, {n} missing from the system file"
               + (f" ({'left out' if report.missing_policy == 'skip' else 'scored 0'}: --missing "
                  f"{report.missing_policy}): {_listed(report.missing)}" if n else ""))
    if report.not_in_gold:
        click.echo(f"warning: {len(report.not_in_gold)} system questions are not in the gold file (not scored): "
                   f"{_listed(report.not_in_gold)}", err=True)
    coverage = {}
    if corpus is not None:
        from ..workflows.evaluate import read_gold_qrels

        coverage = _coverage(read_gold_qrels(gold), corpus)
    if json_out is not None:
        write_json(json_out, {"gold": str(gold), "system": str(system_path), **report.as_dict(), **coverage})
