"""TREC BioGen Task B outputs: the 2025 JSONL and the 2024 JSON (FORMATS.md §1, §3).

Writers turn :class:`~medcite.types.Answer` objects into the official files; the validators live in
:mod:`medcite.tasks.biogen_b_validate`.

The 2024 answer is one string with citations inline, so this module also owns the grammar of that string,
used by the writer and by the validator alike (they agree by construction):

- a *citation bracket* is ``[`` digits, further digit runs each after a comma and/or whitespace, an optional
  trailing comma and whitespace, ``]`` — the language of the official 2024 validator's citation pattern. Any
  other bracket (``[3H]thymidine``, ``[1-3]``, ``[Ca2+]``, ``[]``) is ordinary text;
- a bracket counts only inside a sentence: not at its start (only whitespace before it), not after its last
  ``.``/``!``/``?``, and not at all in a sentence without one (the official parser discards those);
- only the first 3 PMIDs of a bracket count;
- words are counted with every citation bracket removed, pure-punctuation tokens not counted (the official
  validator counts non-punctuation spaCy tokens; whitespace tokens are medcite's spaCy-free approximation).

The writer neutralises any citation bracket already in a sentence's text (an abstract's ``[12]`` reference
marker would otherwise be read as PMID 12) by rewriting it to parentheses, and returns those rewrites.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, InputError
from ..evidence.sentences import SPLITTERS
from ..io import JSONObject, atomic_write, write_json
from ..types import Answer

logger = logging.getLogger(__name__)

MAX_BRACKET_PMIDS = 3  # only the first 3 entries of a citation bracket count (2024 submission page)

# The official 2024 validator's language: the bracket opens on a digit, digit runs are separated by a comma and/or
# whitespace, a trailing comma/whitespace is tolerated; put another way, only digits, commas and whitespace, a digit
# first and before every comma. Nothing else is a citation. Separators are required between digit runs so that
# a long run of digits has one parse (a pattern that may split it anywhere backtracks exponentially).
CITATION_RE = re.compile(r"\[\d+(?:(?:,\s*|\s+)\d+)*,?\s*\]")
_DIGITS = re.compile(r"\d+")
_FINAL = ".!?"  # the official parser's sentence-final punctuation
_TRAILING_END = _FINAL + "\u2026"  # an ellipsis ends a truncated sentence: the citation goes before it too
_CLOSERS = "\"')]}\u00bb\u2019\u201d"
_LEADING_JUNK = _TRAILING_RUN = _TRAILING_END + _CLOSERS + ",;:"
_WEAK = re.compile(r"[\s,;:]+")
_WEAK_END = re.compile(r"[\s,;:]+$")


def biogen25_line(answer: Answer, team_id: str, run_id: str) -> JSONObject:
    """One line of the 2025 Task B submission: ``{"metadata": {...}, "responses": [{"text", "citations"}]}``."""
    return {
        "metadata": {"team_id": team_id, "run_id": run_id, "topic_id": str(answer.topic_id)},
        "responses": [{"text": s.text, "citations": [str(p) for p in s.pmids]} for s in answer.sentences],
    }


def write_biogen25(path: str | Path, answers: Iterable[Answer], team_id: str, run_id: str) -> None:
    with atomic_write(path) as fh:
        for a in answers:
            fh.write(json.dumps(biogen25_line(a, team_id, run_id), ensure_ascii=False) + "\n")


# ---- the 2024 answer string: reading -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CitationBracket:
    """A citation bracket in a 2024 answer: offsets into the answer, its PMIDs, and whether it counts.

    ``discarded`` is None for a bracket that counts, otherwise why the official parser drops it.
    """

    start: int
    end: int
    pmids: tuple[str, ...]
    discarded: str | None = None

    @property
    def counted(self) -> tuple[str, ...]:
        """The PMIDs that count: none when discarded, else the first three."""
        return () if self.discarded else self.pmids[:MAX_BRACKET_PMIDS]


@dataclass(frozen=True, slots=True)
class ParsedSentence:
    start: int
    end: int
    text: str
    brackets: tuple[CitationBracket, ...] = ()

    @property
    def pmids(self) -> tuple[str, ...]:
        """PMIDs this sentence cites, in order, each once (what the official parser assigns to it)."""
        seen: dict[str, None] = {}
        for b in self.brackets:
            for p in b.counted:
                seen.setdefault(p, None)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    sentences: tuple[ParsedSentence, ...]
    words: int

    @property
    def brackets(self) -> list[CitationBracket]:
        return [b for s in self.sentences for b in s.brackets]

    @property
    def cited(self) -> list[str]:
        """Every PMID cited by a counted bracket, in order of first citation."""
        seen: dict[str, None] = {}
        for s in self.sentences:
            for p in s.pmids:
                seen.setdefault(p, None)
        return list(seen)


def find_citations(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, pmids)`` of every citation bracket in ``text``, wherever it stands."""
    return [(m.start(), m.end(), tuple(_DIGITS.findall(m.group()))) for m in CITATION_RE.finditer(text)]


