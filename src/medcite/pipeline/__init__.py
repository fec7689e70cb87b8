"""Pipelines built from settings through one construction path: answering, retrieval, and their context."""

from .answer import Pipeline, TopicResult
from .context import Context, build_stage
from .offline import needs_llm, offline_lines, offline_settings
from .retrieval import RetrievalPipeline, Retrieved

__all__ = ["Context", "Pipeline", "RetrievalPipeline", "Retrieved", "TopicResult", "build_stage", "needs_llm",
           "offline_lines", "offline_settings"]
