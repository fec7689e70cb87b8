"""`medcite run`: answer a topics file with a preset and write a validated submission in a run directory."""

from __future__ import annotations

from pathlib import Path

import click

from ..io import write_json
from ..tasks.validate import evidence_by_topic, validate_biogen24, validate_biogen25, write_errlog
from .options import resolve, settings_options


@click.command("run")
@click.option("--topics", required=True, type=click.Path(exists=True, path_type=Path),
              help="BioGen 2024/2025 topics, BioASQ JSON or TREC topics TSV.")
@click.option("--corpus", required=True, type=click.Path(path_type=Path), help="Document store folder.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Run directory (resumed if it exists).")
@click.option("--format", "fmt", type=click.Choice(["biogen25", "biogen24"]), default="biogen25", show_default=True,
              help="Official submission format to write.")
@click.option("--team-id", default="medcite", show_default=True)
@click.option("--run-id", default=None, help="Run id in the submission (default: the --out folder name).")
@click.option("--contact-email", default="medcite@example.org", show_default=True, help="2024 format only.")
@settings_options
def run(topics: Path, corpus: Path, out: Path, fmt: str, team_id: str, run_id: str | None, contact_email: str,
        preset: str, overrides: tuple[str, ...]) -> None:
    """Answer every topic in --topics and write runs/ID with submission, validation and all intermediates."""
    from ..corpus.store import DocumentStore
    from ..pipeline import Pipeline
    from ..rundir import read_answers
    from ..tasks.biogen import write_biogen24, write_biogen25
    from ..tasks.topics import read_topics

    settings = resolve(preset, overrides)
    topic_list = read_topics(topics)
    pipeline = Pipeline(settings, corpus)
    pipeline.run(topic_list, out, command=f"medcite run --preset {preset} --topics {topics}")
    pipeline.close()
    answers = read_answers(out)
    order = {t.id: i for i, t in enumerate(topic_list)}
    answers.sort(key=lambda a: order.get(a.topic_id, len(order)))
    run_id = run_id or out.name
    if fmt == "biogen25":
        sub = out / "submission.jsonl"
        write_biogen25(sub, answers, team_id, run_id)
        validator = validate_biogen25
    else:
        sub = out / "submission.json"
        write_biogen24(sub, answers, team_id=team_id, run_name=run_id, contact_email=contact_email)
        validator = validate_biogen24
    with DocumentStore.open(corpus) as store:
        report = validator(sub, in_corpus=store.existing, expected_topics=list(order),
                           evidence=evidence_by_topic(out))
    write_errlog(report)
    write_json(out / "validation.json", report.as_dict())
    status = "valid" if report.ok else f"INVALID ({len(report.errors)} errors, see {sub}.errlog)"
    click.echo(f"{len(answers)} topics answered -> {sub}: {status}")
    if not report.ok:
        raise SystemExit(255)
