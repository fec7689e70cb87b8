"""Rule-based query generators (no LLM, no network).

- :class:`OriginalQuery` — the question as asked;
- :class:`KeywordQueries` — keyword rewrites: the question's content terms, then up to four stop-word
  delimited phrases as extra sub-queries (candidate phrases as in RAKE, Rose et al. 2010), the offline
  stand-in for CLaC 2024's ≤5 keyword decompositions and Dalhousie 2025's keyword rewrites;
- :class:`TopicNarrative` — the BioGen topic label plus the narrative's most telling terms.

LLM reformulations and decompositions (:mod:`.llm_queries`) implement the same
:class:`~medcite.retrieve.base.QueryGenerator` protocol; all are chosen by name (registry stage
``querygen``) and built from ``retrieve.queries``.
:class:`~medcite.retrieve.base.QuerySet` composes them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..types import Query, Topic
from .base import QueryGenConfig

if TYPE_CHECKING:
    from ..context import BuildContext

log = logging.getLogger(__name__)

# words joined by hyphens/slashes stay one term (covid-19, il-6, ca19-9)
_WORD = re.compile(r"[^\W_]+(?:[-/][^\W_]+)*")
_TOKEN_OR_BREAK = re.compile(rf"(?P<word>{_WORD.pattern})|(?P<brk>[.,;:?!()\[\]{{}}\"\u201c\u201d])")
_APOSTROPHE = re.compile(r"['\u2019]s\b|['\u2019]")

# Question and consumer-health filler that scikit-learn's general English list does not cover: these
# words say *that* something is asked, not *what* (BioGen questions are written by patients).
_QUESTION_WORDS = frozenset(
    """
    ask asked asking concern concerned concerning consider considering doctor doctors don doesn didn
    good bad best better does done going happen happens help isn know knows like likely ll look looking
    mean means might need needs patient patients person someone tell thing things told try trying use
    used using ve want wants way ways wonder wondering worried worry would
    """.split()
)

# Words that carry meaning inside a phrase ("blood test") but retrieve nothing specific on their own:
# never a stand-alone sub-query.
_GENERIC = frozenset(
    """
    able affect affects cause causes chance chances child children condition conditions cure cures drug
    drugs effect effects family health healthy history home life medication medications medicine medicines
    option options outlook problem problems quality relationship result results risk risks stop symptom
    symptoms test tests treat treatment treatments value
    """.split()
)
# ages and durations ("45-year-old", "3-day") describe the patient, not the subject
_AGE = re.compile(r"^(?:\d+|(?:\d+-)?(?:year|month|week|day|hour)s?-old|\d+-(?:year|month|week|day|hour)s?)$")

# word endings that mark biomedical terms (diseases, procedures, drugs, anatomy): preferred when the
# keyword budget forces a choice
_MEDICAL_SUFFIXES = (
    "itis", "osis", "emia", "aemia", "oma", "ectomy", "otomy", "ostomy", "plasty", "pathy", "algia",
    "scopy", "graphy", "ology", "iasis", "penia", "plasia", "trophy", "cyte", "mab", "nib", "pril",
    "sartan", "statin", "olol", "azole", "mycin", "cillin", "vir",
)


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop list plus question/consumer filler words (lower case)."""
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:  # keyword generators still work, with the filler list only
        log.warning("scikit-learn is not installed: keyword extraction uses a reduced stop list")
        return _QUESTION_WORDS | _FALLBACK_STOP
    return frozenset(ENGLISH_STOP_WORDS) | _QUESTION_WORDS


_FALLBACK_STOP = frozenset(
    """
    a about after all also am an and any are as at be because been before being between both but by can
    could did do for from had has have he her here him his how i if in into is it its me more most my no
    nor not of on or other our out over she should so some such than that the their them then there these
    they this those to too under up very was we were what when where which while who whom why will with
    you your
    """.split()
)


def _clean(text: str) -> str:
    """Unicode hyphens (U+2010, U+2011) become '-'; apostrophes and possessive 's become spaces."""
    return _APOSTROPHE.sub(" ", text.replace("\u2010", "-").replace("\u2011", "-"))


def _is_content(word: str, stops: frozenset[str]) -> bool:
    low = word.lower()
    if low in stops or _AGE.match(low):
        return False
    return len(low) >= 2


def _priority(word: str) -> int:
    """Higher for terms that look biomedical: acronyms/numbers, then medical word endings, then length."""
    low = word.lower()
    if any(c.isdigit() for c in word) or (word.isupper() and len(word) >= 2) or "-" in word:
        return 3
    if low.endswith(_MEDICAL_SUFFIXES) and len(low) >= 6:
        return 2
    return 1 if len(low) >= 7 else 0


def _specific(phrase: str) -> bool:
    """Whether a phrase can stand alone as a sub-query: several words, or one specific word."""
    if " " in phrase:
        return True
    return phrase not in _GENERIC and (len(phrase) >= 5 or _priority(phrase) >= 2)


