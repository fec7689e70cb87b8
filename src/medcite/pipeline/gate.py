"""The support gate of generated citations (``verify.gate``): which judge runs.

:func:`medcite.presets.gates.gate_kind` reads the settings ('off', 'overlap' or 'stance'); :func:`build_gate`
makes the :class:`Gate` the pipeline runs (:func:`.loops.gate_citations`), which carries its kind, its judge and the
thresholds it records, so no caller works the kind out again from which object the judge is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .. import registry
from ..presets.gates import gate_kind

if TYPE_CHECKING:
    from ..attribute.base import StanceClassifier
    from ..config import Settings
    from ..context import BuildContext


@dataclass(frozen=True)
class Gate:
    """The gate that runs: its kind, its judge, the P(supports) a citation needs from the judge, and the
    threshold the verification record reports (the overlap share, or the stance probability)."""

    kind: Literal["overlap", "stance"]
    judge: StanceClassifier
    min_support: float
    threshold: float


def build_gate(settings: Settings, context: BuildContext, stance: StanceClassifier | None) -> Gate | None:
    """The gate of :func:`gate_kind`, or None where none runs. 'stance' judges with the pipeline's stance stage
    (``stance``, built because :func:`medcite.presets.offline.uses_stance` says the gate needs it); 'overlap' builds the
    overlap judge, whose label already holds ``verify.gate_threshold`` (so it needs P(supports) > 0 only)."""
    kind = gate_kind(settings)
    v = settings.verify
    if kind == "stance":
        if stance is None:
            raise RuntimeError("verify.gate='stance' needs the stance stage, and none was built")
        return Gate("stance", stance, v.min_support, v.min_support)
    if kind == "overlap":
        cfg = registry.validate_config("stance", {"backend": "overlap", "threshold": v.gate_threshold})
        judge = context.build("stance", cfg)
        if judge is None:  # the overlap backend always builds a judge
            raise RuntimeError("the overlap stance backend built no judge")
        return Gate("overlap", judge, 0.0, v.gate_threshold)
    return None
