"""Which prompt file medcite rendered, and the values it filled in, read back from the messages it sent.

Each packaged prompt file (``medcite/llm/prompts/*.txt``) becomes one pattern per message: its fixed text
escaped, each ``{placeholder}`` a named group. A request is recognised when its first messages match one
prompt's messages exactly (a retry conversation adds the model's answer and a ``retry`` prompt after them).
Nothing is guessed from keywords: a prompt medcite changes changes the pattern with it, and a message no prompt
file produced is reported as unrecognised. The framings of Dalhousie 2025's paired runs
(:mod:`medcite.llm.personas`: the expert role put before a system message, the EmotionPrompt stimulus appended
to the last user message) are taken off before matching and reported in :attr:`Recognised.framing`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from medcite.llm.personas import EMOTION_STIMULUS, EXPERT_ROLE
from medcite.llm.prompts import load_prompt, prompt_names

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: values with a fixed form, where two placeholders meet (``Question: {question}{hint}``): the hint is empty or
#: DS@GT's `` (Hint: short answer is X)`` (medcite.qa.llm_qa.LLMQA.hint)
FORMS = {"hint": r"(?: \(Hint: short answer is [^\n]*\))?"}


def _json_form() -> str:
    """``{json}`` of bioasq_answer: empty, or a new line and the bioasq_json request (qa.json_instruction)."""
    text = load_prompt("bioasq_json")[0]["content"]
    head, _, _ = text.partition("{shape}")
    return rf"(?:\n{re.escape(head)}.*)?"


FORMS["json"] = _json_form()


@dataclass(frozen=True)
class Template:
    name: str
    roles: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    fixed: int  # characters of fixed text: the most specific prompt wins a tie

    def match(self, messages: list[dict[str, Any]]) -> dict[str, str] | None:
        if len(messages) < len(self.roles):
            return None
        values: dict[str, str] = {}
        for role, pattern, message in zip(self.roles, self.patterns, messages, strict=False):
            if message.get("role") != role:
                return None
            found = pattern.fullmatch(str(message.get("content") or ""))
            if found is None:
                return None
            values.update({k.rsplit("__", 1)[0]: v for k, v in found.groupdict().items()})
        return values


def _pattern(text: str) -> tuple[re.Pattern[str], int]:
    parts: list[str] = []
    seen: dict[str, int] = {}
    last = fixed = 0
    for m in _PLACEHOLDER.finditer(text):
        literal = text[last:m.start()]
        parts.append(re.escape(literal))
        fixed += len(literal)
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        parts.append(f"(?P<{name}__{seen[name]}>{FORMS.get(name, '.*?')})")
        last = m.end()
    parts.append(re.escape(text[last:]))
    fixed += len(text) - last
    return re.compile("".join(parts), re.DOTALL), fixed


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    out = []
    for name in prompt_names():
        messages = load_prompt(name)
        compiled = [_pattern(m["content"]) for m in messages]
        out.append(Template(name, tuple(m["role"] for m in messages), tuple(p for p, _ in compiled),
                            sum(n for _, n in compiled)))
    return tuple(out)


@dataclass
class Recognised:
    """The prompt a conversation is about, its values, and what came after it (a retry's feedback)."""

    name: str
    values: dict[str, str]
    later: list[dict[str, Any]] = field(default_factory=list)
    retry: dict[str, str] | None = None  # the values of the last retry/repair prompt, if the conversation has one
    framing: str | None = None  # "expert" / "emotionprompt" when medcite framed the request (llm.personas.frame)


#: prompts said after the model's answer, about the prompt before it: its recognised values go to ``retry`` and the
#: oracle answers the prompt before them (a format reminder of a query prompt is answered with that prompt's answer)
_FEEDBACK = ("retry", "retry_plain", "bioasq_repair", "format_reminder")


def _fits(template: Template, messages: list[dict[str, Any]], start: int) -> tuple[int, dict[str, str]] | None:
    """(end, values) when ``template`` matches ``messages[start:]``; a few-shot turn after the first has no
    system message of its own, so the template's system message may be left out there."""
    values = template.match(messages[start:])
    if values is not None:
        return start + len(template.roles), values
    if start and template.roles[0] == "system" and len(template.roles) > 1:
        rest = Template(template.name, template.roles[1:], template.patterns[1:], template.fixed)
        values = rest.match(messages[start:])
        if values is not None:
            return start + len(rest.roles), values
    return None


def unframe(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """``messages`` without the framing :func:`medcite.llm.personas.frame` applied, and which one it was."""
    out = [dict(m) for m in messages]
    framing = None
    system = next((m for m in out if m.get("role") == "system"), None)
    if system is not None and str(system.get("content") or "").startswith(EXPERT_ROLE):
        rest = str(system["content"])[len(EXPERT_ROLE):].lstrip(" ")
        if rest:
            system["content"] = rest
        else:
            out.remove(system)
        framing = "expert"
    suffix = f"\n\n{EMOTION_STIMULUS}"
    # the stimulus ends the framed request; a retry conversation asks again after it (a format reminder, unframed)
    for user in (m for m in out if m.get("role") == "user"):
        if str(user.get("content") or "").endswith(suffix):
            user["content"] = str(user["content"])[: -len(suffix)]
            framing = "emotionprompt"
    return out, framing


def recognise(messages: list[dict[str, Any]]) -> Recognised | None:
    """The prompt file a conversation asks about: the last prompt (not a retry's feedback) its messages hold,
    so a few-shot example before the question is passed over and a retry keeps its original prompt."""
    plain, framing = unframe(messages)
    found = _recognise(plain)
    if found is not None:
        found.framing = framing
    return found


def _recognise(messages: list[dict[str, Any]]) -> Recognised | None:
    best: tuple[int, int, Template, dict[str, str]] | None = None
    retry: dict[str, str] | None = None
    for start in range(len(messages)):
        for template in templates():
            fit = _fits(template, messages, start)
            if fit is None:
                continue
            end, values = fit
            if template.name in _FEEDBACK:
                retry = values
            elif best is None or (end, template.fixed) > (best[0], best[1]):
                best = (end, template.fixed, template, values)
    if best is None:
        return None
    end, _, template, values = best
    return Recognised(template.name, values, messages[end:], retry)
