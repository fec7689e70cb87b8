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


UNUSED = "not used by this run"
#: keys whose values change how a run is executed, not what it computes; never a paper's claim
OPERATIONAL = frozenset({"batch_size", "device", "dtype", "threads", "heap_mb", "timeout_s", "max_retries",
                         "backoff_s", "concurrency", "cache", "cache_dir", "stream", "api_key_env", "base_url",
                         "chunk_size", "label", "uri", "token_env"})
#: the source of an :data:`OPERATIONAL` setting (or a backend's ``runtime_fields``) that a preset leaves unsaid
RUNTIME_CHOICE = ("how the run executes (batch size, device, threads, timeouts, caches, addresses), not what it "
                  "computes; medcite's defaults unless the preset sets it")
#: (key, value) pairs that claim nothing: a branch's fusion weight of 1 is the unweighted fusion
NEUTRAL = frozenset({("weight", 1.0)})
#: keys that name what a quoted or chosen config is (its backend, the index it searches, the LLM of ``llms`` it calls,
#: its label): documented by the source of the config that holds them
STRUCTURAL = frozenset({"backend", "index", "label", "llm"})
#: leaf pattern -> (value, what it defers to): a value that defers to another setting with its own source
DEFERS: dict[str, tuple[object, str]] = {
    "retrieve.branches.*.k": (None, "the branch searches retrieve.k documents per query (its own source)"),
    "retrieve.branches.*.queries": (None, "the branch searches every query of retrieve.queries (its own source)"),
    # MedCPT's offline stand-ins, unset: the MedCPT models themselves (query/article/cross_model)
    **{f"{where}.{key}": (None, "the MedCPT models (query_model, article_model, cross_model: their own sources)")
       for where in ("rerank", "rerank.stages.*") for key in ("encoder", "cross")},
    **{f"{where}.{key}": (None, f"the model's own {what} (its configuration), as the model's source names it")
       for where in ("indexes.*.encoder", "bioasq.encoder", "qa.encoder", "rerank.model", "rerank.members.*.model")
       for key, what in (("normalize", "normalisation"), ("query_max_length", "length limit"),
                         ("doc_max_length", "length limit"))},
}


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


def task(preset: str) -> str:
    """The task of the published run a preset reproduces (the ``task`` of its ``paper`` key: ``task-a``,
    ``task-b`` or ``bioasq``, :mod:`.reads`)."""
    from .reads import TASKS

    found = paper(preset)
    if found is None:
        raise ConfigError(f"preset {preset!r} reproduces no published run (it has no 'paper' key)")
    kind = found.get("task")
    if kind not in TASKS:
        raise ConfigError(f"preset {preset!r}: paper.task is {kind!r}",
                          hint=f"name the task the run was submitted to: one of {', '.join(TASKS)}")
    return str(kind)


@dataclass(frozen=True)
class Resolved:
    """One resolved setting (a leaf of the settings tree) of a paper preset: its value, its source, and the path
    of the source that documents it (itself, a config that holds it, or '' for a source worked out here)."""

    path: str
    value: Any
    source: Source
    by: str


def _matches(pattern: str, path: str) -> bool:
    want, parts = pattern.split("."), path.split(".")
    return len(want) == len(parts) and all(w in ("*", p) for w, p in zip(want, parts, strict=True))


def _is_model(parts: list[str]) -> bool:
    return parts[-1] == "model" or parts[-1].endswith("_model")


def _neutral(key: str, value: Any) -> bool:
    return not isinstance(value, (list, dict)) and (key, value) in NEUTRAL


def covers(source: Source, ancestor: str, path: str, value: Any) -> bool:
    """Whether the source of the config at ``ancestor`` documents the leaf ``path`` below it: the leaf names what
    the config is (:data:`STRUCTURAL`), claims nothing (:data:`NEUTRAL`, :data:`DEFERS`), or is a number or a
    model name under a quote (which :mod:`.quote_meaning` checks is in the quote). Any other leaf -- a flag, a
    prompt, a prefix, a number under a choice -- needs its own source."""
    parts = path.split(".")
    key = parts[-1]
    if key in STRUCTURAL or _neutral(key, value) or _defers(path, value) is not None:
        return True
    if _matches("retrieve.branches.*.queries", path):
        return True  # the query stages a branch searches: what the branch is
    if not source.from_paper:
        return False
    items = value if isinstance(value, list) and value else [value]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        return True
    return all(isinstance(v, str) for v in items) and _is_model(parts)


