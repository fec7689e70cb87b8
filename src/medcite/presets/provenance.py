"""Where each setting of a preset comes from: the paper it reproduces (file, section, a verbatim quote) or
medcite's own choice where the paper is silent, beside the setting's resolved value and its offline swap.

A preset file documents itself in two keys that are not settings (``config.NOTE_KEYS``)::

    "paper": {"file": "000", "run": "A"},
    "sources": {
      "retrieve.k": {"paper": "000", "where": "§8.1", "quote": "retrieve the top 25 documents with BM25"},
      "generate.max_attempts": {"choice": "the paper does not say; one generation, as the paper describes none"}
    }

Keys of ``sources`` are dotted paths into the settings tree (``rerank.stages.0.k`` for a list item). A preset
that ``extends`` another inherits its sources; its own override them. ``quote`` must be a verbatim substring of
the paper's text (whitespace-normalised) -- ``tests/unit/test_preset_sources.py`` checks every one against the
texts in ``../shared/papers/`` -- so a preset cannot claim what its paper does not say; :mod:`.quote_meaning`
(tests/unit/test_quote_meaning.py) checks that each quote means its setting's value (its numbers and model names,
its run's own table row, no inherited quote over a changed value).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Settings, load_settings, preset_json, preset_task
from ..errors import ConfigError

#: the five papers medcite implements: id -> (file in ../shared/papers/, short citation)
PAPERS: dict[str, tuple[str, str]] = {
    "000": ("000_4af7aca8415ec14e.txt", "CLaC, TREC BioGen 2025 Task B (runs A-E)"),
    "001": ("001_3517105efc624400.txt", "Dalhousie, TREC BioGen 2025 Task A + B"),
    "002": ("002_dddcea058188b33b.txt", "PJs-team, BioASQ 13b (configs 1-5)"),
    "003": ("003_0b5e270edea3ee71.txt", "CLaC, TREC BioGen 2024 Task A + B and MedHopQA (Systems 1-6)"),
    "004": ("004_790b2a956f331601.txt", "DS@GT, BioASQ 13b (runs b1-b5, prompt styles 1-3)"),
}
SILENT = "the paper does not say"


UNUSED = "not used by this run"
#: keys whose values change how a run is executed, not what it computes; never a paper's claim
OPERATIONAL = frozenset({"batch_size", "device", "dtype", "threads", "heap_mb", "timeout_s", "deadline_s",
                         "max_retries", "backoff_s", "concurrency", "cache", "cache_dir", "stream", "api_key_env",
                         "base_url", "chunk_size", "label", "uri", "token_env"})
#: (key, value) pairs that claim nothing: a branch's fusion weight of 1 is the unweighted fusion
NEUTRAL = frozenset({("weight", 1.0)})


@dataclass(frozen=True)
class Source:
    """Where one setting comes from: a paper (``paper``, ``where``, ``quote``), medcite's ``choice``, or nowhere
    because the run does not read it (``unused``, the reason; :mod:`.reads`)."""

    path: str
    paper: str | None = None
    where: str = ""
    quote: str = ""
    choice: str = ""
    unused: str = ""
    derived: bool = False  # worked out (:mod:`.coverage`): a value deferring to another setting, or how a run runs

    @property
    def from_paper(self) -> bool:
        return self.paper is not None

    @property
    def kind(self) -> str:
        """``paper``, ``choice`` or ``unused``."""
        return "paper" if self.paper is not None else "unused" if self.unused else "choice"

    def text(self) -> str:
        if self.paper is not None:
            return f'{self.paper} {self.where}: "{self.quote}"'.replace("  ", " ")
        if self.unused:
            return f"{UNUSED} ({self.unused})"
        return self.choice if self.derived else f"medcite's choice: {self.choice}"


@dataclass(frozen=True)
class Row:
    """One line of a preset's provenance table."""

    source: Source
    value: Any
    offline: str | None  # the value on this machine's stack when it differs (offline_settings), else None


