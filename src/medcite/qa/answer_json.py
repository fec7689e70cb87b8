"""Reading an LLM's BioASQ answer: a JSON object found tolerantly, then exact and ideal answers normalised by type.

:func:`extract_json` takes the first JSON value out of a model's reply whatever surrounds it: ``<JSON>`` tags,
code fences, prose before or after, single quotes and Python literals (``True``, ``None``), smart quotes and
trailing commas. Anything it cannot read raises :class:`AnswerFormatError`, whose message says what was wrong
in words a model can act on (the qa backend feeds it back once). :func:`answer_fields` finds the
``exact_answer`` / ``ideal_answer`` keys under their usual aliases; the ``normalize_*`` functions turn values
into what BioASQ reads: ``"yes"``/``"no"``; at most 5 ranked factoid names; list names; an ideal answer of at
most ``max_words`` words (whole sentences while they fit).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

_TAGGED = re.compile(r"<json>(.*?)(?:</json>|$)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[\w-]*")
_SMART = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_JSON_WORDS = re.compile(r"\b(true|false|null)\b")
_EXACT_KEYS = ("exact_answer", "exact answer", "exactanswer", "exact", "answer", "answers", "entities", "items")
_IDEAL_KEYS = ("ideal_answer", "ideal answer", "idealanswer", "ideal", "summary", "paragraph")
_QUOTES = "\"'`*_\u201c\u201d\u2018\u2019"
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")


class AnswerFormatError(ValueError):
    """The model's answer is not the JSON asked for; the message says why (it is shown to the model)."""


def _balanced(text: str, start: int) -> str | None:
    """The bracketed value starting at ``text[start]`` (``{`` or ``[``), brackets inside strings ignored; None
    when it is never closed."""
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    pairs = {"{": "}", "[": "]"}
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            # an apostrophe inside a word (don't) is not a quote
            if ch == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < len(text) and text[i + 1].isalnum():
                continue
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None
            stack.pop()
            if not stack:
                return text[start:i + 1]
    return None


def _loads(candidate: str) -> object:
    """Strict JSON, then a Python literal, then both again after light repairs; raises the JSON error."""
    first: json.JSONDecodeError | None = None
    variants = [candidate]
    repaired = _TRAILING_COMMA.sub(r"\1", candidate.translate(_SMART))
    if repaired != candidate:
        variants.append(repaired)
    for text in variants:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            first = first or exc
        for literal in (text, _JSON_WORDS.sub(lambda m: {"true": "True", "false": "False", "null": "None"}[m.group(1)],
                                              text)):
            try:
                return ast.literal_eval(literal)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    assert first is not None
    raise AnswerFormatError(f"the JSON is not valid ({first.msg} at line {first.lineno}, column {first.colno})")


def extract_json(text: str) -> object:
    """The first JSON object (or, when there is none, array) in a model's reply (see the module docstring)."""
    body = text or ""
    tagged = _TAGGED.search(body)
    if tagged:
        body = tagged.group(1)
    body = _FENCE.sub("\n", body)
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    if not starts:
        raise AnswerFormatError("the answer holds no JSON object (no '{' found)")
    # an object wins over a list: a list before the object is usually prose such as "[1] ..."
    start = body.find("{") if body.find("{") >= 0 else min(starts)
    candidate = _balanced(body, start)
    if candidate is None:
        raise AnswerFormatError("the JSON object is never closed (the answer may have been cut off): "
                                "close every bracket and quote")
    return _loads(candidate)


def _norm_key(key: object) -> str:
    return re.sub(r"[\s_-]+", " ", str(key)).strip().casefold().replace(" ", "_")


def _lookup(obj: dict[str, object], keys: Sequence[str]) -> tuple[bool, object]:
    norm = {_norm_key(k): v for k, v in obj.items()}
    for key in keys:
        k = _norm_key(key)
        if k in norm:
            return True, norm[k]
    return False, None


def answer_fields(value: object, need_exact: bool, need_ideal: bool) -> tuple[object, object]:
    """``(exact, ideal)`` from a parsed reply; raises AnswerFormatError naming a missing key.

    A bare list or string stands for the exact answer; an object with one key holding an object is unwrapped.
    """
    if isinstance(value, (list, tuple, str)) and need_exact and not need_ideal:
        return value, None
    if not isinstance(value, dict):
        raise AnswerFormatError(f"the answer is a JSON {type(value).__name__}, not an object with the keys asked for")
    if len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, dict):
            value = inner
    exact = ideal = None
    if need_exact:
        found, exact = _lookup(value, _EXACT_KEYS)
        if not found:
            raise AnswerFormatError(f'the JSON object has no "exact_answer" key (it has: {", ".join(map(str, value))})')
    if need_ideal:
        found, ideal = _lookup(value, _IDEAL_KEYS)
        if not found:
            raise AnswerFormatError(f'the JSON object has no "ideal_answer" key (it has: {", ".join(map(str, value))})')
    return exact, ideal


