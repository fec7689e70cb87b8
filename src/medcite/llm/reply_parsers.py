"""The fixed-rule parsers of the prompts' answers (the prompts: :mod:`medcite.llm.prompts`). Each parser turns a raw
model answer into exactly what the caller needs and never returns more than the paper's limits allow:

- :func:`parse_reformulations` — CLaC 2025: keep lines starting ``1.``–``3.``, strip, dedupe, at most 3;
- :func:`parse_decomposition` — CLaC 2024: a JSON-like list of at most 5 keyword queries;
- :func:`parse_summary` — CLaC 2025: 1–2 sentences, at most 80 words, numbers untouched;
- :func:`parse_condensation` — CLaC 2024: whole sentences up to 250 words;
- :func:`parse_permutation` — RankGPT (Sun et al., 2023): ``[3] > [1] > [2]`` to a full permutation;
- :func:`parse_stance` — Dalhousie 2025: SUPPORTS / CONTRADICTS / NEUTRAL and the quoted deciding sentence;
- :func:`parse_sufficiency` — Dalhousie 2025: SUFFICIENT, or a new query;
- :func:`parse_stance_queries` — Dalhousie 2025 (Task A): a supporting and a contradicting query;
- :func:`parse_hop_kind`, :func:`parse_first_hop`, :func:`parse_next_hops`, :func:`parse_short_answer` — CLaC 2024
  MedHopQA: simple or multi-hop, the key phrase and its sub-question, further sub-questions or DONE, a short answer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

# -- shared cleaning -----------------------------------------------------------------------------------
_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"


def _strip_fences(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not _FENCE.match(line))


def _clean_item(item: str) -> str:
    """Strip markdown emphasis, quotes, trailing commas and surrounding space from one list item."""
    item = item.strip()
    previous = None
    while item != previous:
        previous = item
        item = item.strip().strip("*_").strip().rstrip(",;").strip()
        if len(item) >= 2 and item[0] in _QUOTES and item[-1] in _QUOTES:
            item = item[1:-1]
    return re.sub(r"\s+", " ", item).strip()


def _dedupe(items: list[str], limit: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
        if len(out) == limit:
            break
    return out


# -- reformulations (CLaC 2025) ------------------------------------------------------------------------
# "1." .. "3." at the start of a line (after markdown markers); "1.5 mg" is not a list number.
_NUMBERED = re.compile(r"^\s*(?:[#>*_]+\s*)?([1-3])\.(?!\d)(?:\*\*|__)?\s*(.*)$")
# only the labels the prompt's three kinds suggest, so "Clinical trials of X: ..." keeps its words
_LABEL = re.compile(
    r"^(?:\*\*|__)?(?:formal(?: clinical)?|clinical|patient[- ]focused|patient|plain(?: language)?|lay"
    r"|(?:one |specific |single )?aspect(?:[- ]focused)?)(?: version| query| reformulation| question)?"
    r"(?: \([^)]{0,40}\))?(?:\*\*|__)?\s*:(?:\*\*|__)?\s*",
    re.IGNORECASE,
)


def parse_reformulations(text: str, n: int = 3) -> list[str]:
    """Keep lines starting ``1.``–``3.``, strip them, dedupe, at most ``n`` (CLaC 2025's fixed rules).

    A leading label such as ``Formal clinical:`` is removed; when a numbered line holds only a label, the next
    unnumbered line is taken as its query.
    """
    lines = _strip_fences(text).splitlines()
    items: list[str] = []
    for i, line in enumerate(lines):
        match = _NUMBERED.match(line)
        if not match:
            continue
        item = _clean_item(_LABEL.sub("", match.group(2).strip()))
        if not item:
            for follow in lines[i + 1:]:
                if not follow.strip():
                    continue
                if not _NUMBERED.match(follow):
                    item = _clean_item(follow)
                break
        items.append(item)
    return _dedupe(items, n)


# -- decomposition (CLaC 2024) -------------------------------------------------------------------------
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+")
_QUOTED = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|'([^']+)'")


def _list_items(candidate: str) -> list[Any] | None:
    for loader in (json.loads, ast.literal_eval):
        try:
            value = loader(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, dict):  # {"queries": [...]}
            for inner in value.values():
                if isinstance(inner, list):
                    return inner
    return None


def _flatten(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        for key in ("query", "text", "q"):
            if isinstance(value.get(key), str):
                return [value[key]]
        return []
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _flatten(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def parse_keyword_rewrite(text: str) -> str:
    """The first non-empty line of the answer, its ``Query:`` label, list marker and quotes removed ('' when
    there is none); a reasoning model's ``<think>...</think>`` block is skipped."""
    body = re.sub(r"<think>.*?</think>", "", _strip_fences(text), flags=re.DOTALL | re.IGNORECASE)
    for line in body.splitlines():
        item = _clean_item(re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line))
        item = _clean_item(re.sub(r"^(?:keyword\s+)?query\s*:\s*", "", item, flags=re.IGNORECASE))
        if item:
            return " ".join(item.split())
    return ""


