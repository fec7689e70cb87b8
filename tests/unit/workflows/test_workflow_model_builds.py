"""workflows/model_builds.py: the first stage an LTR model reorders, built in a context it hands over."""

from __future__ import annotations

from pathlib import Path

from medcite.corpus.store import DocumentStore
from medcite.pipeline import Context
from medcite.workflows.model_builds import first_stage_pipeline, plan


def test_the_first_stage_retrieves_and_shares_its_context(store: Path) -> None:
    with DocumentStore.open(store) as docs, first_stage_pipeline("bm25", docs) as (run, ctx, settings_hash):
        hits = run("statins LDL cholesterol")
        assert isinstance(ctx, Context) and ctx.store is docs and len(settings_hash) > 8
        assert hits[0].pmid == "11"


def test_a_plan_orders_what_a_model_needs_first() -> None:
    steps = plan(["medcite-stance-healthver"])
    assert steps and steps[-1][0] == "medcite-stance-healthver"