def _is_punct(token: str) -> bool:
    return all(unicodedata.category(ch).startswith("P") for ch in token)


def count_words(text: str) -> int:
    """Words of a 2024 answer: whitespace tokens once every citation bracket is removed, pure punctuation not
    counted. Removing a bracket never joins two tokens, and a ``.`` left alone by it is not a word."""
    return sum(1 for tok in CITATION_RE.sub(" ", text).split() if not _is_punct(tok))


def _discarded(sentence: str, offset: int) -> str | None:
    """Why the official parser drops a citation bracket at ``offset`` of ``sentence`` (None when it counts)."""
    if not sentence[:offset].strip():
        return "it stands at the start of a sentence"
    last = max(sentence.rfind(ch) for ch in _FINAL)
    if last <= 0:
        return "its sentence has no sentence-final punctuation (. ! ?)"
    if offset > last:
        return "it stands after the sentence-final punctuation"
    return None


def sentence_spans(answer: str, splitter: str = "syntok") -> list[tuple[int, int]]:
    """Sentences of a 2024 answer as consecutive spans, like spaCy's ``doc.sents`` (no text between them).

    Two repairs of splitter cuts where no sentence ends (syntok makes both after a parenthesis followed by a
    bracket: ``x (a) [1].`` gives ``x (a) [1]`` + ``.``, and ``Aa (b) [1].`` gives ``Aa (b)`` + ``[1].``):
    punctuation that opens a span and holds a ``.``/``!``/``?``/``…`` goes back to the sentence before, and a
    span opening with a citation bracket joins the sentence before when that one has no final punctuation.
    A citation after a real sentence end (``Done. [1].``) still opens its own sentence and is discarded.
    """
    if splitter not in SPLITTERS:
        raise ConfigError(f"unknown sentence splitter {splitter!r}", hint=f"choose one of: {', '.join(SPLITTERS)}")
    raw = SPLITTERS[splitter](answer)
    starts: list[int] = []
    for start, end in raw:
        lead = start
        while lead < end and (answer[lead] in _LEADING_JUNK or answer[lead].isspace()):
            lead += 1
        if starts and any(ch in _TRAILING_END for ch in answer[start:lead]):
            start = lead  # the cut-off end of the previous sentence stays with it
        elif not starts:
            start = lead  # nothing before the first sentence to give it to
        while start < end and answer[start].isspace():
            start += 1
        if start >= end or (starts and start <= starts[-1]):
            continue
        if starts and CITATION_RE.match(answer, start):
            prev = answer[starts[-1]:start].rstrip().rstrip(_CLOSERS)
            if prev and prev[-1] not in _TRAILING_END:
                continue  # a cut before a citation where no sentence ends: the citation belongs to that sentence
        starts.append(start)
    ends = [*starts[1:], len(answer)]
    return [(s, s + len(answer[s:e].rstrip())) for s, e in zip(starts, ends, strict=True)]


def parse_biogen24_answer(answer: str, splitter: str = "syntok") -> ParsedAnswer:
    """Read a 2024 answer string as the official parser does: sentences, their citation brackets, the words.

    The official parser splits sentences with spaCy; medcite uses its own splitter (``syntok``) through
    :func:`sentence_spans`, so sentence boundaries may differ on odd text. Brackets the writer places always
    sit on a word and before the final punctuation of their sentence, where a splitter keeps them.
    """
    found = find_citations(answer)
    sentences = []
    for s_start, s_end in sentence_spans(answer, splitter):
        text = answer[s_start:s_end]
        brackets = tuple(
            CitationBracket(start, end, pmids, _discarded(text, start - s_start))
            for start, end, pmids in found
            if s_start <= start < s_end
        )
        sentences.append(ParsedSentence(s_start, s_end, text, brackets))
    return ParsedAnswer(tuple(sentences), count_words(answer))


# ---- the 2024 answer string: writing -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A change the 2024 writer made to a sentence's own text so that it cannot be read as a citation."""

    topic_id: str
    sentence: int  # 0-based index in Answer.sentences
    before: str
    after: str
    reason: str = "a digits-only bracket in the text would be read as a PMID citation list"