def parse_rewrite(text: str, max_words: int = 64) -> str:
    """A one-statement rewrite (``stance_rewrite_*``): the first non-empty line, a ``Rewrite:`` /
    ``Support rewrite:`` / ``Statement:`` label, list marker and quotes removed, at most ``max_words`` words
    ('' when there is none); a reasoning model's ``<think>...</think>`` block is skipped."""
    body = re.sub(r"<think>.*?</think>", "", _strip_fences(text), flags=re.DOTALL | re.IGNORECASE)
    label = r"^(?:(?:support(?:ive)?|contradict(?:ory)?)\s+)?(?:rewrite|rewritten statement|statement|query)\s*:\s*"
    for line in body.splitlines():
        item = _clean_item(re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line))
        item = _clean_item(re.sub(label, "", item, flags=re.IGNORECASE))
        if item:
            return " ".join(item.split()[:max_words])
    return ""


def parse_decomposition(text: str, max_queries: int = 5) -> list[str]:
    """A JSON-like list of keyword queries, read tolerantly (CLaC 2024): at most ``max_queries``, deduped.

    Tries, in order: the bracketed list as JSON or a Python literal; the quoted strings inside the brackets;
    bulleted or numbered lines; a single comma-separated line.
    """
    body = _strip_fences(text).strip()
    items: list[str] = []
    start, end = body.find("["), body.rfind("]")
    if start >= 0:
        # an answer cut off by max_tokens has no closing bracket: read what is there
        span = body[start:end + 1] if end > start else body[start:] + "]"
        parsed = _list_items(span)
        if parsed is None:
            parsed = _list_items(span.translate(str.maketrans("\u201c\u201d\u2018\u2019", "\"\"''")))
        if parsed is not None:
            items = _flatten(parsed)
        else:
            items = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(span)]
            if not items:
                items = span[1:-1].split(",")
    if not items:
        lines = [ln for ln in body.splitlines() if ln.strip()]
        bulleted = [ln for ln in lines if _BULLET.match(ln)]
        if bulleted:
            items = [_BULLET.sub("", ln) for ln in bulleted]
        else:
            kept = [ln for ln in lines if not ln.rstrip().endswith(":")]
            items = kept[0].split(",") if len(kept) == 1 else kept
    return _dedupe([_clean_item(i) for i in items], max_queries)


def decomposition_is_list(text: str) -> bool:
    """Whether a decomposition answer is a list in any form :func:`parse_decomposition` reads (brackets, bullets or
    numbers, one query a line, commas); a single plain line is read as one query only as a last resort."""
    body = _strip_fences(text).strip()
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.rstrip().endswith(":")]
    return "[" in body or any(_BULLET.match(ln) for ln in lines) or len(lines) > 1 or any("," in ln for ln in lines)


# -- summaries and condensation (CLaC 2024/2025) --------------------------------------------------------
_PREAMBLE = re.compile(
    r"^\s*(?:\*\*)?(?:here(?:'s| is| are)\b[^:\n]{0,80}|summary|condensed answer|shortened answer|answer|output)"
    r"(?:\*\*)?\s*:\s*",
    re.IGNORECASE,
)


