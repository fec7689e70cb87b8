"""``medcite demo``: fetch a real PubMed sample, ingest it, index it and answer three questions with the
embedded default, offline. :func:`run_demo` says each step through ``say`` as it starts it and returns the
answers; the CLI prints them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..rundir import new_run_dir
from ..types import Topic

if TYPE_CHECKING:
    from ..config import Settings
    from ..pipeline import TopicResult

QUESTIONS = (
    Topic("demo-1", "What are the neurological manifestations of COVID-19?"),
    Topic("demo-2", "Does relaxation therapy lower blood pressure in essential hypertension?"),
    Topic("demo-3", "Are COVID-19 survivors at risk of anxiety and depression?"),
)

#: ``say(text, step)``: ``step`` is True for the numbered step headings, False for the lines under them
Say = Callable[[str, bool], None]


@dataclass
class DemoRun:
    """The demo's answers and the run directory that holds them."""

    results: list[TopicResult]
    run_dir: Path


def run_demo(settings: Settings, data_dir: Path, runs: Path, say: Say) -> DemoRun:
    """Fetch the sample (cached after the first run), ingest it into ``data_dir/store`` and answer
    :data:`QUESTIONS` into a new run directory under ``runs``."""
    from ..corpus.ingest import ingest
    from ..corpus.sample import demo_files
    from ..corpus.store import DocumentStore
    from ..pipeline import Pipeline

    say("1/3 fetching the PubMed sample (cached after the first run)", True)
    files = demo_files()
    store_path = data_dir / "store"
    say(f"2/3 ingesting {', '.join(f.name for f in files)} into {store_path}", True)
    with DocumentStore.create(store_path) as store:
        stats = ingest(files, store, on_error="skip", batch_size=settings.corpus.batch_size)
        for s in stats:
            say(f"   {Path(s.path).name}: +{s.added} added, {s.replaced} replaced, {s.deleted} deleted, "
                f"{s.skipped} bad records skipped [{s.status}]", False)
        say(f"   store: {len(store)} articles", False)
    say("3/3 indexing and answering (extractive answers, no LLM)", True)
    pipeline = Pipeline(settings, store_path)
    out = new_run_dir(runs, "demo")
    say("", False)
    try:
        results = pipeline.run(QUESTIONS, out, command="medcite demo")
    finally:
        pipeline.close()
    return DemoRun(list(results), out)
