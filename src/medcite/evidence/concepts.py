"""What a question asks and what it is about: its BioASQ type by rules, and its key concepts.

- :func:`question_type`: ``yesno`` when the question opens with an auxiliary verb ("Is", "Does", "Can", ...),
  also after a leading clause ending in a comma ("In adults with X, does Y ..."), or ends "yes or no?"; ``list``
  for "List ...", "Which ... are ...", "What are the ...s"; ``factoid`` for the other wh-questions (what,
  which, who, where, when, how many ...); ``summary`` otherwise. On the 1,502 BioASQ 7b-11b dev questions:
  99.75 % of yes/no questions found, 74.8 % four-way accuracy (benchmarks/bench_offline_answer.py measures it).
- :func:`key_concepts`: the rare content words and phrases of a question, the words a relevant article must
  contain. Rare is a Zipf frequency under 3.0 in general English (wordfreq; Speer et al. 2018), or a token
  that looks like a name: digits, inner hyphens or capitals ("BRCA1", "IL-6", "HercepTest").
- :func:`missing_concepts`: the key concepts no retrieved article mentions (a typo within a difflib ratio of
  0.85 still counts as a mention), or that the index holds no document for. A question about something the
  corpus never mentions is answered with an abstention, not with sentences that share its common words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..registry import require

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..types import Hit

QUESTION_TYPES = ("yesno", "factoid", "list", "summary")
RARE_ZIPF = 3.0
TYPO_RATIO = 0.85

_AUX = ("is|are|am|was|were|does|do|did|can|could|has|have|had|should|would|will|shall|may|might|must")
_YESNO = re.compile(rf"^(?:{_AUX})\b", re.IGNORECASE)
_YESNO_AFTER_CLAUSE = re.compile(rf",\s*(?:{_AUX})\b\s+\w", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\b(?:yes or no|true or false)\W*$", re.IGNORECASE)
_LIST = re.compile(
    r"^(?:list\b|name\b.*\b(?:genes|proteins|drugs|types|members|features)\b|enumerate\b|"
    r"which\b[^?]*?\b(?:are|were|have been)\b|what\s+are\s+(?:the\s+)?(?:\w+\s+){0,4}?\w+s\b)",
    re.IGNORECASE)
_LIST_NOT = re.compile(r"^what\s+are\s+(?:the\s+)?(?:\w+\s+)?(?:effects?|differences?|roles?|functions?|"
                       r"mechanisms?|advantages?|benefits?|implications?|characteristics?|uses?)\b",
                       re.IGNORECASE)
_FACTOID = re.compile(r"^(?:what|which|who|whom|whose|where|when|how\s+(?:many|much|long|often|old|large)|"
                      r"name|in\s+which|to\s+which|from\s+which|at\s+what|by\s+which|through\s+which)\b",
                      re.IGNORECASE)
_SUMMARY = re.compile(r"^(?:what\s+(?:is|are)\s+(?:the\s+)?(?:role|function|mechanism|effect|difference|"
                      r"association|relationship|impact|use|purpose)|how\s+(?:does|do|is|are|can)|why|describe|"
                      r"explain|summari[sz]e)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019\-\u2010-\u2014/+.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_NAME_LIKE = re.compile(r"[a-z]-?[A-Z]|[A-Z][^-]*-|-.*[A-Z]|^[A-Z]{2,}")
_STOP = frozenset(
    "a an the of in on for to and or is are was were be been being by with as at from that this these those which "
    "what who whom whose how why when where does do did can could should would may might will shall must has have "
    "had it its their there than not no any all some such into about between within via per versus vs used use "
    "using patients patient human humans people adult adults children child treatment treated disease diseases "
    "effect effects role associated association risk case cases study studies list name describe explain".split())


def question_type(question: str) -> str:
    """``yesno``, ``factoid``, ``list`` or ``summary`` by the rules of the module doc."""
    q = " ".join(question.split()).strip()
    if _YESNO.match(q) or _YES_OR_NO.search(q):
        return "yesno"
    head = q.split("?")[0]
    if "," in head and _YESNO_AFTER_CLAUSE.search(head) and not _FACTOID.match(q) and not _LIST.match(q):
        return "yesno"
    if _LIST.match(q) and not _LIST_NOT.match(q):
        return "list"
    if _SUMMARY.match(q):
        return "summary"
    if _FACTOID.match(q):
        return "factoid"
    return "summary"


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """Zipf frequency of ``word`` in general English (0 for a word wordfreq has never seen)."""
    wordfreq = require("wordfreq", "evidence", "key concepts of a question (word rarity)")
    return float(wordfreq.zipf_frequency(word.lower(), "en"))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def is_rare(token: str, threshold: float = RARE_ZIPF) -> bool:
    """A name-like token (digits, inner hyphen or capitals) or a word rare in general English."""
    if token.lower() in _STOP or len(token) < 2:
        return False
    if token.isalpha() and token.islower() and len(token) <= 4:
        return False  # a short lower-case word is a typo or a common word ("tye"); short names are capitals
    if any(c.isdigit() for c in token) or (_NAME_LIKE.search(token) and not token.isupper()):
        return True  # BRCA1, IL-6, HercepTest; an all-capitals acronym is rare only by its frequency (not FDA)
    parts = [p for p in re.split(r"[-/]", token) if p]
    return any(zipf(p) < threshold for p in parts if len(p) > 2)


def key_concepts(question: str, threshold: float = RARE_ZIPF) -> list[str]:
    """The rare words of the question (see the module doc), adjacent ones joined into one phrase, in order."""
    out: list[str] = []
    run: list[str] = []
    words = tokens(question)
    for i, tok in enumerate(words):
        rare = is_rare(tok, threshold) and not (i == 0 and tok.lower() in _STOP)
        if rare:
            run.append(tok)
            continue
        if run:
            out.append(" ".join(run))
            run = []
    if run:
        out.append(" ".join(run))
    return list(dict.fromkeys(out))


def _clean(token: str) -> str:
    return _POSSESSIVE.sub("", token.lower()).strip(".'\u2019")


def _norm_tokens(text: str) -> set[str]:
    """Lower-cased tokens, possessive and edge punctuation removed ("Ewing's" -> "ewing"); a compound also
    gives its parts and its closed form ("long-COVID" -> "long-covid", "long", "covid", "longcovid")."""
    out: set[str] = set()
    for t in tokens(text):
        t = _clean(t)
        out.add(t)
        parts = [p for p in _COMPOUND.split(t) if p]
        if len(parts) > 1:
            out.update(parts)
            out.add("".join(parts))
    return out


_COMPOUND = re.compile(r"[-/\u2010-\u2014]")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_SUFFIX = re.compile(r"(?:ations?|ating|ated|ates?|ions?|ings?|ed|es|s)$")


def _stem(word: str) -> str:
    """``word`` without an inflectional suffix when at least 5 letters remain ("modulated" -> "modulat")."""
    stem = _SUFFIX.sub("", word)
    return stem if len(stem) >= 5 else word


def _word_in(word: str, vocabulary: set[str]) -> bool:
    if word in vocabulary:
        return True
    if len(word) < 5:  # short names ("IL6", "MDS") must match exactly: one letter changes what they name
        return False
    # an inflection ("methylate" / "methylation") shares a stem: the word without an inflectional suffix
    stem = _stem(word)
    if stem != word and any(v.startswith(stem) for v in vocabulary):
        return True
    close = difflib.get_close_matches(word, [v for v in vocabulary if abs(len(v) - len(word)) <= 2],
                                      n=1, cutoff=TYPO_RATIO)
    return bool(close)


def mentions(concept: str, vocabulary: set[str]) -> bool:
    """Whether every word of ``concept`` is in ``vocabulary`` (lower-cased tokens): exactly, as an inflection
    of the same stem, or within a difflib ratio of :data:`TYPO_RATIO` (a misspelt drug name still matches)."""
    return all(_word_in(word, vocabulary) or _parts_in(word, vocabulary) for word in _concept_words(concept))


def _concept_words(concept: str) -> list[str]:
    return [_clean(t) for t in tokens(concept)]


def _parts_in(word: str, vocabulary: set[str]) -> bool:
    """A compound ("angiotensin-converting-enzyme") is mentioned when each of its parts is."""
    parts = [p for p in _COMPOUND.split(word) if p]
    return len(parts) > 1 and all(_word_in(p, vocabulary) for p in parts)


def missing_concepts(concepts: Sequence[str], texts: Iterable[str],
                     in_corpus: Callable[[str], bool] | None = None) -> list[str]:
    """The words of ``concepts`` (each word of a phrase on its own) that none of ``texts`` (the retrieved
    articles) mentions; with ``in_corpus`` (whether any document of the corpus mentions a word, e.g. by a
    search of the BM25 index) only those the corpus lacks too, so a word retrieval missed is not reported."""
    vocabulary: set[str] = set()
    for text in texts:
        vocabulary |= _norm_tokens(text)
    out = []
    for concept in concepts:
        for word in concept.split():
            if not is_rare(word) or mentions(word, vocabulary):
                continue
            if in_corpus is None or not in_corpus(word):
                out.append(word)
    return list(dict.fromkeys(out))


def corpus_lookup(ctx: BuildContext | None, index: str | None, k: int = 5) -> Callable[[str], bool] | None:
    """``word -> whether the corpus mentions it``: a search of the index ``index`` of the build context for the
    word, its top ``k`` articles read for a mention (None without a context, a store or such an index)."""
    if ctx is None or index is None or ctx.store is None or index not in ctx.settings.indexes:
        return None
    store = ctx.store

    @lru_cache(maxsize=4096)
    def in_corpus(word: str) -> bool:
        hits: list[Hit] = ctx.index(index).search(word, k)
        found = store.get_many([h.pmid for h in hits])
        return any(mentions(word, _norm_tokens(a.text)) for a in found.values())

    return in_corpus