_CHATTER = re.compile(r"^(?:sure|certainly|okay|of course|here (?:is|are|'s))\b", re.IGNORECASE)


def _sentences(text: str) -> list[str]:
    """Sentences as exact substrings of ``text`` (syntok's rules keep ``1.2%``, ``et al.``, ``Fig. 2``)."""
    import syntok.segmenter as segmenter

    out: list[str] = []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            tokens = list(sentence)
            if tokens:
                out.append(text[tokens[0].offset: tokens[-1].offset + len(tokens[-1].value)].strip())
    return [s for s in out if s]


def _prose(text: str) -> str:
    """One paragraph: fences, a leading preamble line/label and list bullets removed."""
    lines = [ln for ln in _strip_fences(text).splitlines() if ln.strip()]
    lines = [_BULLET.sub("", ln).strip() for ln in lines]
    if lines and lines[0].rstrip().endswith(":") and _PREAMBLE.match(lines[0]):
        lines = lines[1:]
    joined = " ".join(lines)
    return _PREAMBLE.sub("", joined, count=1).strip()


def _cap_words(text: str, max_words: int) -> str:
    words = text.split()
    if len(words) <= max_words:
        return text
    cut = " ".join(words[:max_words]).rstrip(",;:-")
    return cut if cut.endswith((".", "!", "?")) else cut + "."


def parse_summary(text: str, max_words: int = 80, max_sentences: int = 2) -> str:
    """The first ``max_sentences`` sentences cut to ``max_words`` words; the words themselves are kept. A sentence
    that speaks about the instructions or the evidence, or as the model ("I cannot help with that.": a refusal,
    :func:`~medcite.llm.reply.meta_sentence`), is no summary: a reply made only of such sentences gives ""."""
    from .reply import meta_sentence

    body = _prose(text)
    if not body:
        return ""
    sentences = [s for s in _sentences(body) if meta_sentence(s) is None]
    if not sentences:
        return ""
    while len(sentences) > 1 and _CHATTER.match(sentences[0]):
        sentences = sentences[1:]
    kept = " ".join(sentences[:max_sentences])
    return _cap_words(kept, max_words)


def parse_condensation(text: str, max_words: int = 250) -> str:
    """Whole sentences while they fit in ``max_words`` (a first sentence longer than that is cut)."""
    body = _prose(text)
    kept: list[str] = []
    count = 0
    for sentence in _sentences(body) if body else []:
        words = len(sentence.split())
        if count + words > max_words:
            if not kept:
                kept.append(_cap_words(sentence, max_words))
            break
        kept.append(sentence)
        count += words
    return " ".join(kept)


# -- permutations (RankGPT) ----------------------------------------------------------------------------
_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_BARE = re.compile(r"(?<![\w.])(\d+)(?!\w|\.\d)")


def parse_permutation(text: str, n: int) -> list[int]:
    """RankGPT output such as ``[3] > [1] > [2]`` to a 0-based permutation of ``range(n)``.

    Identifiers are 1-based as shown to the model. Bracketed ids are read when there are any, else bare
    numbers; ids outside 1..n and repeats are ignored, and ids the model left out are appended in their
    original order, so the result is always a full permutation and never names a passage not shown.
    """
    order = permutation_ids(text, n)
    seen = set(order)
    order.extend(i for i in range(n) if i not in seen)
    return order


def permutation_ids(text: str, n: int) -> list[int]:
    """The 0-based ids the model itself named, in its order (:func:`parse_permutation` before the missing ids are
    appended); empty when it named none, so the order it gives back is the input order."""
    found = _BRACKETED.findall(text) or _BARE.findall(text)
    order: list[int] = []
    seen: set[int] = set()
    for raw in found:
        if len(raw) > 6:  # no window is that long; also keeps int() away from huge digit strings
            continue
        idx = int(raw) - 1
        if 0 <= idx < n and idx not in seen:
            seen.add(idx)
            order.append(idx)
    return order