_ITEM_SPLIT = re.compile(r"\s*(?:\n+|;|,(?![^(]*\)))\s*")


def plain_answer(text: str, qtype: str, part: str) -> object:
    """A reply written without JSON (``qa.json_instruction`` false: DS@GT's query template as printed) as the value
    :func:`answer_fields` reads: the ideal answer as written; a yes/no word; one entity per line, semicolon or
    comma (a comma inside parentheses kept). Raises AnswerFormatError for an empty reply."""
    body = (text or "").strip()
    if not body:
        raise AnswerFormatError("the answer is empty")
    if part == "ideal":
        return {"ideal_answer": body}
    if qtype == "yesno":
        return body
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) > 1 and all(_BULLET.match(line) for line in lines[1:]):
        lines = lines[1:]  # a lead-in line ("The answers are:") before a bulleted list
    return [item for item in _ITEM_SPLIT.split("\n".join(lines)) if item.strip()]


def normalize_yesno(value: object) -> str:
    """``"yes"`` or ``"no"`` from a string, a boolean or a one-item list; raises AnswerFormatError otherwise."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return normalize_yesno(value[0])
    if isinstance(value, str):
        words = re.findall(r"[a-z]+", value.casefold())
        if words and words[0] in ("yes", "no"):
            return words[0]
        if words and words[0] in ("true", "false"):
            return "yes" if words[0] == "true" else "no"
    raise AnswerFormatError(f'the exact answer of a yes/no question must be "yes" or "no", got {value!r}')


def _item(value: object) -> str:
    if isinstance(value, (list, tuple)):  # a synonym list: BioASQ reads only its first name
        return _item(value[0]) if value else ""
    if isinstance(value, dict):
        for key in ("name", "entity", "text", "answer"):
            if key in value:
                return _item(value[key])
        return ""
    if value is None or isinstance(value, bool):
        return ""
    item = _BULLET.sub("", re.sub(r"\s+", " ", str(value)).strip())
    previous = None
    while item != previous:
        previous = item
        item = item.strip().rstrip(";,").strip()
        if item.endswith(".") and len(item.split()) <= 3:  # "Daratumumab." is a name; a sentence keeps its stop
            item = item[:-1].strip()  # (BioASQ's gold writes 35 of its 40 names that end in "." as sentences)
        if len(item) >= 2 and item[0] in _QUOTES and item[-1] in _QUOTES:
            item = item[1:-1]
    return item


def normalize_entities(value: Any, limit: int) -> tuple[str, ...]:
    """Ranked entity names (factoid: ``limit`` 5; list): one name per item (the first of a synonym list), cleaned,
    deduplicated case-insensitively, at most ``limit``. A single string is one entity."""
    items = [value] if isinstance(value, (str, dict)) or value is None else list(value)
    out: list[str] = []
    seen: set[str] = set()
    for raw in items:
        item = _item(raw)
        if item and item.casefold() not in seen:
            seen.add(item.casefold())
            out.append(item)
        if len(out) >= limit:
            break
    return tuple(out)


def cap_words(text: str, max_words: int) -> str:
    """Whole sentences while they fit in ``max_words`` words; a first sentence longer than that is cut."""
    from ..evidence.sentences import split_spans

    text = re.sub(r"\s+", " ", text).strip()
    if len(text.split()) <= max_words:
        return text
    kept: list[str] = []
    count = 0
    for start, end in split_spans(text):
        words = len(text[start:end].split())
        if count + words > max_words:
            break
        kept.append(text[start:end])
        count += words
    if kept:
        return " ".join(kept)
    return " ".join(text.split()[:max_words])


def normalize_ideal(value: object, max_words: int) -> str:
    """One paragraph of at most ``max_words`` words from a string or a list of strings; raises when empty. A
    sentence that speaks about the instructions or the evidence, and the second copy of a sentence, are left out
    (:func:`medcite.generate.postprocess.answer_sentences`)."""
    from ..evidence.sentences import split_spans
    from ..generate.postprocess import answer_sentences

    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value if v)
    text = "" if value is None else re.sub(r"\s+", " ", str(value)).strip()
    sentences = [text[start:end].strip() for start, end in split_spans(text)]
    kept, _ = answer_sentences(sentences)
    if not kept:
        raise AnswerFormatError('the "ideal_answer" is empty: write one paragraph that answers the question')
    return cap_words(text if kept == sentences else " ".join(kept), max_words)
