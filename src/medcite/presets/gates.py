"""Which support gate runs on generated citations (``verify.gate``), decided in this one place from the settings:
'off', 'overlap' or 'stance'. :mod:`medcite.pipeline.gate` builds the gate it names; :mod:`.offline` and
:mod:`.reads` ask it which judge a run needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..config import Settings

GateKind = Literal["off", "overlap", "stance"]


def gate_kind(settings: Settings) -> GateKind:
    """The support gate that runs on these settings' answers: none where the stance check already gates every
    citation (``verify.citations`` drop/regenerate) or the answer-first flow grounds every sentence."""
    v = settings.verify
    if v.citations in ("drop", "regenerate") or settings.flow == "generate-then-ground":
        return "off"
    return v.gate