def runtime_setting(settings: Settings, path: str) -> bool:
    """Whether the leaf is an :data:`OPERATIONAL` key or one of its backend config's ``runtime_fields``."""
    from pydantic import BaseModel

    parts = path.split(".")
    if parts[-1] in OPERATIONAL or (parts[-1].isdigit() and len(parts) > 1 and parts[-2] in OPERATIONAL):
        return True
    node: Any = settings
    for part in parts[:-1]:
        if isinstance(node, BaseModel):
            node = getattr(node, part, None)
        elif isinstance(node, (list, tuple)) and part.isdigit():
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return False
    return parts[-1] in getattr(type(node), "runtime_fields", frozenset())


def _defers(path: str, value: Any) -> str | None:
    """What a leaf whose value defers to another setting (with a source of its own) defers to, or None."""
    parts = path.split(".")
    if parts[-1] == "llm" and value is None:
        return "the default LLM `llm`, whose settings have their own sources"
    for pattern, (default, text) in DEFERS.items():
        if value == default and _matches(pattern, path):
            return text
    return None


def resolved(preset: str, settings: Settings | None = None) -> tuple[list[Resolved], list[str], set[str]]:
    """Every resolved setting of a paper preset with its one source; the problems (a setting the run reads that
    no source documents); and the paths of the sources whose settings the run reads.

    A leaf's source is, in order: the run does not read it (:func:`.reads.unread`: "not used by this run", even
    where a source of a preset it extends documents it); a source at its own path; the source of a config above
    it that :func:`covers` it; for a value that defers to another setting or a setting of how the run executes, a
    source worked out here. ``settings`` (default: the preset's) lets a test add a setting."""
    from .reads import leaves, unread

    settings = settings or load_settings(preset)
    tree = settings.model_dump(mode="json")
    skipped = unread(settings, task(preset))
    found = sources(preset)
    out: list[Resolved] = []
    problems: list[str] = []
    used: set[str] = set()
    for path, value in leaves(tree):
        if path in skipped:
            out.append(Resolved(path, value, Source(path, unused=skipped[path]), ""))
            continue
        owners = [p for p in found if p == path or path.startswith(p + ".")]
        used.update(owners)
        own = found.get(path)
        above = next((p for p in sorted(owners, key=len, reverse=True) if covers(found[p], p, path, value)), None)
        defers = _defers(path, value)
        if own is not None:
            out.append(Resolved(path, value, own, path))
        elif above is not None:
            out.append(Resolved(path, value, found[above], above))
        elif defers is not None:
            out.append(Resolved(path, value, Source(path, choice=defers), ""))
        elif runtime_setting(settings, path):
            out.append(Resolved(path, value, Source(path, choice=RUNTIME_CHOICE), ""))
        else:
            problems.append(f"{preset}: {path} = {json.dumps(value)} has no source: quote the paper, or say "
                            "'the paper does not say' and medcite's choice")
    return out, problems, used


def declared_by(preset: str, path: str) -> str:
    """The preset of ``preset``'s ``extends`` chain whose own file declares the source of ``path``."""
    name = preset
    while path not in (preset_json(name).get("sources") or {}):
        parent = preset_json(name).get("extends")
        if not isinstance(parent, str):
            raise KeyError(path)
        name = parent
    return name


def dead_sources(names: list[str]) -> list[str]:
    """Sources that no paper preset among ``names`` (which has them, its own or inherited) reads a setting of."""
    declared: dict[tuple[str, str], bool] = {}
    for name in names:
        if paper(name) is None:
            continue
        _, _, used = resolved(name)
        for path in sources(name):
            key = (declared_by(name, path), path)
            declared[key] = declared.get(key, False) or path in used
    return [f"{origin}: sources[{path!r}] documents a setting that no paper preset having it reads: remove it"
            for (origin, path), read in sorted(declared.items()) if not read and not _sets(origin, path)]


def _sets(preset: str, path: str) -> bool:
    """Whether the preset's own file sets the setting at ``path`` (its source then says why it is set, even where
    the run does not read it: a switch that turns a stage off)."""
    from ..config import NOTE_KEYS
    from .reads import leaves

    data = {k: v for k, v in preset_json(preset).items() if k not in (*NOTE_KEYS, "extends")}
    return any(p == path or p.startswith(path + ".") or path.startswith(p + ".") for p, _ in leaves(data))


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
