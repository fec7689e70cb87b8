"""What the verification loops (:mod:`.loops`) and the multi-hop flow (:mod:`.multihop`) use of a built
pipeline: its settings, context, store and stages. :class:`.answer.Pipeline` has them all; typing the loops
against this protocol keeps them below the pipeline that runs them (no import circle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..attribute.base import StanceClassifier
    from ..config import Settings
    from ..corpus.store import DocumentStore
    from ..evidence.base import EvidenceSelector
    from ..generate.base import Generator
    from .context import Context
    from .gate import Gate
    from .grounding import Grounder
    from .retrieval import RetrievalPipeline


class PipelineParts(Protocol):
    """The parts of a built pipeline a loop or flow reads (:class:`medcite.pipeline.Pipeline` is one)."""

    settings: Settings
    context: Context
    store: DocumentStore
    retrieval: RetrievalPipeline
    selector: EvidenceSelector
    generator: Generator
    stance: StanceClassifier | None
    gate: Gate | None
    grounder: Grounder | None
