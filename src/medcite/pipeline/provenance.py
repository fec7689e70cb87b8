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

from ..config import Settings, load_settings, preset_json
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


@dataclass(frozen=True)
class Source:
    """Where one setting comes from: a paper (``paper``, ``where``, ``quote``) or medcite's ``choice``."""

    path: str
    paper: str | None = None
    where: str = ""
    quote: str = ""
    choice: str = ""

    @property
    def from_paper(self) -> bool:
        return self.paper is not None

    def text(self) -> str:
        if self.paper is not None:
            return f'{self.paper} {self.where}: "{self.quote}"'.replace("  ", " ")
        return f"medcite's choice: {self.choice}"


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
    from .offline import offline_settings

    settings = settings or load_settings(preset)
    tree = settings.model_dump(mode="json")
    try:
        offline = offline_settings(settings, "local", grounding=True).model_dump(mode="json")
    except ConfigError:
        offline = tree
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
        out.append(Row(source, value, None if there == value else _short(there)))
    return out


def _short(value: Any) -> str:
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


def markdown(names: list[str]) -> str:
    """docs/PRESETS.md: per preset, its run and a table of setting, value, source and offline swap."""
    lines = ["# Presets and where each setting comes from", "",
             "Generated by `python scripts/presets_doc.py` from the presets' `paper` and `sources` keys "
             "(`medcite config presets --long` prints the same). A quote is verbatim from the paper text in "
             "`../shared/papers/` (checked by tests/unit/test_preset_sources.py); where a paper is silent the "
             "row says so and names medcite's choice. `offline` is the value on a machine without the paper's "
             "models or server (`offline_settings`).", ""]
    for name in names:
        found = paper(name)
        table = rows(name)
        if not table and found is None:
            continue
        head = f"## `{name}`"
        lines += [head, ""]
        if found is not None:
            title = PAPERS.get(found.get("file", ""), ("", ""))[1]
            lines += [f"Paper {found.get('file')} ({title}), run {found.get('run', '-')}.", ""]
        else:
            lines += ["medcite's own preset (not a paper run).", ""]
        lines += ["| setting | value | source | offline |", "|---|---|---|---|"]
        for row in table:
            value = _short(row.value).replace("|", "\\|")
            source = row.source.text().replace("|", "\\|")
            lines.append(f"| `{row.source.path}` | `{value}` | {source} | {row.offline or ''} |")
        lines.append("")
    return "\n".join(lines)
