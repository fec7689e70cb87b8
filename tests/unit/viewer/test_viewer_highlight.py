"""Evidence spans cut titles and abstracts into highlighted segments (hand-computed cases + properties)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from medcite.viewer.highlight import Part, Segment, Span, parts, segments


def test_one_span() -> None:
    assert segments("abcdefghij", [Span(2, 5, 1)]) == [Segment("ab"), Segment("cde", (1,)), Segment("fghij")]


def test_overlapping_spans_carry_both_indices() -> None:
    got = segments("abcdefghij", [Span(2, 6, 1), Span(4, 8, 2)])
    assert got == [Segment("ab"), Segment("cd", (1,)), Segment("ef", (1, 2)), Segment("gh", (2,)), Segment("ij")]


def test_out_of_range_and_empty_spans_are_clamped_or_dropped() -> None:
    got = segments("abcdefghij", [Span(-3, 2, 1), Span(8, 50, 2), Span(5, 5, 3), Span(12, 14, 4)])
    assert got == [Segment("ab", (1,)), Segment("cdefgh"), Segment("ij", (2,))]


def test_window_limits_the_segments() -> None:
    assert segments("abcdefghij", [Span(1, 9, 7)], 3, 6) == [Segment("def", (7,))]


def test_structured_abstract_parts_keep_labels_and_gaps() -> None:
    text = "Bg text. Results here. tail"
    #       0123456789012345678901234567
    got = parts(text, [Span(9, 16, 1)], [("BACKGROUND", 0, 8), ("RESULTS", 9, 22)])
    assert got == [
        Part("BACKGROUND", (Segment("Bg text."),)),
        Part("RESULTS", (Segment("Results", (1,)), Segment(" here."))),
        Part(None, (Segment(" tail"),)),
    ]


def test_inconsistent_sections_are_ignored() -> None:
    got = parts("abcdef", [], [("A", 0, 4), ("B", 2, 5), ("C", 9, 12), ("D", 4, 2)])
    assert got == [Part("A", (Segment("abcd"),)), Part(None, (Segment("ef"),))]


def test_unstructured_and_empty_abstracts() -> None:
    assert parts("plain", [], []) == [Part(None, (Segment("plain"),))]
    assert parts("", [], []) == []  # the page says "No abstract."


spans_st = st.lists(st.tuples(st.integers(-5, 40), st.integers(-5, 40)), max_size=6)


@given(st.text(max_size=30), spans_st)
def test_segments_rebuild_the_text_and_mark_exactly_the_covered_characters(text: str, raw) -> None:
    spans = [Span(a, b, i) for i, (a, b) in enumerate(raw)]
    got = segments(text, spans)
    assert "".join(s.text for s in got) == text
    pos = 0
    for seg in got:
        for k in range(pos, pos + len(seg.text)):
            expected = tuple(sorted(s.index for s in spans if max(0, s.start) <= k < min(len(text), s.end)))
            assert seg.marks == expected
        pos += len(seg.text)


@given(st.text(max_size=30), st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=4))
def test_parts_never_lose_or_repeat_text(text: str, raw) -> None:
    sections = [(f"L{i}", a, b) for i, (a, b) in enumerate(raw)]
    got = parts(text, [], sections)
    joined = "".join(seg.text for p in got for seg in p.segments)
    # only whitespace-only gaps between sections may be dropped; text is never repeated or reordered
    assert [c for c in joined if not c.isspace()] == [c for c in text if not c.isspace()]
    assert len(joined) <= len(text)
