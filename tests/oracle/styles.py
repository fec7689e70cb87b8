"""The shapes real models write their answers in. One right answer (:class:`~.answers.Meaning`), several
ways to put it:

- ``plain``: what the prompt asks for and nothing else; citations before the full stop (``... [1].``);
- ``markdown``: a bold heading, bullet points, bold terms; labels in bold; a permutation without brackets
  (``3 > 1 > 2``); citations after the full stop (``... . [1]``);
- ``fenced``: a line of prose before and after; JSON inside a ```json fence;
- ``think``: a ``<think>...</think>`` block first (DeepSeek-R1), which names labels, evidence numbers and
  PMIDs that are not the answer;
- ``chatter``: the answer, then a line of pleasantries.
"""

from __future__ import annotations

import json

from .answers import Meaning

STYLES = ("plain", "markdown", "fenced", "think", "chatter")


def cite_text(indices: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in indices) + "]" if indices else ""


def prose(meaning: Meaning, style: str) -> str:
    parts = []
    for text, indices in meaning.sentences:
        body = text.rstrip()
        end = body[-1] if body and body[-1] in ".!?" else "."
        body = body[:-1] if body and body[-1] in ".!?" else body
        mark = cite_text(indices) if meaning.cited else ""
        if style == "markdown":
            parts.append(f"- {body}{end} {mark}".rstrip())
        else:
            parts.append(f"{body} {mark}{end}" if mark else f"{body}{end}")
    if style == "markdown":
        return "**Answer**\n\n" + "\n".join(parts)
    return " ".join(parts)


def write(meaning: Meaning, style: str) -> str:
    """``meaning`` written in ``style`` (one of :data:`STYLES`)."""
    if meaning.kind == "prose":
        body = prose(meaning, style)
    elif meaning.kind == "json":
        raw = json.dumps(meaning.value, ensure_ascii=False)
        if style == "markdown":
            body = "```json\n" + json.dumps(meaning.value, ensure_ascii=False, indent=2) + "\n```"
        elif style == "fenced":
            body = (f"Here is the answer in the requested format:\n\n```json\n{raw}\n```\n\n"
                    "The answer is based on the passage.")
        else:
            body = raw
    else:
        body = meaning.text
        if style == "markdown":
            if " > " in body and body.startswith("["):
                body = body.replace("[", "").replace("]", "")
            else:
                first, _, rest = body.partition("\n")
                body = f"**{first}**" + (f"\n{rest}" if rest else "")
    if style == "fenced" and meaning.kind == "prose":
        body = f"Here is the answer based on the evidence provided:\n\n{body}"
    if style == "think":
        body = ("<think>\nThe user asks a biomedical question. Evidence [1] and [2] look relevant; PMID 12345678 "
                "might NOT support it, so maybe the answer is NEUTRAL or CONTRADICTS. Let me check each item "
                "again and write the final answer.\n</think>\n\n" + body)
    if style == "chatter":
        body += "\n\nI hope this helps! Let me know if you have any other questions."
    return body