def neutralise_citations(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Rewrite every citation bracket in ``text`` to parentheses; return the text and ``(before, after)`` pairs.

    Turning brackets into parentheses cannot create a new citation bracket, so one pass is enough.
    """
    changes: list[tuple[str, str]] = []

    def paren(m: re.Match[str]) -> str:
        after = "(" + m.group()[1:-1] + ")"
        changes.append((m.group(), after))
        return after

    return CITATION_RE.sub(paren, text), changes


def cite_sentence(text: str, pmids: Sequence[str]) -> str:
    """One sentence with ``[pmid,pmid]`` glued to its last word, before its final punctuation.

    Glued, not after a space as webis place it: spaCy's tokenizer keeps ``word[123`` one token, so no parser
    can start a sentence at the bracket, while `` [123]`` is a token of its own that en_core_web_sm takes for
    the start of a new sentence in about a quarter of answers (measured on BioASQ ideal answers), where the
    official parser discards it. The sentence's trailing run of punctuation is split at its first
    ``.``/``!``/``?``/``…``: the citation goes there, so the whole end (``Really?!``, ``said "stop."``,
    ``cut…``) stays after it and no splitter can leave the citation behind the end of its sentence.
    ``,``/``;``/``:`` in that run are dropped (a splitter may end a sentence there), and a sentence without
    ``.``/``!``/``?`` at its end gets a ``.``. ``text`` must already be free of citation brackets
    (:func:`neutralise_citations`) and ``pmids`` must be PMIDs (digits).
    """
    text = text.strip()
    tail = len(text)
    while tail > 0 and (text[tail - 1] in _TRAILING_RUN or text[tail - 1].isspace()):
        tail -= 1
    cut = next((i for i in range(tail, len(text)) if text[i] in _TRAILING_END), len(text))
    head, end = _WEAK_END.sub("", text[:cut]), _WEAK.sub("", text[cut:])
    if pmids and not any(ch.isalnum() for ch in head):
        raise InputError(f"cannot cite a sentence with no words before its final punctuation: {text!r}",
                         hint="drop the sentence or give it text; the official parser discards a citation at the "
                              "start of a sentence")
    cite = f"[{','.join(pmids)}]" if pmids else ""
    if not any(ch in _FINAL for ch in end):
        end += "."
    return f"{head}{cite}{end}"


def _checked_pmids(answer: Answer, i: int) -> list[str]:
    unique = list(dict.fromkeys(str(p) for p in answer.sentences[i].pmids))
    bad = [p for p in unique if not p.isascii() or not p.isdigit()]
    if bad:
        raise InputError(f"topic {answer.topic_id} sentence {i + 1}: {bad!r} are not PMIDs (digits only)",
                         hint="cite PubMed ids as bare integer strings, e.g. '12345678'")
    return unique


def biogen24_result(answer: Answer) -> tuple[JSONObject, list[Rewrite]]:
    """The 2024 result object ``{"topic_id", "answer", "references"}`` and the rewrites made to its text."""
    parts: list[str] = []
    rewrites: list[Rewrite] = []
    references: dict[str, None] = {}
    for i, s in enumerate(answer.sentences):
        pmids = _checked_pmids(answer, i)
        text, changes = neutralise_citations(s.text)
        rewrites.extend(Rewrite(str(answer.topic_id), i, before, after) for before, after in changes)
        parts.append(cite_sentence(text, pmids))
        for p in pmids:
            references.setdefault(p, None)
    result = {"topic_id": str(answer.topic_id), "answer": " ".join(parts), "references": list(references)}
    return result, rewrites


def biogen24_answer_text(answer: Answer) -> str:
    """The 2024 answer string: ``[pmid,pmid]`` glued to each sentence's last word, before its final punctuation."""
    return str(biogen24_result(answer)[0]["answer"])


def write_biogen24(path: str | Path, answers: Sequence[Answer], *, team_id: str, run_name: str,
                   contact_email: str) -> list[Rewrite]:
    """Write the 2024 submission; return (and log) every rewrite made to a sentence's own text."""
    results = []
    rewrites: list[Rewrite] = []
    for a in answers:
        result, changes = biogen24_result(a)
        results.append(result)
        rewrites.extend(changes)
    for r in rewrites:
        logger.info("topic %s sentence %d: %s -> %s (%s)", r.topic_id, r.sentence + 1, r.before, r.after, r.reason)
    if rewrites:
        logger.warning("%d digits-only brackets in answer text rewritten to parentheses so that they are not read "
                       "as citations (see the INFO log)", len(rewrites))
    write_json(path, {"team_id": team_id, "run_name": run_name, "contact_email": contact_email, "results": results})
    return rewrites
