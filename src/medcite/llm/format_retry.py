"""One format reminder for a reply that cannot be read in the form its prompt asks for.

The query-writing prompts (``reformulate``, ``decompose``, ``keyword_rewrite``, ``stance_queries``, ...) ask for
a fixed form: a numbered list, a JSON list, one line. A weak or distracted model sometimes answers with a plain
line instead ("I cannot help with that."). :func:`complete_in_form` asks once and, when the reply fails the
caller's check, rejects it (:func:`medcite.llm.base.reject`: the cache never replays it) and asks again, once, in
the same conversation, with the prompt file ``format_reminder`` (what was wrong, and the form wanted). The caller
reads the reply it gets back and leaves its output out when that one fails too: a run never stops for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import LLM, reject
from .completion import Completion, Message
from .prompts import render
from .trace import trace_context


@dataclass(frozen=True, slots=True)
class FormReply:
    """The reply to use (``completion``), whether the format reminder was sent for it (``reminded``) and whether
    it reads in the form asked (``ok``: False when the reminded reply failed too)."""

    completion: Completion
    reminded: bool
    ok: bool

    @property
    def text(self) -> str:
        return self.completion.text

    def note(self, what: str, problem: str) -> str | None:
        """A note for the run directory when the reminder was sent (None when the first reply read)."""
        if not self.reminded:
            return None
        outcome = "the second reply was read" if self.ok else "the second failed too, so it is left out"
        return f"{what}: the reply failed its format ({problem}); asked again once with a format reminder: {outcome}"


def reminder(messages: Sequence[Message], reply: str, *, problem: str, form: str,
             prompt_dir: str | Path | None = None) -> list[Message]:
    """``messages``, the model's ``reply`` and the ``format_reminder`` prompt: the conversation of the one retry."""
    return [*messages, {"role": "assistant", "content": reply},
            *render("format_reminder", prompt_dir, problem=problem, form=form)]


def complete_in_form(llm: LLM, messages: list[Message], ok: Callable[[str], bool], *, problem: str, form: str,
                     max_tokens: int | None = None, prompt_dir: str | Path | None = None,
                     remind: bool = True) -> FormReply:
    """Ask ``messages``; when ``ok`` rejects the reply, ask again once with the format reminder (``problem``: what
    was wrong, e.g. "it is not a JSON list"; ``form``: how to answer, e.g. "as a JSON list of strings only").
    ``remind=False`` (a paper's run: the reminder is medcite's safety net, not the paper's) asks once only; the
    caller reads the reply and rejects it when it cannot."""
    first = llm.complete(messages, max_tokens=max_tokens)
    if ok(first.text) or not remind:
        return FormReply(first, False, ok(first.text))
    reject(llm, first, f"{problem}: asked again with a format reminder")
    with trace_context(format_reminder=True):
        second = llm.complete(reminder(messages, first.text, problem=problem, form=form, prompt_dir=prompt_dir),
                              max_tokens=max_tokens)
    return FormReply(second, True, ok(second.text))


def complete_many_in_form(llm: LLM, chats: Sequence[list[Message]], ok: Callable[[str], bool], *, problem: str,
                          form: str, max_tokens: int | None = None,
                          prompt_dir: str | Path | None = None, remind: bool = True) -> list[FormReply]:
    """:func:`complete_in_form` for a batch: the chats whose reply fails ``ok`` are asked again together."""
    firsts = llm.complete_many(list(chats), max_tokens=max_tokens)
    out = [FormReply(c, False, ok(c.text)) for c in firsts]
    again = [i for i, c in enumerate(firsts) if not ok(c.text)]
    if not again or not remind:
        return out
    for i in again:
        reject(llm, firsts[i], f"{problem}: asked again with a format reminder")
    retries = [reminder(chats[i], firsts[i].text, problem=problem, form=form, prompt_dir=prompt_dir) for i in again]
    with trace_context(format_reminder=True):
        seconds = llm.complete_many(retries, max_tokens=max_tokens)
    for i, c in zip(again, seconds, strict=True):
        out[i] = FormReply(c, True, ok(c.text))
    return out
