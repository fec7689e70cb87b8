"""Prompt framings of Dalhousie 2025's paired runs (Dal@TREC25 §III-A3): the same instructions, "reinforced
differently depending on the prompting strategy" -- an expert role (role prompting, Wang et al. 2023) or an
emotional stimulus appended (EmotionPrompt, Li et al. 2023; the paper quotes "This is very important to my
career"). Applied to rendered chats, so one prompt file serves both framings.
"""

from __future__ import annotations

from typing import Literal

from .completion import Message

Framing = Literal["expert", "emotionprompt"]
#: the stimulus Dal@TREC25 quotes as its emotional framing (EmotionPrompt's EP02)
EMOTION_STIMULUS = "This is very important to my career."
EXPERT_ROLE = "You are a biomedical expert: use precise terminology and controlled biomedical vocabulary."


def frame(messages: list[Message], framing: str | None) -> list[Message]:
    """``messages`` with the framing applied: ``expert`` puts the role first in the system message (adding
    one when there is none), ``emotionprompt`` appends the stimulus to the last user message, None leaves
    them as they are."""
    if framing is None:
        return messages
    out = [dict(m) for m in messages]
    if framing == "expert":
        system = next((m for m in out if m["role"] == "system"), None)
        if system is None:
            return [{"role": "system", "content": EXPERT_ROLE}, *out]
        system["content"] = f"{EXPERT_ROLE} {system['content']}".strip()
        return out
    if framing == "emotionprompt":
        user = next((m for m in reversed(out) if m["role"] == "user"), None)
        if user is None:
            return [*out, {"role": "user", "content": EMOTION_STIMULUS}]
        user["content"] = f"{user['content'].rstrip()}\n\n{EMOTION_STIMULUS}"
        return out
    raise ValueError(f"unknown framing {framing!r}: use 'expert' or 'emotionprompt'")
