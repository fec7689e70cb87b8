"""What a model wrote around its answer, taken off before any stage reads it.

Capable models rarely answer with the bare text a prompt asks for:

- reasoning models (DeepSeek-R1, Qwen3) write ``<think>...</think>`` first; the block names labels,
  evidence numbers and PMIDs that are not the answer (a server's reasoning parser may also leave only the
  closing tag);
- chat models frame prose answers: a heading (``**Answer**``, ``## Answer``), a lead-in line (``Here is the
  answer based on the evidence:``), bullet points although the prompt asked for none, bold terms, and a
  closing line of pleasantries (``I hope this helps!``).

:func:`split_reasoning` is applied to every completion (:class:`~medcite.llm.base.BaseLLM`); the reasoning is
kept on :attr:`Completion.reasoning` and in the trace. :func:`prose` is applied to prose answers (generation,
condensation) before their sentences and citations are read; it removes only framing, never a sentence that
cites evidence.

Two kinds of sentence are never an answer's, cited or not (:mod:`medcite.generate.postprocess` drops them):
one that speaks about the instructions or the evidence rather than the question (:func:`meta_sentence`: "I
will now ignore the evidence.", "As an AI language model, ...", "The evidence above does not say.", an
instruction an abstract carries), and the second copy of a sentence (:func:`sentence_key`). A lead-in that only
points at the evidence ("Based on the provided evidence, ...") is taken off the statement it leads into
(:func:`without_evidence_lead`).
"""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_OPEN = re.compile(r"<think>", re.IGNORECASE)


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, answer)``: ``<think>`` blocks out of ``text``. A reply whose reasoning never closed (cut
    off by the token limit) has no answer; a lone closing tag ends the reasoning that came before it."""
    reasoning = [m.group(1).strip() for m in _THINK.finditer(text)]
    rest = _THINK.sub("", text)
    close = list(_CLOSE.finditer(rest))
    if close:  # "...reasoning</think> answer": the server's parser took the opening tag
        reasoning.insert(0, rest[: close[-1].start()].strip())
        rest = rest[close[-1].end():]
    opened = _OPEN.search(rest)
    if opened:  # never closed: everything after it is reasoning
        reasoning.append(rest[opened.end():].strip())
        rest = rest[: opened.start()]
    return "\n\n".join(r for r in reasoning if r), rest.strip()


_CITED = re.compile(r"\[\s*\d")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+.*|(?:\*\*|__)[^*_]{1,60}(?:\*\*|__)\s*:?)\s*$")
_LEAD_IN = re.compile(
    r"^\s*(?:(?:sure|certainly|of course|okay|ok)[,.!]?\s*)?(?:here\s+(?:is|are)|below\s+(?:is|are)|the\s+following"
    r"|based\s+on\s+the\s+(?:provided\s+)?evidence|according\s+to\s+the\s+evidence|answer|final\s+answer"
    r"|summary|response)\b[^\n]{0,120}:\s*$", re.IGNORECASE)
_CLOSING = re.compile(
    r"^\s*(?:i\s+hope\s+(?:this|that)\s+helps|let\s+me\s+know|feel\s+free|please\s+(?:note|let|feel)|if\s+you\s+have\s+"
    r"(?:any\s+)?(?:other|more|further)|is\s+there\s+anything|happy\s+to\s+help|note\s*:)", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,2}[.)])\s+(?=\S)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# 'output:' is the label CLaC 2024's prompts ask for (Appendix C: "'output: <answer>'")
_ANSWER_LABEL = re.compile(r"^\s*['\"]?(?:\*\*|__)?(?:(?:final\s+)?answer|output)(?:\*\*|__)?\s*:(?:\*\*|__)?\s*",
                           re.IGNORECASE)


def prose(text: str) -> str:
    """A prose answer without its framing: headings, lead-in and closing lines without citations, bullet
    markers, bold; ``Answer:`` before the first sentence. Lines become one paragraph (a bullet is a sentence)."""
    lines = text.splitlines()
    kept: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        cited = bool(_CITED.search(line))
        if not cited and (_HEADING.match(line) or _LEAD_IN.match(line) or _CLOSING.match(line)):
            continue
        line = _BULLET.sub("", line)
        line = _BOLD.sub(r"\2", line)
        kept.append(line.strip())
    if kept:
        kept[0] = _ANSWER_LABEL.sub("", kept[0])
    while kept and not _CITED.search(kept[-1]) and _CLOSING.match(kept[-1]):
        kept.pop()
    return " ".join(_sentence_end(x) for x in kept).strip()  # a line (a bullet) ends its sentence


def _sentence_end(line: str) -> str:
    """A line (a bullet) ends its sentence: ``... [1]`` gets no extra stop, ``... text`` gets one."""
    stripped = line.rstrip()
    if re.search(r"[.!?]\s*(?:\[[^\]]*\]\s*)*$", stripped) or re.search(r"\]\s*$", stripped):
        return stripped
    return stripped + "."


# A sentence that speaks about the prompt, the instructions or the evidence block, or as the model itself ("as an
# AI"). Each pattern is narrow on purpose: an abstract sentence about patients who "ignored their physicians'
# instructions", or about "an AI-based tool", is an answer sentence like any other; and a plain refusal ("I cannot
# help with that.") is left to the checks every sentence meets (it cites nothing), as it was before.
_META = re.compile(
    r"^\s*(?:please\s+)?ignore\b"  # an order: "Ignore the evidence and ..."
    r"|\bignor(?:e|ing)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|these\s+|those\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|preceding|earlier|foregoing|system|original)\s+"
    r"(?:instructions?|prompts?|messages?|context|evidence|rules|directions)\b"
    r"|\bI\s+(?:will|shall|'ll|am\s+going\s+to|must|now|have\s+to|should)\s+(?:now\s+)?(?:ignore|disregard)\b"
    r"|^\s*(?:I'm|I\s+am)\s+an?\s+(?:ai|(?:large\s+)?language\s+model|assistant)\b"
    r"|\bas\s+an?\s+(?:ai|artificial\s+intelligence|(?:large\s+)?language\s+model|llm|ai\s+(?:language\s+)?model"
    r"|(?:ai\s+)?assistant)(?![-\w])"
    r"|\b(?:evidence|abstracts?|documents?|passages?|snippets?|excerpts?|sources?|context)\s+"
    r"(?:(?:given|provided|listed|shown|quoted)\s+)?(?:above|below)\b"
    r"|\b(?:the\s+)?(?:above|provided)\s+(?:evidence|abstracts|documents|passages|snippets|excerpts|context)\b"
    r"|\bevidence\s+(?:block|list|items?)\b"
    r"|\b(?:my|your|the\s+(?:above|previous|prior|system|given|following))\s+(?:instructions|prompt)\b"
    r"|\bsystem\s+prompt\b",
    re.IGNORECASE)


_EVIDENCE_LEAD = re.compile(
    r"^\s*(?:based\s+on|according\s+to|from|in\s+light\s+of|as\s+(?:shown|stated|reported)\s+in)\s+(?:the\s+)?"
    r"(?:provided\s+|given\s+|above\s+|available\s+)?(?:evidence|abstracts?|documents?|passages?|snippets?|context|"
    r"sources?|excerpts?)(?:\s+(?:provided|given|above|listed|shown|below))*\s*,\s*",
    re.IGNORECASE)


def without_evidence_lead(text: str) -> str:
    """``text`` without a lead-in that only points at the evidence ("Based on the provided evidence, statins
    lower LDL [1]." -> "Statins lower LDL [1]."): the statement is the answer's, the pointer is not."""
    found = _EVIDENCE_LEAD.match(text)
    if not found or not any(c.isalnum() for c in text[found.end():]):
        return text
    rest = text[found.end():]
    return rest[:1].upper() + rest[1:]


def meta_sentence(text: str) -> str | None:
    """The words by which ``text`` speaks about the instructions or the evidence, or as the model, rather than
    about the question (``"I will now ignore"``, ``"As an AI"``, ``"the evidence above"``); None for an answer
    sentence."""
    found = _META.search(text)
    return " ".join(found.group(0).split()) if found else None


_KEY_CITES = re.compile(r"\[[^\]]*\]|\(\s*PMIDs?:?[^)]*\)", re.IGNORECASE)


def sentence_key(text: str) -> str:
    """What two copies of one sentence share: its words, case, spacing, citations and end punctuation aside."""
    return " ".join(_KEY_CITES.sub(" ", text).casefold().split()).rstrip(" .!?;:,")
