"""Pipelines built from settings through one construction path: answering, retrieval, and their context. What
reasons about presets without running a question (offline swaps, provenance, ...) is :mod:`medcite.presets`."""

from .answer import Pipeline, TopicResult
from .context import Context, build_stage
from .retrieval import RetrievalPipeline, Retrieved

__all__ = ["Context", "Pipeline", "RetrievalPipeline", "Retrieved", "TopicResult", "build_stage"]
