"""What a chat model takes and gives: a message list in, a :class:`Completion` out (shared by the LLM
backends, the cache and the trace)."""

from __future__ import annotations

from dataclasses import dataclass, field

Message = dict[str, str]


@dataclass(frozen=True, slots=True)
class Completion:
    """One model answer. ``latency_s`` is the wall time of the call (of the cache lookup on a hit). ``key`` is the
    request's cache key (:func:`medcite.llm.cache.cache_key`, set by the base class whether or not the cache is on):
    what :func:`medcite.llm.base.reject` names when medcite cannot use the reply."""

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    cache_hit: bool = False
    finish_reason: str | None = None
    reasoning: str = ""  # a reasoning model's <think> block, taken out of text (medcite.llm.reply)
    key: str = ""
    #: the server's reply passed the most a reply may be (the openai backend's MAX_REPLY_CHARS) and was cut there:
    #: it is used as cut, but kept in the cache marked rejected, never replayed as a good reply
    over_cap: bool = False
