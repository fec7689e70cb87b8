"""Prompt files (``llm/prompts/*.txt``): listed, loaded and rendered. The fixed-rule parsers of their answers are
:mod:`medcite.llm.reply_parsers`.

A prompt file is a few comment lines (``#``) followed by messages, each opened by a line ``[system]``,
``[user]`` or ``[assistant]``. ``{name}`` placeholders are filled by :func:`render`; other braces (JSON
examples) are left alone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import ConfigError
from .completion import Message

# the prompts medcite.llm.reply_parsers reads the answers of; other stages may ship more files beside them
PROMPT_NAMES = ("reformulate", "decompose", "summarize", "generate", "condense", "listwise_rerank", "stance",
                "sufficiency", "answer_first", "stance_queries", "stance_rewrite_support",
                "stance_rewrite_contradict", "rocchio_clean", "generate_topic",
                "keyword_rewrite", "hop_classify", "hop_first", "hop_next", "hop_short_answer")

_ROLE_LINE = re.compile(r"^\[(system|user|assistant)\]\s*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


# -- prompt files --------------------------------------------------------------------------------------
def prompt_names(directory: str | Path | None = None) -> list[str]:
    """Names of the prompt files in ``directory`` (default: the packaged ones)."""
    folder = Path(directory) if directory is not None else resources.files("medcite.llm") / "prompts"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


@lru_cache(maxsize=64)
def _read(name: str, directory: str | None) -> str:
    if directory is not None:
        path = Path(directory) / f"{name}.txt"
        if not path.is_file():
            raise ConfigError(f"no prompt file {path}",
                              hint=f"the packaged prompt files are: {', '.join(prompt_names())}")
        return path.read_text(encoding="utf-8")
    res = resources.files("medcite.llm") / "prompts" / f"{name}.txt"
    if not res.is_file():
        raise ConfigError(f"unknown prompt {name!r}", hint=f"choose one of: {', '.join(prompt_names())}")
    return res.read_text(encoding="utf-8")


def load_prompt(name: str, directory: str | Path | None = None) -> list[Message]:
    """The messages of prompt ``name``, placeholders unfilled (``directory`` overrides the packaged files)."""
    text = _read(name, None if directory is None else str(directory))
    messages: list[Message] = []
    for line in text.splitlines():
        match = _ROLE_LINE.match(line)
        if match:
            messages.append({"role": match.group(1), "content": ""})
        elif messages:
            messages[-1]["content"] += line + "\n"
        elif line.strip() and not line.startswith("#"):
            raise ConfigError(f"prompt {name!r} has text before its first [system]/[user] line: {line!r}",
                              hint="start each message with a line [system], [user] or [assistant]")
    if not messages:
        raise ConfigError(f"prompt {name!r} has no messages",
                          hint="add a line [user] followed by the prompt text")
    return [{"role": m["role"], "content": m["content"].strip()} for m in messages]


def placeholders(name: str, directory: str | Path | None = None) -> set[str]:
    """The ``{name}`` placeholders that :func:`render` needs for prompt ``name``."""
    return {p for m in load_prompt(name, directory) for p in _PLACEHOLDER.findall(m["content"])}


def render(name: str, directory: str | Path | None = None, **values: object) -> list[Message]:
    """Fill the placeholders of prompt ``name``; a missing value raises naming it."""
    missing = placeholders(name, directory) - set(values)
    if missing:
        raise ConfigError(f"prompt {name!r} needs values for {sorted(missing)}",
                          hint=f"pass {', '.join(sorted(missing))} to render()")

    def fill(match: re.Match[str]) -> str:
        return str(values[match.group(1)])

    return [{"role": m["role"], "content": _PLACEHOLDER.sub(fill, m["content"])}
            for m in load_prompt(name, directory)]
