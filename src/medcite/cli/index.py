"""`medcite index`: build and update indexes (one module per index kind)."""

from __future__ import annotations

import click

from .main import LazyGroup

INDEX_COMMANDS = {
    "bm25": "index_bm25:bm25",
    "dense": "index_dense:dense",
    "milvus": "index_milvus:milvus",
}


@click.group("index", cls=LazyGroup, lazy=INDEX_COMMANDS)
def index() -> None:
    """Build or update the BM25 and dense indexes of a document store (embedded, or on a Milvus server)."""
