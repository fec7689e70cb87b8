"""Split a title or abstract into plain and highlighted segments for evidence spans.

Evidence offsets are character offsets into one section of the article, ``title`` or ``abstract``
(the BioASQ snippet convention, docs/RUNDIR.md). The templates render segments as text (escaped by
Jinja2) inside ``<mark>`` elements, so no HTML is ever assembled from run content here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """One evidence item's span in a section: ``[start, end)`` and its evidence index."""

    start: int
    end: int
    index: int


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of text covered by the same evidence items (``marks`` empty: not highlighted)."""

    text: str
    marks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Part:
    """A labelled part of a structured abstract (label None for unstructured text)."""

    label: str | None
    segments: tuple[Segment, ...]


def clean_spans(spans: Sequence[Span], length: int) -> list[Span]:
    """Drop spans that are empty or fall outside ``[0, length]``; clamp the rest."""
    out = []
    for s in spans:
        start, end = max(0, s.start), min(length, s.end)
        if start < end:
            out.append(Span(start, end, s.index))
    return out


def segments(text: str, spans: Sequence[Span], lo: int = 0, hi: int | None = None) -> list[Segment]:
    """Cut ``text[lo:hi]`` at every span boundary; each segment lists the evidence covering it.

    Overlapping spans are allowed: a segment covered by two items carries both indices.
    """
    hi = len(text) if hi is None else min(hi, len(text))
    spans = [s for s in clean_spans(spans, len(text)) if s.start < hi and s.end > lo]
    cuts = sorted({lo, hi, *(max(lo, s.start) for s in spans), *(min(hi, s.end) for s in spans)})
    out: list[Segment] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a >= b:
            continue
        marks = tuple(sorted(s.index for s in spans if s.start <= a and s.end >= b))
        out.append(Segment(text[a:b], marks))
    return out


def parts(text: str, spans: Sequence[Span], sections: Sequence[tuple[str | None, int, int]]) -> list[Part]:
    """Segments grouped by the abstract's labelled sections; text outside every section is kept too."""
    bounds = sorted(
        (max(0, s), min(len(text), e), label) for label, s, e in sections if 0 <= s < e and s < len(text)
    )
    out: list[Part] = []
    pos = 0
    for start, end, label in bounds:
        if start < pos:  # overlapping or repeated sections: ignore the inconsistent one
            continue
        if start > pos and text[pos:start].strip():
            out.append(Part(None, tuple(segments(text, spans, pos, start))))
        out.append(Part(label, tuple(segments(text, spans, start, end))))
        pos = end
    if pos < len(text) and (text[pos:].strip() or not out):
        out.append(Part(None, tuple(segments(text, spans, pos, len(text)))))
    return out