def _source(preset: str, path: str, entry: Any) -> Source:
    if not isinstance(entry, dict):
        raise ConfigError(f"preset {preset!r}: sources[{path!r}] must be an object with paper/where/quote or choice")
    unknown = set(entry) - {"paper", "where", "quote", "choice"}
    if unknown:
        raise ConfigError(f"preset {preset!r}: sources[{path!r}] has unknown keys {sorted(unknown)}")
    if "choice" in entry:
        if "paper" in entry or "quote" in entry:
            raise ConfigError(f"preset {preset!r}: sources[{path!r}] is a paper quote or medcite's choice, not both")
        return Source(path, choice=str(entry["choice"]))
    paper, quote = str(entry.get("paper", "")), str(entry.get("quote", ""))
    if paper not in PAPERS or not quote.strip():
        raise ConfigError(f"preset {preset!r}: sources[{path!r}] needs a paper (one of {', '.join(PAPERS)}) and a "
                          "quote, or a choice")
    return Source(path, paper, str(entry.get("where", "")), quote)


def sources(preset: str, _chain: tuple[str, ...] = ()) -> dict[str, Source]:
    """The preset's sources by setting path, those of the presets it extends first."""
    data = preset_json(preset)
    parent = data.get("extends")
    out = sources(parent, (*_chain, preset)) if isinstance(parent, str) and parent not in _chain else {}
    raw = data.get("sources") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"preset {preset!r}: 'sources' must be an object of setting path -> source")
    out.update({path: _source(preset, path, entry) for path, entry in raw.items()})
    return out


def paper(preset: str) -> dict[str, str] | None:
    """The published run a preset reproduces (``{"file": "000", "run": "A"}``), or None for medcite's own."""
    data = preset_json(preset)
    found = data.get("paper")
    if found is None and isinstance(data.get("extends"), str):
        return None  # a preset derived from a paper run is medcite's own unless it names a run itself
    return dict(found) if isinstance(found, dict) else None


def task(preset: str) -> str:
    """The task of the published run a preset reproduces (its preset's ``task``: ``biogen-a``, ``biogen-b``,
    ``medhopqa`` or ``bioasq``, :mod:`.reads`)."""
    from .reads import TASKS

    if paper(preset) is None:
        raise ConfigError(f"preset {preset!r} reproduces no published run (it has no 'paper' key)")
    kind = preset_task(preset)
    if kind not in TASKS:
        raise ConfigError(f"preset {preset!r}: a paper run of task {kind!r}",
                          hint=f"name the task the run was submitted to: one of {', '.join(TASKS)}")
    return kind


def value_at(tree: Any, path: str) -> Any:
    """The value at a dotted path of a settings dump (a number indexes a list); KeyError when absent."""
    node = tree
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(path)
    return node


def rows(preset: str, settings: Settings | None = None) -> list[Row]:
    """Each documented setting of ``preset``: its source, resolved value and offline value (when swapped)."""
    settings = settings or load_settings(preset)
    tree = settings.model_dump(mode="json")
    offline = offline_tree(settings)
    own = set(preset_json(preset).get("sources") or {})
    out = []
    for path, source in sources(preset).items():
        try:
            value = value_at(tree, path)
        except KeyError:
            if path not in own:  # a setting of the preset it extends that this one replaced by another shape
                continue
            raise ConfigError(f"preset {preset!r}: sources names {path!r}, which is not a setting",
                              hint="use a dotted path of `medcite config show --preset NAME`") from None
        try:
            there = value_at(offline, path)
        except KeyError:
            there = None
        out.append(Row(source, value, None if there == value else short(there)))
    return out


def short(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def normalise(text: str) -> str:
    """Text compared for a quote: whitespace runs as one space, hyphenation at a line end undone, typographic
    quotes and dashes as ASCII."""
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    table: dict[str, str | int | None] = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                                          "\u2013": "-", "\u2014": "-", "\u00a0": " "}
    text = text.translate(str.maketrans(table))
    return " ".join(text.split())


def quote_found(quote: str, paper_text: str) -> bool:
    """Whether ``quote`` is in ``paper_text`` (both :func:`normalise`-d)."""
    return normalise(quote) in normalise(paper_text)


def papers_dir() -> Path:
    """Where the paper texts are: ``$MEDCITE_PAPERS_DIR``, else ``../shared/papers`` beside the checkout."""
    import os

    env = os.environ.get("MEDCITE_PAPERS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4] / "shared" / "papers"


def offline_tree(settings: Settings) -> Any:
    """The settings dump on this machine's stack (:func:`.offline.offline_settings`), or as they are where that
    is not possible."""
    from .offline import offline_settings

    try:
        return offline_settings(settings, "local", grounding=True).model_dump(mode="json")
    except ConfigError:
        return settings.model_dump(mode="json")