_STANCE_WORDS = (
    ("contradicts", re.compile(r"\b(contradict(s|ed|ion|ory)?|refut(e|es|ed)|disagree(s)?)\b", re.IGNORECASE)),
    ("supports", re.compile(r"\b(support(s|ed|ive)?|confirm(s|ed)?|entail(s|ment)?|agree(s)?)\b", re.IGNORECASE)),
    ("neutral", re.compile(r"\b(neutral|not relevant|irrelevant|unrelated|insufficient|cannot|none|unclear)\b",
                           re.IGNORECASE)),
)


def parse_stance(text: str) -> tuple[str, str]:
    """``(label, quote)`` from a stance answer: the label named first on the earliest line that names one
    (``supports``, ``contradicts`` or ``neutral``; ``neutral`` when none does), and the quoted sentence of
    the line after it (empty for NONE). Negated forms ("does not support") count as neutral."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        found = [(m.start(), label) for label, rx in _STANCE_WORDS for m in [rx.search(line)] if m]
        if not found:
            continue
        start, label = min(found)
        if label != "neutral" and re.search(r"\b(not|n't|no)\s+(\w+\s+)?$", line[:start], re.IGNORECASE):
            label = "neutral"
        quote = lines[i + 1] if i + 1 < len(lines) else ""
        quote = quote.strip().strip('"\u201c\u201d').strip()
        return label, "" if quote.upper().rstrip(".") == "NONE" else quote
    return "neutral", ""


def names_stance_label(text: str, four: bool = False) -> bool:
    """Whether a stance answer names a label at all (:func:`parse_stance`, or :func:`parse_citation_label` when
    ``four``, read an answer naming none as ``neutral``: a default, not the model's verdict)."""
    words = _CITATION_WORDS if four else _STANCE_WORDS
    return any(rx.search(text) for _, rx in words)


_CITATION_WORDS = (
    ("not relevant", re.compile(r"\b(not[\s_-]+relevant|irrelevant|unrelated)\b", re.IGNORECASE)),
    ("contradicts", re.compile(r"\bcontradict(s|ed|ion|ory)?\b", re.IGNORECASE)),
    ("supports", re.compile(r"\bsupport(s|ed|ive)?\b", re.IGNORECASE)),
    ("neutral", re.compile(r"\bneutral\b", re.IGNORECASE)),
)


def parse_citation_label(text: str) -> tuple[str, str]:
    """``(label, quote)`` from an answer to ``bioace_citation``: BioACE's four labels (``supports``,
    ``contradicts``, ``neutral``, ``not relevant``), the one named first on the earliest line that names one,
    and the quoted sentence of the next line. A negated support or contradiction ("does not support") is
    ``neutral``; an answer naming no label is ``neutral`` with an empty quote (the caller can tell it apart
    by nothing being quoted)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        found = [(m.start(), label) for label, rx in _CITATION_WORDS for m in [rx.search(line)] if m]
        if not found:
            continue
        start, label = min(found)
        if label in ("supports", "contradicts") and re.search(r"\b(not|n't|no)\s+(\w+\s+)?$", line[:start],
                                                            re.IGNORECASE):
            label = "neutral"
        quote = lines[i + 1] if i + 1 < len(lines) else ""
        quote = quote.strip().strip('"\u201c\u201d').strip()
        return label, "" if quote.upper().rstrip(".") == "NONE" else quote
    return "neutral", ""


_SENTENCE_LABEL = re.compile(r"^\W*(?:sentence\s*)?(\d+)\s*[:.)\-]\s*\**\s*([A-Za-z]+)", re.IGNORECASE)


def parse_sentence_labels(text: str, n: int, labels: Sequence[str]) -> list[str | None]:
    """One label per numbered sentence (1..``n``) from lines ``NUMBER: LABEL`` (``bioace_completeness``);
    a sentence with no such line, or with a word that is not one of ``labels``, is ``None`` (unjudged).
    The first line for a number wins."""
    known = {lab.lower() for lab in labels}
    out: list[str | None] = [None] * n
    for line in text.strip().splitlines():
        m = _SENTENCE_LABEL.match(line.strip())
        if not m:
            continue
        i, word = int(m.group(1)) - 1, m.group(2).lower()
        if 0 <= i < n and out[i] is None and word in known:
            out[i] = word
    return out


_QUERY = re.compile(r"\bquery\s*[:\-]\s*(.+)$", re.IGNORECASE)


def parse_sufficiency(text: str, max_words: int = 32) -> tuple[bool, str]:
    """``(sufficient, query)``: a line ``QUERY: ...`` gives a new query (at most ``max_words`` words);
    otherwise the answer counts as sufficient when it says so (``SUFFICIENT``, ``yes``), and as
    insufficient with no query when it says neither (the loop then stops: nothing new to search)."""
    for line in text.strip().splitlines():
        m = _QUERY.search(line.strip())
        if m:
            query = " ".join(m.group(1).strip().strip("\"'<>").split()[:max_words])
            return False, query
    low = text.strip().lower()
    if re.search(r"\binsufficient\b|\bnot sufficient\b|\bno\b", low):
        return False, ""
    return bool(re.search(r"\bsufficient\b|\byes\b", low)), ""


def names_sufficiency(text: str) -> bool:
    """Whether a sufficiency answer says anything :func:`parse_sufficiency` reads (a query, or sufficient or not);
    an answer saying none of them is read as 'insufficient, nothing to search', a default."""
    return bool(any(_QUERY.search(line.strip()) for line in text.splitlines())
                or re.search(r"\b(?:in)?sufficient\b|\byes\b|\bno\b", text, re.IGNORECASE))


_SIDE = re.compile(r"^\W*(support(?:ing)?|contradict(?:ing)?)\w*\s*(?:query)?\s*[:\-]\s*(.+)$", re.IGNORECASE)


def parse_stance_queries(text: str, max_words: int = 32) -> dict[str, str]:
    """``{"support": query, "contradict": query}`` from lines ``SUPPORT: ...`` / ``CONTRADICT: ...`` (the first
    of each; a side the answer lacks is absent)."""
    out: dict[str, str] = {}
    for line in text.strip().splitlines():
        m = _SIDE.match(line.strip())
        if m:
            side = "support" if m.group(1).lower().startswith("support") else "contradict"
            query = " ".join(m.group(2).strip().strip("\"'<>").split()[:max_words])
            if query and side not in out:
                out[side] = query
    return out


# -- multi-hop questions (CLaC 2024 MedHopQA) ---------------------------------------------------------
def _without_reasoning(text: str) -> str:
    return re.sub(r"<think>.*?</think>", "", _strip_fences(text), flags=re.DOTALL | re.IGNORECASE)


def parse_hop_kind(text: str) -> bool:
    """True when the answer calls the question multi-hop. The label named first counts; an answer naming
    neither is read as multi-hop (decomposing a simple question costs calls, skipping a needed hop loses the
    answer)."""
    body = _without_reasoning(text)
    multi = re.search(r"\bmulti[\s_-]*hop\b|\bmultiple hops\b|\bcomplex\b", body, re.IGNORECASE)
    simple = re.search(r"\bsimple\b|\bsingle[\s_-]*hop\b|\bone[\s_-]hop\b", body, re.IGNORECASE)
    if simple and (not multi or simple.start() < multi.start()):
        return False
    return True


def names_hop_kind(text: str) -> bool:
    """Whether a hop classification names a label (:func:`parse_hop_kind` reads an answer naming neither as
    multi-hop, a default)."""
    body = _without_reasoning(text)
    return bool(re.search(r"\bmulti[\s_-]*hop\b|\bmultiple hops\b|\bcomplex\b|\bsimple\b|\bsingle[\s_-]*hop\b"
                          r"|\bone[\s_-]hop\b", body, re.IGNORECASE))


def says_done(text: str) -> bool:
    """Whether a next-hop answer says DONE before naming a sub-question (:func:`parse_next_hops` then gives none,
    by the model's choice)."""
    for line in _without_reasoning(text).splitlines():
        stripped = line.strip()
        if re.match(r"^\W*done\b", stripped, re.IGNORECASE):
            return True
        if _SUBQ.match(stripped) or (_BULLET.match(stripped) and stripped.endswith("?")):
            return False
    return False


_SUBQ = re.compile(r"^\W*(?:sub[\s_-]*question|focused question|question)\s*\d*\s*[:\-]\s*(.+)$", re.IGNORECASE)
_KEY = re.compile(r"^\W*key[\s_-]*phrase\s*[:\-]\s*(.+)$", re.IGNORECASE)


def _subquestion(line: str, max_words: int) -> str:
    return " ".join(_clean_item(_BULLET.sub("", line.strip())).split()[:max_words])


_QUOTED_KEY = re.compile(r"key[\s_-]*phrase\b[^\"\u201c\n]{0,40}[\"\u201c]([^\"\u201d\n]+)[\"\u201d]", re.IGNORECASE)


def parse_first_hop(text: str, max_words: int = 40) -> tuple[str, str]:
    """``(key phrase, sub-question)`` from lines ``KEY PHRASE: ...`` / ``SUB-QUESTION: ...``. Without a labelled
    key phrase, a quoted one after the words "key phrase" (``The key phrase is "X"``); without a labelled
    sub-question, the first line ending in ``?``, else the key phrase itself (it is what the first hop looks up);
    empty when the answer names neither."""
    body = _without_reasoning(text)
    key = question = ""
    for line in body.splitlines():
        m = _KEY.match(line.strip())
        if m and not key:
            key = _subquestion(m.group(1), max_words)
            continue
        m = _SUBQ.match(line.strip())
        if m and not question:
            question = _subquestion(m.group(1), max_words)
    if not key:
        m = _QUOTED_KEY.search(body)
        key = _subquestion(m.group(1), max_words) if m else ""
    if not question:
        asked = [ln for ln in body.splitlines() if ln.strip().endswith("?") and not _KEY.match(ln.strip())]
        question = _subquestion(_BULLET.sub("", asked[0]), max_words) if asked else key
    return key, question


def parse_next_hops(text: str, n: int = 3, max_words: int = 40) -> list[str]:
    """At most ``n`` deduplicated sub-questions from lines ``SUB-QUESTION: ...`` (or bulleted lines ending in
    ``?``); none when the answer says DONE before naming any."""
    body = _without_reasoning(text)
    found: list[str] = []
    for line in body.splitlines():
        stripped = line.strip()
        if not found and re.match(r"^\W*done\b", stripped, re.IGNORECASE):
            return []
        m = _SUBQ.match(stripped)
        if m:
            found.append(_subquestion(m.group(1), max_words))
        elif _BULLET.match(stripped) and stripped.endswith("?"):
            found.append(_subquestion(_BULLET.sub("", stripped), max_words))
    return _dedupe(found, n)


def parse_short_answer(text: str, max_words: int = 30) -> str:
    """The first non-empty line, its ``Short answer:`` label and bold markers removed, at most ``max_words``
    words."""
    for line in _without_reasoning(text).splitlines():
        line = re.sub(r"\*\*|__", "", line).strip()
        item = _clean_item(re.sub(r"^\W*(?:short\s+)?answer\s*:\s*", "", line, flags=re.IGNORECASE))
        if item:
            return " ".join(item.split()[:max_words])
    return ""


# -- listwise citation choice (CLaC 2024, Task A) ------------------------------------------------------
_NUMBER = re.compile(r"(?<![\d.])\d+(?![\d.])")


def parse_pmid_list(text: str, allowed: Sequence[str], limit: int = 3) -> list[str]:
    """The PMIDs a listwise citation prompt chose (CLaC 2024 Appendix A: ``Supporting Citations: [1, 2]`` or
    ``["1", "2"]``; ``[]`` for none): numbers among ``allowed`` (the PMIDs shown), in the model's order, deduped,
    at most ``limit``. A number that was not shown is never returned, so a model cannot cite what it did not read
    (nor the prompt's example PMIDs echoed back)."""
    body = _without_reasoning(_strip_fences(text))
    shown = set(allowed)
    found = [n for n in _NUMBER.findall(body) if n in shown]
    return list(dict.fromkeys(found))[:limit]
