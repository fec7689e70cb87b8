"""Sentence splitting with character offsets into the title and abstract sections (BioASQ offsets).

The title is one sentence of section ``title``; the abstract is split part by part (structured parts never
merge), so every span indexes ``article.abstract`` exactly: ``article.abstract[start:end] == text``.
Splitters: ``syntok`` (rules, fast, the default) or ``pysbd`` (rules, char spans).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..errors import ConfigError
from ..registry import require
from ..types import Article

_LEADING_JUNK = " \t\n.;,:"


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    pmid: str
    section: str  # "title" | "abstract"
    start: int
    end: int
    text: str
    label: str | None = None
    category: str | None = None  # NLM category of the structured part: BACKGROUND ... CONCLUSIONS


def _syntok_spans(text: str) -> list[tuple[int, int]]:
    import syntok.segmenter as segmenter

    spans = []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            tokens = list(sentence)
            if tokens:
                spans.append((tokens[0].offset, tokens[-1].offset + len(tokens[-1].value)))
    return spans


@lru_cache(maxsize=1)
def _pysbd_segmenter() -> object:
    pysbd = require("pysbd", "evidence", "the pysbd sentence splitter")
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _pysbd_spans(text: str) -> list[tuple[int, int]]:
    seg = _pysbd_segmenter()
    return [(s.start, s.end) for s in seg.segment(text)]  # type: ignore[attr-defined]


SPLITTERS: dict[str, Callable[[str], list[tuple[int, int]]]] = {"syntok": _syntok_spans, "pysbd": _pysbd_spans}


# Labels of structured abstracts (NLM categories and the usual journal variants), matched case-insensitively
_LABEL_WORDS = (
    "background", "backgrounds", "introduction", "context", "rationale", "importance", "objective", "objectives",
    "aim", "aims", "purpose", "purposes", "goal", "goals", "hypothesis", "methods", "method", "methodology",
    "materials and methods", "methods and materials", "patients and methods", "subjects and methods",
    "methods and results", "methods and findings", "design", "study design", "setting", "settings",
    "design, setting, and participants", "participants", "patients", "subjects", "population", "intervention",
    "interventions", "measurements", "main outcome measures", "main outcomes and measures", "outcomes",
    "data sources", "study selection", "data extraction", "data synthesis", "evidence acquisition",
    "evidence synthesis", "search methods", "selection criteria", "data collection and analysis",
    "results", "result", "findings", "main results", "key results", "observations", "discussion",
    "conclusion", "conclusions", "conclusions and relevance", "authors' conclusions", "interpretation",
    "implications", "significance", "summary", "limitations", "funding", "trial registration",
    "clinical trial registration", "registration", "key words", "keywords", "abbreviations",
)
#: labels of parts that list metadata, not findings: a sentence under one is no answer material
META_LABELS = frozenset({"funding", "trial registration", "clinical trial registration", "registration",
                         "key words", "keywords", "abbreviations"})
_LABEL = re.compile(
    r"^(?P<label>(?:" + "|".join(re.escape(w) for w in sorted(_LABEL_WORDS, key=len, reverse=True)) + r")"
    r"|[A-Z][A-Z&/ ,-]{3,50}[A-Z])\s*[:.]\s+(?=\S)",
    re.IGNORECASE,
)


def strip_label(text: str) -> tuple[str | None, str]:
    """Split a leading structured-abstract label off a sentence: ``"RESULTS: Pain fell."`` -> ``("RESULTS",
    "Pain fell.")``; ``(None, text)`` when it has none. A label is a known section name in any case
    (``Conclusions:``) or an upper-case run of 5+ characters (``MAIN OUTCOME MEASURES:``) before ':' (or '.')."""
    m = _LABEL.match(text)
    if m is None:
        return None, text
    label = m.group("label")
    if m.group(0).rstrip()[-1] == "." and label.lower() not in _LABEL_WORDS:
        return None, text  # "NSAIDS. ..." is a sentence, not a label; only known names end in '.'
    if not label.isupper() and label.lower() not in _LABEL_WORDS:
        return None, text  # the upper-case branch matched case-insensitively: an ordinary phrase
    return label, text[m.end():]


def split_spans(text: str, splitter: str = "syntok") -> list[tuple[int, int]]:
    """Sentence spans of ``text`` with leading punctuation and surrounding whitespace trimmed."""
    try:
        fn = SPLITTERS[splitter]
    except KeyError:
        raise ConfigError(
            f"unknown sentence splitter {splitter!r}", hint=f"choose one of: {', '.join(SPLITTERS)}"
        ) from None
    out = []
    for start, end in fn(text):
        while start < end and text[start] in _LEADING_JUNK:
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def sentence_texts(text: str, splitter: str = "syntok") -> list[str]:
    """``text`` split into sentences (their texts, trimmed as :func:`split_spans` trims them)."""
    return [text[s:e] for s, e in split_spans(text, splitter)]


def article_sentences(article: Article, splitter: str = "syntok") -> list[SentenceSpan]:
    """The title (one span) and the abstract's sentences, part by part, with exact offsets."""
    out: list[SentenceSpan] = []
    title = article.title.strip()
    if title:
        start = article.title.find(title)
        out.append(SentenceSpan(article.pmid, "title", start, start + len(title), title))
    abstract = article.abstract
    parts = [(s.start, s.end, s.label, s.category) for s in article.sections] or [(0, len(abstract), None, None)]
    for p_start, p_end, label, category in parts:
        chunk = abstract[p_start:p_end]
        for s, e in split_spans(chunk, splitter):
            out.append(SentenceSpan(article.pmid, "abstract", p_start + s, p_start + e, chunk[s:e], label, category))
    return out