def keywords(text: str, max_terms: int | None = None, exclude: Iterable[str] = ()) -> list[str]:
    """Content terms of ``text`` in order of first appearance, lower-cased, each once, none in ``exclude``.

    With ``max_terms``, the most biomedical-looking terms are kept (see :func:`_priority`), still in
    their original order.
    """
    stops = stop_words()
    skip = {e.lower() for e in exclude}
    seen: dict[str, int] = {}
    for m in _WORD.finditer(_clean(text)):
        word = m.group()
        if _is_content(word, stops) and word.lower() not in seen and word.lower() not in skip:
            seen[word.lower()] = _priority(word)
    terms = list(seen)
    if max_terms is not None and len(terms) > max_terms:
        keep = set(sorted(terms, key=lambda t: (-seen[t], terms.index(t)))[:max_terms])
        terms = [t for t in terms if t in keep]
    return terms


def phrases(text: str) -> list[str]:
    """Runs of content words delimited by stop words and punctuation (RAKE candidates, Rose et al. 2010)."""
    stops = stop_words()
    out: list[str] = []
    current: list[str] = []
    for m in _TOKEN_OR_BREAK.finditer(_clean(text)):
        word = m.group("word")
        if word is not None and _is_content(word, stops):
            current.append(word.lower())
            continue
        if current:
            out.append(" ".join(current))
        current = []
    if current:
        out.append(" ".join(current))
    return list(dict.fromkeys(out))


class OriginalConfig(QueryGenConfig):
    """The question as asked."""

    backend: Literal["original"] = "original"


class KeywordsConfig(QueryGenConfig):
    """Keyword rewrites of the question (no LLM)."""

    backend: Literal["keywords"] = "keywords"
    max_queries: int = Field(5, ge=1, le=5, description="Most keyword queries (content terms, then phrases).")
    max_terms: int = Field(10, ge=1, description="Most content terms in the first keyword query.")


class TopicNarrativeConfig(QueryGenConfig):
    """The BioGen topic label plus the narrative's most telling terms."""

    backend: Literal["topic_narrative"] = "topic_narrative"
    narrative_terms: int = Field(6, ge=0, description="Narrative terms added to the topic label.")
    verbatim: bool = Field(False, description="The topic label and the narrative as two queries, word for word "
                           "(CLaC 2024 SimpleQA), instead of one keyword query.")


class OriginalQuery:
    """The topic's question, unchanged (stage ``original``)."""

    name = "original"
    Config = OriginalConfig

    @classmethod
    def from_config(cls, cfg: OriginalConfig, ctx: BuildContext) -> OriginalQuery:
        return cls()

    def generate(self, topic: Topic) -> list[Query]:
        text = topic.question.strip()
        return [Query("q0", text, "original")] if text else []


class KeywordQueries:
    """Keyword rewrites of the question (stage ``keywords``); at most ``max_queries`` (≤ 5) queries.

    The first query is the question's content terms (at most ``max_terms``); the others are its
    stop-word delimited phrases, each a sub-query, when there are at least two of them (a single phrase
    would repeat the first query). A one-word phrase must look specific: not a generic word such as
    "treatment" or "tests", and at least five letters or a biomedical word ending.
    """

    name = "keywords"
    Config = KeywordsConfig

    def __init__(self, max_queries: int = 5, max_terms: int = 10) -> None:
        if not 1 <= max_queries <= 5:
            raise ValueError(f"max_queries must be 1..5, got {max_queries}")
        self.max_queries = max_queries
        self.max_terms = max_terms

    @classmethod
    def from_config(cls, cfg: KeywordsConfig, ctx: BuildContext) -> KeywordQueries:
        return cls(cfg.max_queries, cfg.max_terms)

    def generate(self, topic: Topic) -> list[Query]:
        terms = keywords(topic.question, self.max_terms)
        if not terms:
            return []
        texts = [" ".join(terms)]
        parts = [p for p in phrases(topic.question) if _specific(p)]
        if len(parts) >= 2:
            texts.extend(parts)
        texts = list(dict.fromkeys(texts))[: self.max_queries]
        return [Query(f"q{i}", t, "keywords") for i, t in enumerate(texts)]


class TopicNarrative:
    """The BioGen topic label plus the narrative's top terms not already in it (stage ``topic_narrative``).

    Returns nothing for topics without a label or narrative (BioASQ questions).
    """

    name = "topic_narrative"
    Config = TopicNarrativeConfig

    def __init__(self, narrative_terms: int = 6, verbatim: bool = False) -> None:
        self.narrative_terms = narrative_terms
        self.verbatim = verbatim

    @classmethod
    def from_config(cls, cfg: TopicNarrativeConfig, ctx: BuildContext) -> TopicNarrative:
        return cls(cfg.narrative_terms, cfg.verbatim)

    def generate(self, topic: Topic) -> list[Query]:
        if self.verbatim:
            texts = [t.strip() for t in (topic.topic or "", topic.narrative or "") if t.strip()]
            return [Query(f"q{i}", t, "topic_narrative") for i, t in enumerate(texts)]
        label = keywords(topic.topic or "")
        terms = label + keywords(topic.narrative or "", self.narrative_terms, exclude=label)
        return [Query("q0", " ".join(terms), "topic_narrative")] if terms else []
