"""Parse evidence-index citations out of generated text: ``[1]``, ``[1,3]``, ``[2-4]``, ``[1][2]`` and strays.

A bracket group counts as a citation when it holds only numbers, separators (``,`` ``;``), ranges (``-`` ``–``)
and an optional ``#``/``ref``/``evidence`` word; anything else in brackets (``[3H]thymidine``, a non-English
title) stays text. Groups that look like citations but name PMIDs or absurd ranges are returned as invalid so
the post-processor can record why they were dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from ..evidence.sentences import split_spans

_GROUP = re.compile(r"\[([^\[\]]{0,120})\]")
_ITEM = r"\s*(?:#|ref\.?\s*|refs\.?\s*|evidence\s*|doc\s*)?\d+(?:\s*[-–—]\s*\d+)?\s*"
_CITATION_BODY = re.compile(rf"^{_ITEM}(?:[,;]{_ITEM})*,?\s*$", re.IGNORECASE)
_PMID_BODY = re.compile(r"^\s*(?:PMID|PMIDs|pmid)\s*:?\s*[\d,;\s]+$")
_RANGE = re.compile(r"(\d+)\s*[-–—]\s*(\d+)")
_NUM = re.compile(r"\d+")
MAX_RANGE = 30
_NON_SPACE = re.compile(r"\S")


@dataclass
class DraftSentence:
    """A sentence as generated: clean text plus the evidence indices it cited (in order)."""

    text: str
    indices: list[int] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)  # citation-like groups that could not be used, with reasons


def parse_group(body: str) -> tuple[list[int], str | None]:
    """Indices named by one bracket body, or an error reason when it is citation-like but unusable."""
    if _PMID_BODY.match(body):
        return [], f"[{body.strip()}] cites PMIDs directly, not evidence indices"
    if not _CITATION_BODY.match(body):
        return [], None
    out: list[int] = []
    for part in re.split(r"[,;]", body):
        part = part.strip()
        if not part:
            continue
        rng = _RANGE.search(part)
        if rng:
            lo, hi = int(rng.group(1)), int(rng.group(2))
            if hi < lo or hi - lo >= MAX_RANGE:
                return out, f"range [{part}] is reversed or too long"
            out.extend(range(lo, hi + 1))
        else:
            out.append(int(_NUM.search(part).group(0)))  # type: ignore[union-attr]
    return out, None


def is_citation(body: str) -> bool:
    return bool(_CITATION_BODY.match(body) or _PMID_BODY.match(body))


def split_cited_sentences(text: str) -> list[DraftSentence]:
    """Split generated text into sentences and attach each citation group to its sentence.

    Citation groups are cut out first (so they never confuse the sentence splitter) and remembered by position.
    A group inside a sentence belongs to it; one written after the sentence's final punctuation
    (``LDL fell. [1]``) or at the start of the next sentence belongs to the sentence before it (to the first
    sentence when nothing precedes it).
    """
    # citation groups, with runs of adjacent groups ([1][2], [1] [2]) merged into one cut
    runs: list[tuple[int, int, list[tuple[list[int], str | None]]]] = []
    for m in _GROUP.finditer(text):
        if not is_citation(m.group(1)):
            continue
        parsed = parse_group(m.group(1))
        if runs and not text[runs[-1][1] : m.start()].strip():
            runs[-1][2].append(parsed)  # in place: a long run of groups stays linear
            runs[-1] = (runs[-1][0], m.end(), runs[-1][2])
        else:
            runs.append((m.start(), m.end(), [parsed]))
    pieces: list[str] = []
    marks: list[tuple[int, list[int], str | None]] = []  # (position in clean text, indices, error)
    stops: list[int] = []  # sentence ends a citation made certain: "... topoisomerase II [3]. Condensin ..."
    pos = 0
    last = 0
    for start, end, groups in runs:
        before_punct = end < len(text) and text[end] in ".,;:!?)"
        cut = start
        if before_punct:  # "LDL [1]." -> "LDL." so the splitter sees a normal sentence end
            while cut > last and text[cut - 1].isspace():
                cut -= 1
        pieces.append(text[last:cut])
        pos += cut - last
        for found, err in groups:
            marks.append((pos, found, err))
        if before_punct and text[end] in ".!?" and (end + 1 == len(text) or text[end + 1].isspace()):
            stops.append(pos + 1)  # a cited sentence ends at its full stop, whatever word precedes the bracket
        if not before_punct:
            pieces.append(" ")
            pos += 1
        last = end
    pieces.append(text[last:])
    clean = "".join(pieces)
    spans = [(s, e) for s, e in _cut_at(split_spans(clean), stops, clean) if re.search(r"\w", clean[s:e])]
    if not spans:
        return []
    drafts = [DraftSentence(_tidy(clean[s:e])) for s, e in spans]
    # each mark finds its sentence by binary search (a long reply has as many marks as sentences)
    starts = [s for s, _ in spans]
    ends = [e for _, e in spans]
    for p, found, err in marks:
        k = bisect_right(starts, p) - 1
        if k >= 0 and p < ends[k]:
            # a group that opens a sentence (only whitespace before it) belongs to the previous one
            owner = k if (k == 0 or _NON_SPACE.search(clean, starts[k], p)) else k - 1
        else:  # between sentences: the last one that ended before it (the first when none did)
            owner = max(bisect_right(ends, p) - 1, 0)
        drafts[owner].indices.extend(found)
        if err:
            drafts[owner].invalid.append(err)
    return [d for d in drafts if d.text]


_VERDICT = re.compile(r"^\s*(?:yes|no|indeed|correct|incorrect|true|false)(?:\s*,?\s*(?:it|they|this|that)\s+"
                      r"(?:does|do|is|are|can|did|was|were|has|have)(?:\s+not|n't)?)?\s*[.!]?\s*$", re.IGNORECASE)


def carry_verdicts(drafts: list[DraftSentence]) -> list[DraftSentence]:
    """A bare verdict (``Yes.``, ``No, it does not.``) that cites nothing takes the citations of the sentence
    after it: the evidence for a yes/no answer is the evidence of the finding that follows, and a capable model
    answering a yes/no question writes the verdict first without a bracket of its own."""
    for n, draft in enumerate(drafts[:-1]):
        if not draft.indices and not draft.invalid and _VERDICT.match(draft.text):
            follower = next((d for d in drafts[n + 1:] if d.indices), None)
            if follower is not None:
                draft.indices = list(follower.indices)
    return drafts


def _cut_at(spans: list[tuple[int, int]], stops: list[int], text: str) -> list[tuple[int, int]]:
    """``spans`` cut again at each position of ``stops`` that falls inside one of them.

    The sentence splitter takes the word before a full stop for an abbreviation now and then (``topoisomerase
    II.``, ``etc.``, ``approx.``) and runs two sentences together; a citation bracket right before the full stop
    says the writer ended a sentence there.
    """
    if not stops:
        return spans
    out: list[tuple[int, int]] = []
    for s, e in spans:
        first = bisect_right(stops, s)  # stops are in text order: only those inside this span, found by bisection
        for stop in stops[first:bisect_left(stops, e)]:
            if text[stop:e].strip() and text[s:stop].strip():
                rest = len(text[stop:e]) - len(text[stop:e].lstrip())
                out.append((s, stop))
                s = stop + rest
        out.append((s, e))
    return out


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s+([.,;:!?)])", r"\1", text)
    text = re.sub(r"([(])\s+", r"\1", text)
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"([.,;:])\1+", r"\1", text)
    return " ".join(text.split()).strip()


# PMIDs named in the running text (not as [i] citations): "PMID: 123", "PMIDs 1, 2 and 3", "pubmed/123",
# a bracket or parenthesis holding only a 7-9 digit number (PubMed's range) -- never a citation (issue 16)
_PMID_WORDS = re.compile(
    r"\(?\s*\bPMIDs?\s*[:#]?\s*\d{1,9}(?:\s*(?:,|;|and|&)\s*\d{1,9})*\s*\)?"
    r"|\b(?:https?://)?(?:www\.)?(?:pubmed\.ncbi\.nlm\.nih\.gov|ncbi\.nlm\.nih\.gov/pubmed)/\d{1,9}/?"
    r"|\(\s*\d{7,9}\s*\)",
    re.IGNORECASE,
)


def strip_pmid_mentions(text: str, evidence_pmids: set[str]) -> tuple[str, list[tuple[str, str]]]:
    """Remove PMIDs that the generated text names itself; return the clean text and ``(mention, reason)`` pairs.

    A citation is only ever an evidence index (``[2]``) mapped to the PMID of that evidence item, so a PMID in
    the prose is neither kept (it was not checked against anything) nor turned into a citation: a PMID outside
    the evidence is one the generator did not read (or invented); one inside it is reported so a reader sees
    the generator bypassed the index format.
    """
    found: list[tuple[str, str]] = []

    def cut(m: re.Match[str]) -> str:
        mention = m.group(0).strip()
        pmids = re.findall(r"\d{1,9}", mention)
        outside = [p for p in pmids if p not in evidence_pmids]
        if outside:
            reason = (f"PMID {', '.join(outside)} named in the text is not in the evidence shown to the generator: "
                      "removed, never cited")
        else:
            reason = "PMID named in the text instead of an evidence index [i]: removed (cite with [i])"
        found.append((mention, reason))
        return " "

    clean = _PMID_WORDS.sub(cut, text)
    return (_tidy(clean) if found else text), found
